import { randomBytes } from 'node:crypto'
import { Webhook } from 'standardwebhooks'

/** How long deliveries keep carrying a signature with the secret a rotation replaced. */
export const PREVIOUS_SECRET_TTL_MS = 24 * 60 * 60 * 1000

/** A new signing secret: `whsec_` and 32 random bytes in base64, as Standard Webhooks prescribes. */
export const newWebhookSecret = (): string => `whsec_${randomBytes(32).toString('base64')}`

/** One signature per secret, so either verifies during a rotation; by the reference package, never by hand. */
export function signatureHeader (
  secrets: readonly string[], messageId: string, timestampSeconds: number, payload: string
): string {
  const at = new Date(timestampSeconds * 1000)
  return secrets.map((secret) => new Webhook(secret).sign(messageId, at, payload)).join(' ')
}
