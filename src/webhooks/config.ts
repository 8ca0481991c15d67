import { ConfigError } from '../errors.js'
import {
  DEFAULT_CONCURRENCY, DEFAULT_DISABLE_AFTER_MS, DEFAULT_PER_SUBSCRIPTION, DEFAULT_POLL_INTERVAL_MS,
  DEFAULT_RETENTION_MS, DEFAULT_TIMEOUT_MS
} from './dispatcher.js'
import { DEFAULT_RETRY_SCHEDULE_MS } from './schedule.js'

/** The WEBHOOK_* settings, validated. */
export interface WebhookConfig {
  /** WEBHOOK_TIMEOUT_MS: one attempt's time limit (default 10 s). */
  timeoutMs: number
  /** WEBHOOK_RETRY_SCHEDULE_MS: comma-separated waits before each retry (default 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h). */
  schedule: number[]
  /** WEBHOOK_CONCURRENCY: attempts in flight per instance (default 10). */
  concurrency: number
  /** WEBHOOK_SUBSCRIPTION_CONCURRENCY: attempts in flight per subscription per instance (default 2). */
  perSubscription: number
  /** WEBHOOK_DISABLE_AFTER_MS: a subscription failing this long is disabled (default 5 days). */
  disableAfterMs: number
  /** WEBHOOK_RETENTION_MS: finished deliveries are kept this long (default 7 days). */
  retentionMs: number
  /** WEBHOOK_POLL_INTERVAL_MS: how often due deliveries are looked for without a wake (default 1 s). */
  pollIntervalMs: number
  /** WEBHOOK_ALLOW_PRIVATE_URLS=1: loopback, private, ... receivers allowed (development only). */
  allowPrivate: boolean
}

const MAX_MS = 365 * 24 * 3_600_000

function integer (env: NodeJS.ProcessEnv, name: string, fallback: number, min: number, max: number): number {
  const text = env[name]
  if (text === undefined || text.trim() === '') return fallback
  const value = Number(text)
  if (!/^\s*\d+\s*$/.test(text) || !Number.isSafeInteger(value) || value < min || value > max) {
    throw new ConfigError(`invalid configuration: ${name} must be an integer from ${min} to ${max}`)
  }
  return value
}

const MAX_RETRIES = 50

function schedule (env: NodeJS.ProcessEnv): number[] {
  const text = env.WEBHOOK_RETRY_SCHEDULE_MS?.trim()
  if (text === undefined || text === '') return [...DEFAULT_RETRY_SCHEDULE_MS]
  // Spelled out, so that "no retries" is never the accident of an empty value.
  if (text === 'none') return []
  const parts = text.split(',').map((part) => part.trim())
  const valid = (part: string): boolean => /^\d+$/.test(part) && Number(part) >= 1 && Number(part) <= MAX_MS
  if (parts.length > MAX_RETRIES || !parts.every(valid)) {
    throw new ConfigError(`invalid configuration: WEBHOOK_RETRY_SCHEDULE_MS must be "none" or up to ${MAX_RETRIES} comma-separated waits in milliseconds (1 to ${MAX_MS})`)
  }
  return parts.map(Number)
}

/** Reads the WEBHOOK_* variables; throws ConfigError naming the variable at fault. */
export function loadWebhookConfig (env: NodeJS.ProcessEnv = process.env): WebhookConfig {
  const allow = env.WEBHOOK_ALLOW_PRIVATE_URLS ?? '0'
  if (allow !== '0' && allow !== '1') throw new ConfigError('invalid configuration: WEBHOOK_ALLOW_PRIVATE_URLS must be 0 or 1')
  return {
    timeoutMs: integer(env, 'WEBHOOK_TIMEOUT_MS', DEFAULT_TIMEOUT_MS, 1, 10 * 60_000),
    schedule: schedule(env),
    concurrency: integer(env, 'WEBHOOK_CONCURRENCY', DEFAULT_CONCURRENCY, 1, 1000),
    perSubscription: integer(env, 'WEBHOOK_SUBSCRIPTION_CONCURRENCY', DEFAULT_PER_SUBSCRIPTION, 1, 1000),
    disableAfterMs: integer(env, 'WEBHOOK_DISABLE_AFTER_MS', DEFAULT_DISABLE_AFTER_MS, 1, MAX_MS),
    retentionMs: integer(env, 'WEBHOOK_RETENTION_MS', DEFAULT_RETENTION_MS, 1, MAX_MS),
    pollIntervalMs: integer(env, 'WEBHOOK_POLL_INTERVAL_MS', DEFAULT_POLL_INTERVAL_MS, 10, 60_000),
    allowPrivate: allow === '1'
  }
}
