import * as crypto from 'node:crypto'

/**
 * The one digest of the service (token digests, ETags, idempotency fingerprints). One-shot
 * `crypto.hash` where the runtime has it: see docs/performance.md#what-the-measurements-decided.
 */
export const sha256: (text: string, encoding: 'hex' | 'base64url') => string = typeof crypto.hash === 'function'
  ? (text, encoding) => crypto.hash('sha256', text, encoding)
  : (text, encoding) => crypto.createHash('sha256').update(text).digest(encoding)
