import * as crypto from 'node:crypto'

/**
 * SHA-256 of a text, encoded: the one digest of the service (token digests, ETags, idempotency
 * fingerprints). Runs on every request, so it uses the one-shot `crypto.hash` (Node.js ≥ 20.12),
 * a third of the cost of a Hash object, where the runtime has it.
 */
export const sha256: (text: string, encoding: 'hex' | 'base64url') => string = typeof crypto.hash === 'function'
  ? (text, encoding) => crypto.hash('sha256', text, encoding)
  : (text, encoding) => crypto.createHash('sha256').update(text).digest(encoding)
