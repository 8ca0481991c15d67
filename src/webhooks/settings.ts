import { Type, type Static, type TObject } from '@sinclair/typebox'
import { ConfigError } from '../lib/errors.js'
import {
  DEFAULT_BUSY_INTERVAL_MS, DEFAULT_CONCURRENCY, DEFAULT_DISABLE_AFTER_MS, DEFAULT_PER_SUBSCRIPTION,
  DEFAULT_POLL_INTERVAL_MS, DEFAULT_RETENTION_MS, DEFAULT_TIMEOUT_MS
} from './dispatcher.js'
import { DEFAULT_MAX_SUBSCRIPTIONS } from './limits.js'
import { DEFAULT_RETRY_SCHEDULE_MS } from './schedule.js'
import { flagSetting, integerSetting } from '../config/setting-types.js'

const MAX_WEBHOOK_MS = 365 * 24 * 3_600_000
const MAX_WEBHOOK_RETRIES = 50

/** The WEBHOOK_* settings: their part of EnvSchema (src/config/load-config.ts composes them, in this order). */
export const WEBHOOK_SETTINGS = {
  // Webhooks (docs/webhooks.md).
  WEBHOOK_TIMEOUT_MS: integerSetting({ minimum: 1, maximum: 600_000, default: DEFAULT_TIMEOUT_MS },
    "One delivery attempt's time limit in milliseconds, from resolving the receiver's host to its answer's status; " +
    "also how long subscribing (or changing a URL) waits for the host's lookup."),
  WEBHOOK_RETRY_SCHEDULE: Type.Optional(Type.String({
    description: 'The waits before each retry in milliseconds, comma-separated, each scaled by a random ±20 % ' +
      '(`none`: no retries). Unset: 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h.'
  })),
  WEBHOOK_CONCURRENCY: integerSetting({ minimum: 1, maximum: 1000, default: DEFAULT_CONCURRENCY },
    'Delivery attempts in flight per instance (one while requests saturate the event loop).'),
  WEBHOOK_SUBSCRIPTION_CONCURRENCY: integerSetting({ minimum: 1, maximum: 1000, default: DEFAULT_PER_SUBSCRIPTION },
    'Attempts in flight per subscription per instance; a receiver answering 2xx within 100 ms earns more, up to ' +
    'WEBHOOK_CONCURRENCY, so a slow receiver holds at most this many slots.'),
  WEBHOOK_DISABLE_AFTER_MS: integerSetting({ minimum: 1, maximum: MAX_WEBHOOK_MS, default: DEFAULT_DISABLE_AFTER_MS },
    'A subscription whose deliveries have all failed for this many milliseconds is disabled.'),
  WEBHOOK_RETENTION_MS: integerSetting({ minimum: 1, maximum: MAX_WEBHOOK_MS, default: DEFAULT_RETENTION_MS },
    'Finished delivery records are deleted after this many milliseconds.'),
  WEBHOOK_POLL_INTERVAL_MS: integerSetting({ minimum: 10, maximum: 60_000, default: DEFAULT_POLL_INTERVAL_MS },
    "How often due deliveries (retries, other instances' events) are looked for; new events wake the " +
    'dispatcher at once.'),
  WEBHOOK_BUSY_INTERVAL_MS: integerSetting({ minimum: 1, maximum: 60_000, default: DEFAULT_BUSY_INTERVAL_MS },
    'While requests saturate the event loop, delivery attempts start at least this many milliseconds apart, ' +
    'one at a time.'),
  WEBHOOK_MAX_SUBSCRIPTIONS: integerSetting({ minimum: 1, maximum: 100_000, default: DEFAULT_MAX_SUBSCRIPTIONS },
    'The most webhook subscriptions one token may have; creating one more is a 409.'),
  WEBHOOK_ALLOW_PRIVATE_URLS: flagSetting('0', '`1`: subscriptions may point at loopback, private, link-local ' +
    'and other non-public addresses (local development and tests only).')
}

type WebhookEnv = Static<TObject<typeof WEBHOOK_SETTINGS>>

/** How webhooks are delivered (the WEBHOOK_* settings). */
export function webhookConfig (parsed: WebhookEnv) {
  return {
    timeoutMs: parsed.WEBHOOK_TIMEOUT_MS,
    schedule: parseRetrySchedule(parsed.WEBHOOK_RETRY_SCHEDULE),
    concurrency: parsed.WEBHOOK_CONCURRENCY,
    perSubscription: parsed.WEBHOOK_SUBSCRIPTION_CONCURRENCY,
    disableAfterMs: parsed.WEBHOOK_DISABLE_AFTER_MS,
    retentionMs: parsed.WEBHOOK_RETENTION_MS,
    pollIntervalMs: parsed.WEBHOOK_POLL_INTERVAL_MS,
    busyIntervalMs: parsed.WEBHOOK_BUSY_INTERVAL_MS,
    maxSubscriptions: parsed.WEBHOOK_MAX_SUBSCRIPTIONS,
    allowPrivate: parsed.WEBHOOK_ALLOW_PRIVATE_URLS === '1'
  }
}

/** No retries at all is spelled `none`, so that it is never the accident of an empty value. */
function parseRetrySchedule (text: string | undefined): number[] {
  const value = text?.trim() ?? ''
  if (value === '') return [...DEFAULT_RETRY_SCHEDULE_MS]
  if (value === 'none') return []
  const parts = value.split(',').map((part) => part.trim())
  const valid = (part: string): boolean => /^\d+$/.test(part) && Number(part) >= 1 && Number(part) <= MAX_WEBHOOK_MS
  if (parts.length > MAX_WEBHOOK_RETRIES || !parts.every(valid)) {
    throw new ConfigError(
      `invalid configuration: WEBHOOK_RETRY_SCHEDULE must be "none" or up to ${MAX_WEBHOOK_RETRIES} comma-separated ` +
      `waits in milliseconds (1 to ${MAX_WEBHOOK_MS})`
    )
  }
  return parts.map(Number)
}
