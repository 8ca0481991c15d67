import { execFileSync } from 'node:child_process'
import { existsSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

/** The repository's root: this helper runs compiled, from build/test/helpers/. */
export const ROOT = fileURLToPath(new URL('../../../', import.meta.url))

/** The one place the previous release is named: the next release bumps its commit. */
export const PREVIOUS_RELEASE_PIN = join(ROOT, 'test', 'upgrade', 'previous-release.json')

/** This tree's server as it ships (`npm run build`): what an upgrade deploys. */
export const CURRENT_SERVER_JS = join(ROOT, 'dist', 'src', 'main', 'server.js')

export interface PreviousRelease {
  commit: string
  /** Its tree, built: under build/previous-release/<commit>, never committed. */
  dir: string
  /** Its shipped server, as its package.json's bin names it: `node <serverJs>` is how it runs. */
  serverJs: string
  /** How its dependencies came to be: `npm ci`, or this tree's when both lockfiles are the same. */
  install: 'npm ci' | 'shared node_modules (same package-lock.json)'
  /** False when an earlier run had built it already. */
  built: boolean
}

/**
 * The pinned previous release, built from this repository's history as its own `npm run build`
 * makes it: `git archive` of the commit, its dependencies, its build. Kept by commit under
 * build/previous-release/ and reused once complete (a marker file is written last, so a run cut
 * short starts over). Synchronous on purpose: nothing else runs while it is made.
 */
export function previousRelease (): PreviousRelease {
  const { commit } = JSON.parse(readFileSync(PREVIOUS_RELEASE_PIN, 'utf8')) as { commit?: unknown }
  if (typeof commit !== 'string' || !/^[0-9a-f]{40}$/.test(commit)) {
    throw new Error(`${PREVIOUS_RELEASE_PIN}: "commit" must be a full 40-hex commit id, not ${JSON.stringify(commit)}`)
  }
  const dir = join(ROOT, 'build', 'previous-release', commit)
  const marker = join(dir, '.built')
  if (existsSync(marker)) {
    const install = readFileSync(marker, 'utf8').trim() as PreviousRelease['install']
    return { commit, dir, serverJs: serverOf(dir), install, built: false }
  }
  if (!hasCommit(commit)) {
    throw new Error(`the previous release ${commit} (${PREVIOUS_RELEASE_PIN}) is not in this clone's history: ` +
      'fetch it (git fetch --unshallow, or a clone with full history) or correct the pin')
  }
  rmSync(dir, { recursive: true, force: true })
  mkdirSync(dir, { recursive: true })
  const archive = `${dir}.tar`
  run('git', ['archive', '--format=tar', `--output=${archive}`, commit], ROOT)
  run('tar', ['-xf', archive, '-C', dir], ROOT)
  rmSync(archive)
  const install = installDependencies(dir)
  run('npm', ['run', 'build'], dir)
  const serverJs = serverOf(dir)
  if (!existsSync(serverJs)) throw new Error(`the previous release's build made no ${serverJs}`)
  writeFileSync(marker, `${install}\n`)
  return { commit, dir, serverJs, install, built: true }
}

/** The server a release ships (its bin), wherever that release kept it. */
function serverOf (dir: string): string {
  const { bin } = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { bin?: Record<string, string> }
  const server = bin?.['plant-store']
  if (server === undefined) throw new Error(`${join(dir, 'package.json')} names no plant-store bin`)
  return join(dir, server)
}

/**
 * With the same package-lock.json, `npm ci` would install the very tree this one has (and compile
 * better-sqlite3 again, minutes on a busy machine): that tree is linked instead. A lockfile that
 * differs gets its own install, from npm's cache where it can.
 */
function installDependencies (dir: string): PreviousRelease['install'] {
  const lockfile = (root: string): Buffer => readFileSync(join(root, 'package-lock.json'))
  const current = join(ROOT, 'node_modules')
  if (existsSync(current) && lockfile(dir).equals(lockfile(ROOT))) {
    symlinkSync(current, join(dir, 'node_modules'), 'dir')
    return 'shared node_modules (same package-lock.json)'
  }
  run('npm', ['ci', '--no-audit', '--no-fund', '--prefer-offline'], dir)
  return 'npm ci'
}

function hasCommit (commit: string): boolean {
  try {
    run('git', ['cat-file', '-e', `${commit}^{commit}`], ROOT)
    return true
  } catch {
    return false
  }
}

/**
 * Runs a command to its end; a failure throws with its output. Without the `npm_*` settings an
 * `npm run` around this test hands down: they name this tree (its prefix, its package), not the release's.
 */
function run (file: string, args: readonly string[], cwd: string): void {
  const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.toLowerCase().startsWith('npm_')))
  try {
    execFileSync(file, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'], maxBuffer: 64 * 1024 * 1024 })
  } catch (err) {
    const { stdout, stderr } = err as { stdout?: Buffer, stderr?: Buffer }
    throw new Error(`${file} ${args.join(' ')} (in ${cwd}) failed: ${(err as Error).message}\n` +
      `${stdout?.toString() ?? ''}${stderr?.toString() ?? ''}`)
  }
}
