import assert from 'node:assert/strict'
import { setTimeout as sleep } from 'node:timers/promises'
import { test } from 'node:test'
import { buildApp } from '../../src/main/app.js'
import { runCheck } from '../../src/main/commands.js'
import { StoreOpenError } from '../../src/lib/errors.js'
import { loadConfig } from '../../src/config/load-config.js'
import { TOKEN } from '../helpers/app.js'
import { startPgbouncer } from '../helpers/pgbouncer.js'
import { directUrl, scratchDatabaseUrl, TEST_DATABASE_URL } from '../helpers/postgres.js'
import { expectStartFailure, fatalMessage } from '../helpers/server-process.js'
import { startTcpProxy } from '../helpers/tcp-proxy.js'

/** `url` pointed at 127.0.0.1:`port` (the proxy) instead. */
function through (url: string, port: number): string {
  const parsed = new URL(url)
  parsed.hostname = '127.0.0.1'
  parsed.port = String(port)
  return parsed.toString()
}

interface Line { msg: string, attempt?: number, delayMs?: number, err?: { message?: string } }

if (TEST_DATABASE_URL !== undefined) {
  const databaseUrl: string = TEST_DATABASE_URL
  const target = new URL(databaseUrl)

  test('PostgreSQL that comes up after the instance: start-up retries with ' +
    'backoff, then serves', { timeout: 60_000 }, async (t) => {
    const proxy = await startTcpProxy(Number(target.port || 5432), target.hostname)
    t.after(proxy.close)
    await proxy.down()
    const { url } = scratchDatabaseUrl(t)
    let log = ''
    const starting = buildApp(loadConfig(
      { DATABASE_URL: through(url, proxy.port), API_TOKENS: TOKEN, LOG_LEVEL: 'warn', PG_STARTUP_TIMEOUT_MS: '30000' }),
    {
      logStream: { write: (line: string) => { log += line } }
    })
    const lines = (): Line[] => log.split('\n').filter((line) => line !== '').map((line) => JSON.parse(line) as Line)
    // Let it fail a few times, then bring the database "up".
    for (let waited = 0; lines().length < 3 && waited < 20_000; waited += 50) await sleep(50)
    await proxy.up()
    const app = await starting
    t.after(() => app.close())

    const res = await app.inject({ url: '/health/ready' })
    assert.equal(res.statusCode, 200)
    const retries = lines().filter((line) => line.msg === 'the database cannot be reached yet; retrying')
    assert.ok(retries.length >= 3)
    assert.deepEqual(retries.slice(0, 3).map((line) => [line.attempt, line.delayMs]), [[1, 200], [2, 400], [3, 800]])
    assert.match(retries[0]?.err?.message ?? '', /ECONNREFUSED/)
  })

  test('PostgreSQL that stays away: the start gives up after ' +
    'PG_STARTUP_TIMEOUT_MS and says so', { timeout: 30_000 }, async (t) => {
    const proxy = await startTcpProxy(Number(target.port || 5432), target.hostname)
    t.after(proxy.close)
    await proxy.down()
    const started = Date.now()
    await assert.rejects(
      buildApp(
        loadConfig(
          {
            DATABASE_URL: through(databaseUrl, proxy.port),
            API_TOKENS: TOKEN,
            LOG_LEVEL: 'silent',
            PG_STARTUP_TIMEOUT_MS: '1000'
          })),
      (err: unknown) => {
        assert.ok(err instanceof StoreOpenError)
        assert.match(err.message,
          new RegExp(/^the database could not be reached within PG_STARTUP_TIMEOUT_MS \(1000 ms, \d+ /.source +
            /attempts\): connect ECONNREFUSED 127\.0\.0\.1:\d+; nothing listens there: start PostgreSQL \(or /.source +
            /its pooler\), or correct the host and port in DATABASE_URL$/.source))
        return true
      })
    assert.ok(Date.now() - started >= 1000)
  })

  test('the real server on a PostgreSQL that stays away: logs each retry, then exits 1 saying ' +
    'why (docs/scaling.md)', { timeout: 30_000 }, async (t) => {
    const proxy = await startTcpProxy(Number(target.port || 5432), target.hostname)
    t.after(proxy.close)
    await proxy.down()
    const { code, stdout, stderr } = await expectStartFailure({
      // Long enough that a busy machine's slow attempts do not cut the third delay (800 ms) short at the deadline.
      env: { DATABASE_URL: through(databaseUrl, proxy.port), LOG_LEVEL: 'warn', PG_STARTUP_TIMEOUT_MS: '3000' }
    })
    assert.equal(code, 1)
    const retries = stdout.split('\n').filter((line) => line.startsWith('{')).map((line) => JSON.parse(line) as Line)
      .filter((line) => line.msg === 'the database cannot be reached yet; retrying')
    assert.deepEqual(retries.slice(0, 3).map((line) => line.delayMs), [200, 400, 800])
    assert.match(fatalMessage(stderr),
      new RegExp(/^cannot use the PostgreSQL database: the database could not be reached within /.source +
        /PG_STARTUP_TIMEOUT_MS \(3000 ms, \d+ attempts\): connect ECONNREFUSED 127\.0\.0\.1:\d+; nothing /.source +
        /listens there: start PostgreSQL \(or its pooler\), or correct the host and port in DATABASE_URL; /.source +
        /nothing was changed$/.source))
  })

  test('a failure that waiting cannot fix (no such database) is not ' +
    'retried, and says what to do', { timeout: 30_000 }, async () => {
    const missing = new URL(databaseUrl)
    missing.pathname = '/plant_store_no_such_database'
    let log = ''
    await assert.rejects(
      buildApp(loadConfig(
        { DATABASE_URL: missing.toString(), API_TOKENS: TOKEN, LOG_LEVEL: 'warn', PG_STARTUP_TIMEOUT_MS: '30000' }), {
        logStream: { write: (line: string) => { log += line } }
      }),
      (err: unknown) => {
        assert.ok(err instanceof StoreOpenError)
        assert.equal(err.message, 'the server refused: database "plant_store_no_such_database" ' +
          'does not exist (3D000); ' +
          'create that database (createdb) or correct its name in DATABASE_URL')
        return true
      })
    assert.doesNotMatch(log, /cannot be reached yet/)
  })

  test('plant-store check on PostgreSQL: 0 when it answers, 1 with the reason (and ' +
    'no password) when not', { timeout: 30_000 }, async (t) => {
    const { url, schema } = scratchDatabaseUrl(t)
    const named = new URL(url)
    let out = ''
    let err = ''
    const output = {
      out: (text: string) => { out += text },
      err: (text: string) => { err += text },
      data: process.stdout
    }
    assert.equal(await runCheck({ DATABASE_URL: url, API_TOKENS: TOKEN }, output), 0)
    assert.equal(out, 'plant-store check: configuration ok\n' +
      'plant-store check: the ' +
        `PostgreSQL database ${named.protocol}//${named.host}${named.pathname} (schema ${schema}) answers and ` +
          'its schema is usable\n')

    // Once migrated, still fine.
    const app = await buildApp(loadConfig({ DATABASE_URL: url, API_TOKENS: TOKEN, LOG_LEVEL: 'silent' }))
    await app.close()
    out = ''
    assert.equal(await runCheck({ DATABASE_URL: url, API_TOKENS: TOKEN }, output), 0)

    const proxy = await startTcpProxy(Number(target.port || 5432), target.hostname)
    t.after(proxy.close)
    await proxy.down()
    const unreachable = new URL(through(databaseUrl, proxy.port))
    unreachable.password = 's3cret-pw'
    out = ''
    assert.equal(
      await runCheck({ DATABASE_URL: unreachable.toString(), API_TOKENS: TOKEN, PG_CONNECT_TIMEOUT_MS: '1000' },
        output), 1)
    assert.match(err,
      new RegExp(/^plant-store check: the PostgreSQL database /.source +
        /postgres(ql)?:\/\/127\.0\.0\.1:\d+\/\w+(?: \(schema \w+\))?: it does not answer \(ECONNREFUSED: /.source +
        /connect ECONNREFUSED 127\.0\.0\.1:\d+\)\nplant-store check: failed: PostgreSQL\n$/.source))
    assert.doesNotMatch(err, /s3cret-pw/)
  })

  /** The real server's exit: its stderr line, and its log's lines (JSON on stdout), which must agree. */
  async function startFailureOf (env: Record<string, string>): Promise<{
    stderr: string,
    logged: Array<{ msg: string, err?: { message?: string, code?: string } }>,
    all: string
  }> {
    const {
      code, stdout,
      stderr
    } = await expectStartFailure({ env: { LOG_LEVEL: 'warn', PG_STARTUP_TIMEOUT_MS: '20000', ...env } })
    assert.equal(code, 1)
    const logged = stdout.split('\n').filter((line) => line.startsWith('{')).map(
      (line) => JSON.parse(line) as { msg: string })
    return { stderr, logged, all: stdout + stderr }
  }

  test('the real server behind a pooler that refuses a startup parameter: exits at once with the pooler\'s ' +
    'reason and what to do', { timeout: 60_000 }, async (t) => {
    const pooler = await startPgbouncer({ backend: directUrl(databaseUrl), poolMode: 'transaction' }, t)
    const url = new URL(pooler.url(databaseUrl))
    url.searchParams.set('options', '-c search_path=elsewhere')
    url.password = 's3cret-pw'
    const reason = 'the server refused: unsupported startup parameter: options (08P01); take that parameter ' +
      'out of DATABASE_URL: ' +
      'a transaction pooler (PgBouncer) accepts almost none (see docs/scaling.md)'
    const { stderr, logged, all } = await startFailureOf({ DATABASE_URL: url.toString() })
    assert.equal(fatalMessage(stderr), `cannot use the PostgreSQL database: ${reason}; nothing was changed`)
    // Not waited for: no retry was logged, only the failure.
    assert.deepEqual(logged.map((line) => [line.msg, line.err?.message, line.err?.code]),
      [['cannot use the PostgreSQL database', reason, '08P01']])
    assert.doesNotMatch(all, /s3cret-pw/)
  })

  test('the real server with a role that does not exist: exits with PostgreSQL\'s ' +
    'reason, never the password', { timeout: 60_000 }, async () => {
    const url = new URL(databaseUrl)
    url.username = 'plant_store_no_such_role'
    url.password = 's3cret-pw'
    const { stderr, logged, all } = await startFailureOf({ DATABASE_URL: url.toString() })
    assert.match(fatalMessage(stderr), new RegExp(
      /^cannot use the PostgreSQL database: the server refused: /.source + '(' + [
        /role "plant_store_no_such_role" does not exist \(28000\)/.source,
        /password authentication failed for user "plant_store_no_such_role" \(28P01\)/.source
      ].join('|') + ')' + /; check the user name/.source))
    assert.deepEqual(logged.map((line) => line.msg), ['cannot use the PostgreSQL database'])
    assert.doesNotMatch(all, /s3cret-pw/)
  })

  test('the real server on a database that does not exist: exits with PostgreSQL\'s ' +
    'reason and what to do', { timeout: 60_000 }, async () => {
    const url = new URL(databaseUrl)
    url.pathname = '/plant_store_no_such_database'
    const { stderr } = await startFailureOf({ DATABASE_URL: url.toString() })
    assert.equal(fatalMessage(stderr), 'cannot use the PostgreSQL database: the server refused: database ' +
      '"plant_store_no_such_database" does not exist (3D000); ' +
      'create that database (createdb) or correct its name in DATABASE_URL; nothing was changed')
  })
}
