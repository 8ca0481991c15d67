import assert from 'node:assert/strict'
import { writeFileSync } from 'node:fs'
import { Server, type AddressInfo } from 'node:net'
import { test } from 'node:test'
import { buildApp } from '../../../src/main/app.js'
import { loadConfig } from '../../../src/config/load-config.js'
import { TOKEN } from '../../helpers/app.js'
import { tempDatabaseFile } from '../../helpers/cleanup.js'
import { freePort, listenAndClose } from '../../helpers/ports.js'

/** Closes what still listens on `port` in this process, so that a leak fails the test rather than hanging it. */
function closeLeftListener (port: number): void {
  const handles = (process as unknown as { _getActiveHandles: () => unknown[] })._getActiveHandles()
  for (const handle of handles) {
    if (handle instanceof Server && (handle.address() as AddressInfo | null)?.port === port) handle.close()
  }
}

test('a build that fails closes what it had started: the metrics port is free again', async (t) => {
  const file = tempDatabaseFile(t, 'plant-store-app-')
  writeFileSync(file, 'not a database, '.repeat(64))
  const port = await freePort()
  const config = loadConfig({
    DATABASE_URL: file, API_TOKENS: TOKEN, LOG_LEVEL: 'silent', METRICS_PORT: String(port), METRICS_HOST: '127.0.0.1'
  })
  await assert.rejects(buildApp(config), { message: 'the file is not a SQLite database' })

  try {
    await listenAndClose(port)
  } catch (err) {
    closeLeftListener(port)
    throw err
  }
})
