import assert from 'node:assert/strict'
import { createHmac } from 'node:crypto'
import { test } from 'node:test'
import { Webhook, WebhookVerificationError } from 'standardwebhooks'
import { newWebhookSecret, signatureHeader } from '../../../src/webhooks/signing.js'

const BODY = '{"type":"plant.created","timestamp":"2026-01-01T00:00:00.000Z","data":{"id":1}}'

test('a secret is whsec_ and 32 random bytes in base64', () => {
  const secret = newWebhookSecret()
  assert.match(secret, /^whsec_[A-Za-z0-9+/]{43}=$/)
  assert.equal(Buffer.from(secret.slice('whsec_'.length), 'base64').length, 32)
  assert.notEqual(newWebhookSecret(), secret)
})

test('the signature is v1,<base64 HMAC-SHA256 of "id.timestamp.body"> and verifies with standardwebhooks', () => {
  const secret = newWebhookSecret()
  const now = Math.floor(Date.now() / 1000)
  const header = signatureHeader([secret], 'msg_1', now, BODY)
  const key = Buffer.from(secret.slice('whsec_'.length), 'base64')
  assert.equal(header, `v1,${createHmac('sha256', key).update(`msg_1.${now}.${BODY}`).digest('base64')}`)
  const headers = { 'webhook-id': 'msg_1', 'webhook-timestamp': String(now), 'webhook-signature': header }
  assert.deepEqual(new Webhook(secret).verify(BODY, headers), JSON.parse(BODY))
  assert.throws(() => new Webhook(secret).verify(`${BODY} `, headers), WebhookVerificationError)
  assert.throws(() => new Webhook(newWebhookSecret()).verify(BODY, headers), WebhookVerificationError)
})

test('during a rotation the header carries both signatures, space-separated: either secret verifies', () => {
  const [current, previous] = [newWebhookSecret(), newWebhookSecret()]
  const now = Math.floor(Date.now() / 1000)
  const header = signatureHeader([current, previous], 'msg_2', now, BODY)
  assert.match(header, /^v1,\S+ v1,\S+$/)
  const headers = { 'webhook-id': 'msg_2', 'webhook-timestamp': String(now), 'webhook-signature': header }
  for (const secret of [current, previous]) {
    assert.deepEqual(new Webhook(secret).verify(BODY, headers), JSON.parse(BODY))
  }
})
