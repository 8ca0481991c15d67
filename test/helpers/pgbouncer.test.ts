import assert from 'node:assert/strict'
import { test } from 'node:test'
import pg from 'pg'
import { cleanupStack } from './cleanup.js'
import { startPgbouncer } from './pgbouncer.js'
import { TEST_DATABASE_URL } from './postgres.js'
import { startTcpProxy } from './tcp-proxy.js'

async function query (url: string, text: string): Promise<unknown[]> {
  const client = new pg.Client({ connectionString: url })
  client.on('error', () => {})
  await client.connect()
  try {
    return (await client.query(text)).rows
  } finally {
    await client.end()
  }
}

if (TEST_DATABASE_URL !== undefined) {
  const databaseUrl: string = TEST_DATABASE_URL
  const backend = new URL(databaseUrl)

  test('startPgbouncer: a transaction pooler in front of the server, refusing what a ' +
    'stock pgbouncer refuses', async (t) => {
    const after = cleanupStack(t)
    const pooler = await startPgbouncer({ backend: databaseUrl, poolMode: 'transaction' }, after)
    assert.notEqual(pooler.port, Number(backend.port || 5432))
    assert.deepEqual(await query(pooler.url(), 'SELECT 1 AS one'), [{ one: 1 }])
    const modes = await query(pooler.url(new URL('/pgbouncer', databaseUrl).toString()),
      'SHOW CONFIG') as Array<{ key: string, value: string }>
    assert.equal(modes.find((row) => row.key === 'pool_mode')?.value, 'transaction')
    const refused = new URL(pooler.url())
    refused.searchParams.set('options', '-c statement_timeout=5000')
    await assert.rejects(query(refused.toString(), 'SELECT 1'), { message: 'unsupported startup parameter: options' })
  })

  test('startPgbouncer: repoint sends new transactions to another server; stop ends the process', async (t) => {
    const after = cleanupStack(t)
    const proxy = await startTcpProxy(Number(backend.port || 5432), backend.hostname)
    after.after(proxy.close)
    // A client waiting for a server that cannot be reached is refused after 5 s, not the default 120 s,
    // and a failed login is retried after 1 s, not 15 s.
    const settings = { query_wait_timeout: 5, server_login_retry: 1 }
    const pooler = await startPgbouncer({ backend: databaseUrl, poolMode: 'transaction', settings }, after)
    assert.deepEqual(await query(pooler.url(), 'SELECT 1 AS one'), [{ one: 1 }])
    await pooler.repoint('127.0.0.1', proxy.port)
    await proxy.down()
    // The only way to the server now is the proxy, which is down: the pooler cannot log in.
    await assert.rejects(query(pooler.url(), 'SELECT 1'), { message: 'query_wait_timeout' })
    await proxy.up()
    assert.deepEqual(await query(pooler.url(), 'SELECT 1 AS one'), [{ one: 1 }])
    await pooler.stop()
    await assert.rejects(query(pooler.url(), 'SELECT 1'), { code: 'ECONNREFUSED' })
  })
}
