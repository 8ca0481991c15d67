import { Type, type Static, type TObject } from '@sinclair/typebox'
import { ConfigError } from '../lib/errors.js'
import type { NewPlant } from '../resources/plants.js'
import { loadSeed } from './seed.js'
import { OPEN_WAIT_MS } from './tenants.js'
import { flagSetting, integerSetting, stringSetting } from '../config/setting-types.js'

/** The SANDBOX_* settings: their part of EnvSchema (src/config/load-config.ts composes them, in this order). */
export const SANDBOX_SETTINGS = {
  // Public sandbox (docs/operations.md#running-a-public-sandbox).
  SANDBOX: flagSetting('0',
    '`1`: a public sandbox: any bearer token of 16 to 256 URL-safe characters is a tenant with its own plants and ' +
    'subscriptions (no API_TOKENS, API_TOKENS_FILE or OIDC_ISSUER then).'),
  SANDBOX_SEED: Type.Optional(stringSetting({ minLength: 1 },
    'Sandbox: the plants a new tenant starts with, a JSON file of `[{"name": …, "tag": …}]`, or `none`; unset: a ' +
    'small built-in set.')),
  SANDBOX_MAX_PLANTS: integerSetting({ minimum: 1, maximum: 1_000_000, default: 100 },
    'Sandbox: the most plants one tenant may hold (the same cap applies to every resource); creating one more is a ' +
    '409.'),
  SANDBOX_MAX_SUBSCRIPTIONS: integerSetting({ minimum: 1, maximum: 1000, default: 5 },
    'Sandbox: the most webhook subscriptions one tenant may have; creating one more is a 409.'),
  SANDBOX_MAX_TENANTS: integerSetting({ minimum: 1, maximum: 10_000_000, default: 10_000 },
    'Sandbox: the most tenants kept; a new one deletes the least recently used tenant unused for a ' +
    'minute (or a quarter of SANDBOX_TTL_MS), or is a 503 with Retry-After when there is none.'),
  SANDBOX_OPEN_TENANTS: Type.Optional(integerSetting({ minimum: 1, maximum: 10_000 },
    'Sandbox: tenant stores kept open per instance (least recently used closed first); unset: 200 (on SQLite ' +
    'each costs about 0.5 MB under load; on PostgreSQL they share PG_POOL_MAX connections).')),
  SANDBOX_OPEN_WAIT_MS: integerSetting({ minimum: 0, maximum: 600_000, default: OPEN_WAIT_MS },
    'Sandbox: how long a request waits, in turn with others, for one of the SANDBOX_OPEN_TENANTS stores to be free ' +
    'before it is answered 503 with Retry-After.'),
  SANDBOX_TTL_MS: integerSetting({ minimum: 1000, maximum: 365 * 24 * 3_600_000, default: 24 * 3_600_000 },
    'Sandbox: a tenant unused for this many milliseconds is deleted with all its data (checked at least every half ' +
    'of it, and every minute).'),
  SANDBOX_RATE_LIMIT_PER_ADDRESS: integerSetting({ minimum: 0, default: 3000 },
    'Sandbox: requests per RATE_LIMIT_WINDOW per client address, whatever tokens it uses (RATE_LIMIT_MAX is the ' +
    'limit per tenant); 0: none.'),
  SANDBOX_WEBHOOK_ATTEMPTS_PER_MINUTE: integerSetting({ minimum: 1, maximum: 60_000, default: 30 },
    'Sandbox: the most webhook delivery attempts per minute per tenant, one at a time.')
}

type SandboxEnv = Static<TObject<typeof SANDBOX_SETTINGS>>

/** The public sandbox (the SANDBOX_* settings). */
export interface SandboxConfig {
  /** What a new tenant starts with (SANDBOX_SEED, read and checked at load). */
  seed: ReadonlyArray<Omit<NewPlant, 'id'>>
  maxPlants: number
  maxSubscriptions: number
  maxTenants: number
  openTenants: number
  openWaitMs: number
  ttlMs: number
  ratePerAddress: number
  webhookAttemptsPerMinute: number
}

/** Anyone may call a sandbox: it has no tokens of its own, and its webhooks never reach private addresses. */
export function sandboxConfig (
  parsed: SandboxEnv & { DATABASE_URL: string, WEBHOOK_ALLOW_PRIVATE_URLS: '0' | '1' }, hasCredentials: boolean
): SandboxConfig | undefined {
  if (parsed.SANDBOX !== '1') return undefined
  const refuse = (problem: string): never => { throw new ConfigError(`invalid configuration: ${problem}`) }
  if (hasCredentials) refuse('SANDBOX=1 accepts any token: unset API_TOKENS, API_TOKENS_FILE and OIDC_ISSUER')
  if (parsed.WEBHOOK_ALLOW_PRIVATE_URLS === '1') {
    refuse('WEBHOOK_ALLOW_PRIVATE_URLS=1 is refused with SANDBOX=1: a public sandbox must not reach private addresses')
  }
  // In memory no tenant could be closed without losing it: SANDBOX_OPEN_TENANTS would bound nothing.
  if (parsed.DATABASE_URL === ':memory:') {
    refuse('DATABASE_URL=:memory: is refused with SANDBOX=1: every tenant would stay in memory, beyond ' +
      'SANDBOX_OPEN_TENANTS; give a file path or a postgres:// URL')
  }
  const seed = parsed.SANDBOX_SEED?.trim()
  return {
    seed: loadSeed(seed === '' ? undefined : seed, parsed.SANDBOX_MAX_PLANTS),
    maxPlants: parsed.SANDBOX_MAX_PLANTS,
    maxSubscriptions: parsed.SANDBOX_MAX_SUBSCRIPTIONS,
    maxTenants: parsed.SANDBOX_MAX_TENANTS,
    openTenants: parsed.SANDBOX_OPEN_TENANTS ?? 200,
    openWaitMs: parsed.SANDBOX_OPEN_WAIT_MS,
    ttlMs: parsed.SANDBOX_TTL_MS,
    ratePerAddress: parsed.SANDBOX_RATE_LIMIT_PER_ADDRESS,
    webhookAttemptsPerMinute: parsed.SANDBOX_WEBHOOK_ATTEMPTS_PER_MINUTE
  }
}
