import assert from 'node:assert/strict'
import { ConfigError } from '../../src/lib/errors.js'
import { loadConfig } from '../../src/config/load-config.js'

/** Asserts that each environment stops the start: a ConfigError whose message matches (and names the setting). */
export function assertConfigRefused (cases: ReadonlyArray<readonly [NodeJS.ProcessEnv, RegExp]>): void {
  for (const [env, message] of cases) assertConfigRefusedBy(() => loadConfig(env), message, JSON.stringify(env))
}

/** Asserts that `read` stops the start: a ConfigError whose message matches. */
export function assertConfigRefusedBy (read: () => unknown, message: RegExp, label?: string): void {
  assert.throws(read, (err: unknown) => {
    assert.ok(err instanceof ConfigError)
    assert.match(err.message, /^invalid configuration: /)
    assert.match(err.message, message)
    return true
  }, label)
}
