// Writes build-info.json into each output folder given (dist, build), beside the compiled code, for
// src/config/build-info.ts: the commit this build came from. PLANT_STORE_COMMIT when set (an image build
// has no .git: it passes it as a build argument), else this checkout's `git rev-parse HEAD`, with
// `-dirty` when tracked files differ from that commit (as `git describe --dirty`), else `unknown`.
// `--print` prints the commit instead (.ci/container-test labels the image with it).
// Run from the package root by every script that compiles, after tsc.
import { spawnSync } from 'node:child_process'
import { realpathSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'

// Hex object names: SHA-1 (40) or SHA-256 (64) repositories, abbreviated from 7.
const COMMIT = /^[0-9a-f]{7,64}(-dirty)?$/

/** git's answer, or undefined when git is missing or fails (no repository, say). */
function git (...args) {
  const run = spawnSync('git', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] })
  return run.status === 0 ? run.stdout.trim() : undefined
}

function commit () {
  const given = process.env.PLANT_STORE_COMMIT ?? ''
  if (given !== '') {
    if (!COMMIT.test(given)) {
      process.stderr.write(`build-info: PLANT_STORE_COMMIT must be a commit's hex name, not ${JSON.stringify(given)}\n`)
      process.exit(1)
    }
    return given
  }
  // Only this package's own repository: a checkout copied into another project's must not claim its commit.
  const [top, head] = git('rev-parse', '--show-toplevel', 'HEAD')?.split('\n') ?? []
  if (top === undefined || head === undefined || !COMMIT.test(head) || realpathSync(top) !== realpathSync('.')) {
    return 'unknown'
  }
  const changed = git('status', '--porcelain', '--untracked-files=no')
  return changed === '' ? head : `${head}-dirty`
}

const args = process.argv.slice(2)
const found = commit()
if (args.includes('--print')) {
  process.stdout.write(`${found}\n`)
} else {
  for (const folder of args) writeFileSync(join(folder, 'build-info.json'), `${JSON.stringify({ commit: found })}\n`)
}
