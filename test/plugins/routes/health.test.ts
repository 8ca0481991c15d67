import assert from 'node:assert/strict'
import { test } from 'node:test'
import { buildTestApp } from '../../helpers/app.js'

test('GET /health answers 200 without a token once the database answers', async (t) => {
  const app = await buildTestApp(t)
  const res = await app.inject({ method: 'GET', url: '/health' })
  assert.equal(res.statusCode, 200)
  assert.equal(res.headers['content-type'], 'application/json; charset=utf-8')
  assert.deepEqual(res.json(), { status: 'ok' })
})

test('GET /health answers 503 in the Error shape when the database does not answer', async (t) => {
  const app = await buildTestApp(t)
  app.store.ping = async () => { throw new Error('SQLITE_IOERR: disk I/O error at /secret/path') }
  const res = await app.inject({ method: 'GET', url: '/health' })
  assert.equal(res.statusCode, 503)
  assert.equal(res.headers['content-type'], 'application/json; charset=utf-8')
  assert.deepEqual(res.json(), { error: 503, message: 'The database does not answer' })
})
