import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { gzipSync } from 'node:zlib'
import Database from 'better-sqlite3'
import type { FastifyInstance } from 'fastify'
import pg from 'pg'
import { parsePostgresUrl } from '../../../../src/store/postgres/connection.js'
import { AUTH } from '../../../helpers/app.js'
import { cleanupStack, tempDatabaseFile, type Cleanup } from '../../../helpers/cleanup.js'
import { apiTestDatabases } from '../../../helpers/databases.js'
import { createPlant } from '../../../helpers/plants.js'
import { scratchDatabaseUrl } from '../../../helpers/postgres.js'
import { startReceiver, type WebhookReceiver } from '../../../helpers/webhook-receiver.js'
import { buildWebhooksApp, createWebhook, deliveriesWhen, OTHER_AUTH } from '../../../helpers/webhooks.js'

// Receivers answer bytes PostgreSQL's text cannot hold (zero bytes) and bytes that are not UTF-8:
// every delivery still ends succeeded after one attempt, and both stores show the same answer.

const GZIP = gzipSync('{"ok":true}')
/**
 * What the API shows of an answer: its bytes decoded as UTF-8, a zero byte as U+FFFD like any byte that is not text.
 */
const shown = (bytes: Buffer): string => bytes.toString('utf8').replaceAll('\0', '\uFFFD')

const ANSWERS: Record<string, { status?: number, body: Buffer, headers?: Record<string, string>, shows: string }> = {
  '/zero': { body: Buffer.from('ok\0zero\0'), shows: 'ok\uFFFDzero\uFFFD' },
  '/gzip': { body: GZIP, headers: { 'content-encoding': 'gzip' }, shows: shown(GZIP) },
  '/ff': { body: Buffer.from([0xff, 0xfe, 0x6f, 0x6b, 0xff]), shows: '\uFFFD\uFFFDok\uFFFD' },
  '/healthy': { body: Buffer.from('{"ok":true}'), shows: '{"ok":true}' },
  '/poison': { body: Buffer.from('poison'), shows: 'poison' },
  '/poison-500': { status: 500, body: Buffer.from('poison'), shows: 'poison' }
}

function answerByPath (receiver: WebhookReceiver): void {
  receiver.respond((request, res) => {
    const answer = ANSWERS[request.url]
    if (answer === undefined) res.writeHead(404).end()
    else res.writeHead(answer.status ?? 200, answer.headers).end(answer.body)
  })
}

interface AttemptBody { statusCode?: number, error?: string, responseBody?: string }

/**
 * Waits until the subscription has `count` deliveries, all `status` after one attempt; answers each one's attempt log.
 */
async function endedOnce (
  app: FastifyInstance, id: number, count: number, headers: Record<string, string>, status = 'succeeded'
): Promise<AttemptBody[][]> {
  const list = await deliveriesWhen(app, id, (all) => all.length === count && all.every((d) => d.status === status),
    headers)
  assert.deepEqual(list.map((d) => d.attempts), Array(count).fill(1))
  return await Promise.all(list.map(async (delivery) => {
    const res = await app.inject({ url: `/webhooks/${id}/deliveries/${delivery.id}`, headers })
    assert.equal(res.statusCode, 200, res.body)
    return res.json<{ attemptLog: Array<AttemptBody & { at: string, durationMs: number }> }>().attemptLog
      .map(({ at: _at, durationMs: _duration, ...attempt }) => attempt)
  }))
}

/** Each path got `count` requests, each a different delivery (webhook-id): nothing was sent twice. */
function sentOnce (receiver: WebhookReceiver, path: string, count: number): void {
  const ids = receiver.requests.filter((request) => request.url === path).map(
    (request) => request.headers['webhook-id'])
  assert.equal(ids.length, count, `${path}: ${ids.length} requests`)
  assert.equal(new Set(ids).size, count, `${path}: a delivery was sent twice`)
}

/**
 * A database of its own whose real engine refuses, once `refuse()` ran, any attempt row whose
 * answer says "poison" (a trigger), as PostgreSQL refused zero bytes: a row a batch cannot write.
 */
