import { readFileSync } from 'node:fs'

/** Which plant-store this is: what `--version`, the metrics and the traces report. */
interface BuildInfo {
  /** package.json's version. */
  version: string
  /** The git commit it was built from (`<hex>-dirty` from changed files), or `unknown`. */
  commit: string
}

/** A JSON object in a file relative to this module, or undefined when it is missing or not one. */
function readJson (path: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(readFileSync(new URL(path, import.meta.url), 'utf8'))
    return typeof value === 'object' && value !== null ? value as Record<string, unknown> : undefined
  } catch {
    return undefined
  }
}

const known = (value: unknown): string => typeof value === 'string' && value !== '' ? value : 'unknown'

/**
 * Read once. This module runs from dist/src/config/ (or build/src/config/): package.json is three folders up, and
 * build-info.json (scripts/build-info.mjs writes it after each compile) two.
 */
export const BUILD_INFO: BuildInfo = {
  version: known(readJson('../../../package.json')?.version),
  commit: known(readJson('../../build-info.json')?.commit)
}
