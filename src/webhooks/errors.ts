/**
 * Why the webhook core refused something. Routes map a code to a response; the core knows nothing
 * of HTTP, so no status is carried here.
 */
export type WebhookErrorCode =
  /** No such subscription or delivery for this owner (another owner's look the same: absent). */
  | 'not-found'
  /** Not an absolute http(s) URL of at most 2048 characters without credentials. */
  | 'invalid-url'
  /** The URL's host is, or resolves to, an address the policy refuses (loopback, private, ...). */
  | 'url-not-allowed'
  /** The URL's host name does not resolve to any address. */
  | 'url-unresolvable'
  /** An event type list that is empty or names an unknown type. */
  | 'invalid-events'
  /** A description that is too long. */
  | 'invalid-description'
  /** The delivery's subscription is disabled: it is not retried until the subscription is enabled. */
  | 'subscription-disabled'

export class WebhookError extends Error {
  override name = 'WebhookError'
  constructor (readonly code: WebhookErrorCode, message: string, options?: ErrorOptions) {
    super(message, options)
  }
}

/** True when `err` is a WebhookError with this code. */
export const isWebhookError = (err: unknown, code?: WebhookErrorCode): err is WebhookError =>
  err instanceof WebhookError && (code === undefined || err.code === code)