function poisonableDatabase (t: Cleanup, database: string): { env: NodeJS.ProcessEnv, refuse: () => Promise<void> } {
  if (database === 'SQLite') {
    const filename = tempDatabaseFile(t, 'plant-store-receiver-bytes-')
    return {
      env: { DATABASE_URL: filename },
      refuse: async () => {
        const db = new Database(filename)
        try {
          db.exec(`CREATE TRIGGER poison BEFORE INSERT ON webhook_attempts WHEN NEW.response_body LIKE '%poison%'
                   BEGIN SELECT RAISE(ABORT, 'poisoned answer'); END`)
        } finally {
          db.close()
        }
      }
    }
  }
  const { url, schema } = scratchDatabaseUrl(t)
  return {
    env: { DATABASE_URL: url, PG_POOL_MAX: '4' },
    refuse: async () => {
      const client = new pg.Client({ connectionString: parsePostgresUrl(url).connectionString })
      await client.connect()
      try {
        // One implicit transaction: its search_path is the schema's, and no session keeps it.
        await client.query(`SELECT set_config('search_path', '${schema}', true);
                            CREATE FUNCTION poison () RETURNS trigger LANGUAGE plpgsql AS $$
                              BEGIN RAISE EXCEPTION 'poisoned answer'; END $$;
                            CREATE TRIGGER poison BEFORE INSERT ON webhook_attempts FOR EACH ROW
                              WHEN (NEW.response_body LIKE '%poison%') EXECUTE FUNCTION poison()`)
      } finally {
        await client.end()
      }
    }
  }
}

for (const database of apiTestDatabases) {
  describe(`receivers' answers on ${database.name}`, () => {
    test('zero bytes, gzip and 0xFF answers beside another owner\'s healthy receiver: all succeed, each ' +
      'sent once, shown alike', async (t) => {
      const cleanup = cleanupStack(t)
      const receiver = await startReceiver(cleanup)
      answerByPath(receiver)
      const app = await buildWebhooksApp(cleanup, {
        ...database.env(cleanup),
        WEBHOOK_ALLOW_PRIVATE_URLS: '1',
        WEBHOOK_POLL_INTERVAL_MS: '50'
      })
      const paths = ['/zero', '/gzip', '/ff']
      const mine = []
      for (const path of paths) mine.push(await createWebhook(app, { url: `${receiver.origin}${path}` }))
      const theirs = await createWebhook(app, { url: `${receiver.origin}/healthy` }, OTHER_AUTH)
      for (const name of ['Fern', 'Ivy']) await createPlant(app, { name })
      for (const [i, subscription] of mine.entries()) {
        const logs = await endedOnce(app, subscription.id, 2, AUTH)
        const shows = ANSWERS[paths[i] as string]?.shows
        assert.deepEqual(logs, [[{ statusCode: 200, responseBody: shows }], [{ statusCode: 200, responseBody: shows }]],
          paths[i])
      }
      assert.deepEqual(await endedOnce(app, theirs.id, 2, OTHER_AUTH),
        [[{ statusCode: 200, responseBody: '{"ok":true}' }], [{ statusCode: 200, responseBody: '{"ok":true}' }]])
      for (const path of [...paths, '/healthy']) sentOnce(receiver, path, 2)
    })

    test('an attempt row the database refuses fails no other row of its batch; its ' +
      'delivery still succeeds once', async (t) => {
      const cleanup = cleanupStack(t)
      const receiver = await startReceiver(cleanup)
      answerByPath(receiver)
      const { env, refuse } = poisonableDatabase(cleanup, database.name)
      // No retry: a failed attempt that counts ends its delivery failed, one that does not sends it again.
      const app = await buildWebhooksApp(cleanup, {
        ...env,
        WEBHOOK_ALLOW_PRIVATE_URLS: '1',
        WEBHOOK_POLL_INTERVAL_MS: '50',
        WEBHOOK_RETRY_SCHEDULE: 'none'
      })
      await refuse()
      const poisoned = await createWebhook(app, { url: `${receiver.origin}/poison` })
      const failing = await createWebhook(app, { url: `${receiver.origin}/poison-500` })
      const healthy = await createWebhook(app, { url: `${receiver.origin}/healthy` }, OTHER_AUTH)
      for (const name of ['Fern', 'Ivy', 'Moss']) await createPlant(app, { name })
      // The refused row is kept without the answer: the attempt counts, on schedule.
      assert.deepEqual(await endedOnce(app, poisoned.id, 3, AUTH), Array(3).fill([{ statusCode: 200 }]))
      assert.deepEqual(await endedOnce(app, failing.id, 3, AUTH, 'failed'),
        Array(3).fill([{ statusCode: 500, error: 'the receiver answered 500' }]))
      assert.deepEqual(await endedOnce(app, healthy.id, 3, OTHER_AUTH),
        Array(3).fill([{ statusCode: 200, responseBody: '{"ok":true}' }]))
      for (const path of ['/poison', '/poison-500', '/healthy']) sentOnce(receiver, path, 3)
    })
  })
}
