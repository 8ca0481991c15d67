import assert from 'node:assert/strict'
import { test } from 'node:test'
import { cleanupStack } from './cleanup.js'
import { startCluster } from './pg-cluster.js'
import { TEST_DATABASE_URL } from './postgres.js'

// The throw-away clusters the restart and failover tests run on.
if (TEST_DATABASE_URL !== undefined) {
  test('a cluster of its own: restarted, and a synchronous standby promoted keeps every committed row', async (t) => {
    const cleanup = cleanupStack(t)
    const primary = await startCluster(cleanup)
    await primary.query('CREATE TABLE kept (n integer)')
    await primary.restart()
    const standby = await primary.standby()
    await primary.query("ALTER SYSTEM SET synchronous_standby_names = '*'")
    await primary.query('SELECT pg_reload_conf()')
    await primary.query('INSERT INTO kept VALUES (1)')
    assert.deepEqual(await primary.query('SELECT sync_state FROM pg_stat_replication'), [{ sync_state: 'sync' }])
    await primary.stop('immediate')
    await standby.promote()
    assert.deepEqual(await standby.query('SELECT n FROM kept'), [{ n: 1 }])
    await standby.query('INSERT INTO kept VALUES (2)')
  })
}
