import { randomBytes } from 'node:crypto'
import { Webhook } from 'standardwebhooks'

/** How long deliveries keep carrying a signature with the secret a rotation replaced. */
export const PREVIOUS_SECRET_TTL_MS = 24 * 60 * 60 * 1000

/** A new signing secret: `whsec_` and 32 random bytes in base64, as Standard Webhooks prescribes. */
export const newWebhookSecret = (): string => `whsec_${randomBytes(32).toString('base64')}`

/**
 * The `webhook-signature` header: one `v1,<base64 HMAC-SHA256 of "id.timestamp.body">` per secret,
 * space-separated, so during a rotation receivers holding either secret can verify. Signed by the
 * standardwebhooks package (the reference implementation receivers verify with), never by hand.
 */
export function signatureHeader (
  secrets: readonly string[],
  messageId: string,
  timestampSeconds: number,
  payload: string
): string {
  const at = new Date(timestampSeconds * 1000)
  return secrets.map((secret) => new Webhook(secret).sign(messageId, at, payload)).join(' ')
}
