import { spawnSync } from 'node:child_process'
import { readFileSync, realpathSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

/** The repository root, seen from build/test/helpers/. */
export const REPO = fileURLToPath(new URL('../../..', import.meta.url))

/** package.json's version, read here on its own. */
export const PACKAGE_VERSION = (JSON.parse(readFileSync(new URL('package.json', `file://${REPO}/`), 'utf8')) as {
  version: string
}).version

/** git's answer in `cwd`, or undefined when git is missing or fails. */
export function git (cwd: string, ...args: string[]): string | undefined {
  const run = spawnSync('git', args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] })
  return run.status === 0 ? run.stdout.trim() : undefined
}

/**
 * What a build of this checkout must record as its commit, asked of git here: HEAD, `-dirty` when a
 * tracked file differs from it, or `unknown` outside a git checkout of its own.
 */
export function checkoutCommit (): string {
  const [top, head] = git(REPO, 'rev-parse', '--show-toplevel', 'HEAD')?.split('\n') ?? []
  if (top === undefined || head === undefined || realpathSync(top) !== realpathSync(REPO)) return 'unknown'
  return git(REPO, 'status', '--porcelain', '--untracked-files=no') === '' ? head : `${head}-dirty`
}
