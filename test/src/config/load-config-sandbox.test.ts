import assert from 'node:assert/strict'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'node:test'
import { loadConfig } from '../../../src/config/load-config.js'
import { BUILT_IN_SEED } from '../../../src/sandbox/seed.js'
import { assertConfigRefused } from '../../helpers/config.js'

test('SANDBOX unset: no sandbox; SANDBOX=1: the defaults, and no token is made up', () => {
  assert.equal(loadConfig({}).sandbox, undefined)
  const config = loadConfig({ SANDBOX: '1' })
  assert.equal(config.tokenGenerated, false)
  assert.deepEqual(config.tokens, [])
  assert.deepEqual(config.sandbox, {
    seed: BUILT_IN_SEED,
    maxPlants: 100,
    maxSubscriptions: 5,
    maxTenants: 10_000,
    openTenants: 200,
    openWaitMs: 30_000,
    ttlMs: 86_400_000,
    ratePerAddress: 3000,
    webhookAttemptsPerMinute: 30
  })
  assert.equal(loadConfig({ SANDBOX: '1', DATABASE_URL: 'postgres://127.0.0.1/x' }).sandbox?.openTenants, 200)
  assert.deepEqual(loadConfig({ SANDBOX: '1', SANDBOX_SEED: 'none' }).sandbox?.seed, [])
  assert.deepEqual(loadConfig({ SANDBOX: '1', SANDBOX_MAX_PLANTS: '2' }).sandbox?.seed, BUILT_IN_SEED.slice(0, 2))
})

test('SANDBOX=1 refuses tokens of its own, private webhook receivers, and bad SANDBOX_* values', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'plant-store-seed-'))
  t.after(() => { rmSync(dir, { recursive: true, force: true }) })
  const file = (name: string, text: string): string => { writeFileSync(join(dir, name), text); return join(dir, name) }
  const sandbox = { SANDBOX: '1' }
  assertConfigRefused([
    [{ ...sandbox, API_TOKENS: 'x'.repeat(32) },
      /SANDBOX=1 accepts any token: unset API_TOKENS, API_TOKENS_FILE and OIDC_ISSUER/],
    [{ ...sandbox, OIDC_ISSUER: 'https://login.example.com', OIDC_AUDIENCE: 'https://plants.example.com' },
      /SANDBOX=1 accepts any token/],
    [{ ...sandbox, WEBHOOK_ALLOW_PRIVATE_URLS: '1' }, /WEBHOOK_ALLOW_PRIVATE_URLS=1 is refused with SANDBOX=1/],
    [{ ...sandbox, DATABASE_URL: ':memory:' },
      new RegExp(/DATABASE_URL=:memory: is refused with SANDBOX=1: every tenant would stay in memory, beyond /.source +
        /SANDBOX_OPEN_TENANTS/.source)],
    [{ SANDBOX: 'yes' }, /SANDBOX/],
    [{ ...sandbox, SANDBOX_TTL_MS: '999' }, /SANDBOX_TTL_MS/],
    [{ ...sandbox, SANDBOX_MAX_PLANTS: '0' }, /SANDBOX_MAX_PLANTS/],
    [{ ...sandbox, SANDBOX_MAX_TENANTS: '0' }, /SANDBOX_MAX_TENANTS/],
    [{ ...sandbox, SANDBOX_OPEN_TENANTS: '0' }, /SANDBOX_OPEN_TENANTS/],
    [{ ...sandbox, SANDBOX_SEED: join(dir, 'missing.json') }, /SANDBOX_SEED cannot be read as JSON \(ENOENT/],
    [{ ...sandbox, SANDBOX_SEED: file('bad.json', '{') }, /SANDBOX_SEED cannot be read as JSON/],
    [{ ...sandbox, SANDBOX_SEED: file('object.json', '{}') }, /SANDBOX_SEED must hold a JSON array/],
    [{ ...sandbox, SANDBOX_SEED: file('empty-name.json', '[{"name":" "}]') }, /SANDBOX_SEED entry 0: a plant is/],
    [{ ...sandbox, SANDBOX_SEED: file('extra.json', '[{"name":"a","id":3}]') }, /SANDBOX_SEED entry 0/],
    [{ ...sandbox, SANDBOX_SEED: file('nul.json', '[{"name":"a\\u0000"}]') }, /SANDBOX_SEED entry 0/],
    [{ ...sandbox, SANDBOX_SEED: file('surrogate.json', '[{"name":"a","tag":"b\\ud800"}]') }, /SANDBOX_SEED entry 0/],
    [{ ...sandbox, SANDBOX_MAX_PLANTS: '1', SANDBOX_SEED: file('two.json', '[{"name":"a"},{"name":"b","tag":"t"}]') },
      /holds 2 plants, more than SANDBOX_MAX_PLANTS \(1\)/]
  ])
})
