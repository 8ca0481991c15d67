import assert from 'node:assert/strict'
import { execFile, spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test, type TestContext } from 'node:test'
import { promisify } from 'node:util'
import { BUILD_INFO } from '../../../src/config/build-info.js'
import { checkoutCommit, git, PACKAGE_VERSION, REPO } from '../../helpers/build-info.js'
import { SERVER_JS } from '../../helpers/server-process.js'

const SCRIPT = join(REPO, 'scripts/build-info.mjs')

/** `plant-store --version` of one build, run as the package's bin is. */
async function versionOf (serverJs: string): Promise<string> {
  // Without coverage: dist/ is not the build/ that c8 measures.
  const { stdout, stderr } = await promisify(execFile)(process.execPath, [serverJs, '--version'], {
    env: { PATH: process.env.PATH, NODE_V8_COVERAGE: '' }
  })
  assert.equal(stderr, '')
  return stdout
}

test('plant-store --version prints the package version and the commit dist/ and build/ were built from', async () => {
  const expected = `plant-store ${PACKAGE_VERSION} (commit ${checkoutCommit()})\n`
  // dist/ is what ships (the package's bin, the image); build/ is what the other tests run.
  assert.equal(await versionOf(join(REPO, 'dist/src/main/server.js')), expected, 'dist/ is stale? npm run build')
  assert.equal(await versionOf(SERVER_JS), expected, 'build/ is stale? npm run build:test')
  assert.deepEqual(BUILD_INFO, { version: PACKAGE_VERSION, commit: checkoutCommit() })
})

/** A folder removed when the test ends. */
function tempDir (t: TestContext): string {
  const dir = mkdtempSync(join(tmpdir(), 'plant-store-build-info-'))
  t.after(() => { rmSync(dir, { recursive: true, force: true }) })
  return dir
}

/** scripts/build-info.mjs run in `cwd` for the folder `out`: its exit code, stderr, and the commit it wrote. */
function runScript (cwd: string, out: string,
  commit?: string): { status: number | null, stderr: string, written?: string } {
  const env = { PATH: process.env.PATH, HOME: cwd, ...(commit !== undefined && { PLANT_STORE_COMMIT: commit }) }
  const run = spawnSync(process.execPath, [SCRIPT, out], { cwd, env, encoding: 'utf8' })
  const file = join(out, 'build-info.json')
  return {
    status: run.status,
    stderr: run.stderr,
    ...(existsSync(file) && { written: (JSON.parse(readFileSync(file, 'utf8')) as { commit: string }).commit })
  }
}

test('the build records PLANT_STORE_COMMIT when set (an image build has no .git), and refuses ' +
  'one that is no commit', (t) => {
  const dir = tempDir(t)
  const commit = '0123456789abcdef0123456789abcdef01234567'
  assert.deepEqual(runScript(dir, dir, commit), { status: 0, stderr: '', written: commit })
  rmSync(join(dir, 'build-info.json'))
  assert.deepEqual(runScript(dir, dir, `${commit}-dirty`), { status: 0, stderr: '', written: `${commit}-dirty` })
  rmSync(join(dir, 'build-info.json'))
  assert.deepEqual(runScript(dir, dir, 'main; rm -rf /'), {
    status: 1,
    stderr: 'build-info: PLANT_STORE_COMMIT must be a commit\'s hex name, not "main; rm -rf /"\n'
  })
  // An empty value (a Docker build argument not given) is unset: no repository here, so unknown.
  assert.deepEqual(runScript(dir, dir, ''), { status: 0, stderr: '', written: 'unknown' })
  // --print, for .ci/container-test's image labels: the same answer on stdout, nothing written.
  const print = spawnSync(process.execPath, [SCRIPT, '--print'], {
    cwd: dir,
    env: { PATH: process.env.PATH, PLANT_STORE_COMMIT: commit },
    encoding: 'utf8'
  })
  assert.equal(print.stdout, `${commit}\n`)
})

test('from git: HEAD, marked -dirty when a tracked file changed; unknown in a folder of another repository', (t) => {
  if (git(REPO, '--version') === undefined) {
    t.diagnostic('git not installed: only the checks without a repository ran')
    return
  }
  const repo = tempDir(t)
  const inRepo = (...args: string[]): string => {
    const answer = git(repo, '-c', 'user.name=t', '-c', 'user.email=t@example.com', '-c', 'commit.gpgsign=false',
      ...args)
    assert.ok(answer !== undefined, `git ${args.join(' ')}`)
    return answer
  }
  inRepo('init', '-q')
  writeFileSync(join(repo, 'tracked.txt'), 'one\n')
  inRepo('add', 'tracked.txt')
  inRepo('commit', '-q', '-m', 'one')
  const head = inRepo('rev-parse', 'HEAD')
  assert.match(head, /^[0-9a-f]{40}$/)
  const out = join(repo, 'out')
  mkdirSync(out)
  // The output folder itself is untracked, as dist/ is ignored: untracked files leave it clean.
  assert.equal(runScript(repo, out).written, head)
  writeFileSync(join(repo, 'tracked.txt'), 'two\n')
  assert.equal(runScript(repo, out).written, `${head}-dirty`)
  // PLANT_STORE_COMMIT wins over the checkout.
  assert.equal(runScript(repo, out, 'abcdef0').written, 'abcdef0')
  // A copy of the package inside another project's repository does not take that project's commit.
  const nested = join(repo, 'vendor')
  mkdirSync(nested)
  assert.equal(runScript(nested, nested).written, 'unknown')
})
