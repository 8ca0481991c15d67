import { spawn } from 'node:child_process'
import { startPgbouncer } from '../test/helpers/pgbouncer.js'

// `node build/scripts/pooled-tests.js <test files…>` (.ci/run): the given test files again, with
// TEST_DATABASE_URL pointing at a PgBouncer in pool_mode = transaction in front of that server,
// as production runs behind one. TEST_DATABASE_DIRECT_URL keeps the server itself for what needs a
// session (LISTEN). Exits with the tests' status.
const backend = process.env.TEST_DATABASE_URL
if (backend === undefined) {
  process.stderr.write('pooled-tests: TEST_DATABASE_URL is not set\n')
  process.exit(2)
}
// Only the number of clients is raised (the test files open many pools); the pooling is the stock one.
const pooler = await startPgbouncer({ backend, poolMode: 'transaction', settings: { max_client_conn: 2000 } })
const started = Date.now()
const code = await new Promise<number>((resolve) => {
  const child = spawn(process.execPath, ['--test', ...process.argv.slice(2)], {
    stdio: 'inherit',
    env: { ...process.env, TEST_DATABASE_URL: pooler.url(), TEST_DATABASE_DIRECT_URL: backend }
  })
  child.once('exit', (exitCode, signal) => { resolve(exitCode ?? (signal === null ? 1 : 128)) })
})
await pooler.stop()
process.stdout.write(
  `pooled-tests: ${process.argv.length - 2} files through pgbouncer ` +
    `(transaction mode) in ${Math.round((Date.now() - started) / 1000)} s\n`)
process.exit(code)
