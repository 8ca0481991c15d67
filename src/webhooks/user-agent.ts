import { readFileSync } from 'node:fs'

/**
 * plant-store's version, from its package.json: the nearest one above this module (src/webhooks
 * runs from src/, dist/src/ or build/src/, so it is two or three folders up).
 */
function packageVersion (): string {
  for (const up of ['../../package.json', '../../../package.json']) {
    try {
      const manifest = JSON.parse(readFileSync(new URL(up, import.meta.url), 'utf8')) as {
        name?: unknown
        version?: unknown
      }
      if (manifest.name === 'plant-store' && typeof manifest.version === 'string') return manifest.version
    } catch {
      // Not there: look one folder further up.
    }
  }
  return '0.0.0'
}

/** The `user-agent` of every delivery: receivers can tell (and allow-list) where it comes from. */
export const USER_AGENT = `plant-store/${packageVersion()}`
