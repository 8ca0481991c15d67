import { tokenDigest } from '../tokens.js'
import { ServiceError } from '../errors.js'
import { isWebhookEventType, WEBHOOK_EVENT_TYPES, type WebhookEventType } from './events.js'
import { newWebhookSecret, PREVIOUS_SECRET_TTL_MS } from './signing.js'
import type {
  DeliveryPage, DeliveryQuery, SubscriptionChanges, SubscriptionPage, SubscriptionQuery, WebhookDelivery,
  WebhookStore, WebhookSubscription
} from './store.js'
import { checkWebhookUrl, type AddressPolicy } from './url-policy.js'

export const MAX_DESCRIPTION_LENGTH = 500

/** Whose subscriptions a plain API_TOKENS token has: its principal id, the hex SHA-256 of the token (the same as its idempotency scope). */
export const webhookOwner = (token: string): string => tokenDigest(token)

export interface NewSubscriptionInput {
  url: string
  /** Every event type when absent. */
  events?: readonly string[]
  description?: string
  disabled?: boolean
}

/** A JSON merge patch of a subscription: absent fields are kept, `description: null` removes it. */
export interface SubscriptionPatch {
  url?: string
  events?: readonly string[]
  description?: string | null
  disabled?: boolean
}

export interface WebhookServiceOptions {
  store: WebhookStore
  policy: AddressPolicy
  /** How long the check of a URL waits for its host's addresses (WEBHOOK_TIMEOUT_MS, as a delivery would). */
  lookupTimeoutMs: number
  now?: () => number
  /** Told when a delivery was made due now (a retry): the dispatcher's wake. */
  onDue?: () => void
}

/** The event types asked for, each once, in the canonical order. Throws 'invalid-events'. */
export function normalizeEvents (events: readonly string[] | undefined): WebhookEventType[] {
  if (events === undefined) return [...WEBHOOK_EVENT_TYPES]
  const unknown = events.filter((name) => !isWebhookEventType(name))
  if (unknown.length > 0) {
    throw new ServiceError('invalid-events', `Unknown event type ${JSON.stringify(unknown[0])}; known: ${WEBHOOK_EVENT_TYPES.join(', ')}`)
  }
  if (events.length === 0) throw new ServiceError('invalid-events', 'A subscription needs at least one event type')
  return WEBHOOK_EVENT_TYPES.filter((name) => events.includes(name))
}

function checkDescription (description: string | null | undefined): void {
  if (typeof description === 'string' && description.length > MAX_DESCRIPTION_LENGTH) {
    throw new ServiceError('invalid-description', `The description is longer than ${MAX_DESCRIPTION_LENGTH} characters`)
  }
}

const notFound = (what: string): ServiceError => new ServiceError('not-found', `${what} not found`)

/**
 * What the routes call: validation (the URL against the address policy, at creation and on every
 * change of it), secrets, and the store, every operation scoped by owner. Failures are
 * ServiceErrors with a code; another owner's subscription is 'not-found', exactly like a missing one.
 */
export class WebhookService {
  readonly #store: WebhookStore
  readonly #policy: AddressPolicy
  readonly #lookup: { timeoutMs: number }
  readonly #now: () => number
  readonly #onDue: () => void

  constructor (options: WebhookServiceOptions) {
    this.#store = options.store
    this.#policy = options.policy
    this.#lookup = { timeoutMs: options.lookupTimeoutMs }
    this.#now = options.now ?? Date.now
    this.#onDue = options.onDue ?? (() => {})
  }

  async createSubscription (owner: string, input: NewSubscriptionInput): Promise<WebhookSubscription> {
    const events = normalizeEvents(input.events)
    checkDescription(input.description)
    await checkWebhookUrl(input.url, this.#policy, this.#lookup)
    return await this.#store.createSubscription({
      owner,
      url: input.url,
      events,
      ...(input.description !== undefined && { description: input.description }),
      disabled: input.disabled ?? false,
      secret: newWebhookSecret()
    }, this.#now())
  }

  async listSubscriptions (owner: string, query: SubscriptionQuery): Promise<SubscriptionPage> {
    return await this.#store.listSubscriptions(owner, query)
  }

  async getSubscription (owner: string, id: bigint): Promise<WebhookSubscription> {
    return await this.#store.getSubscription(owner, id) ?? this.#missing(id)
  }

  async updateSubscription (owner: string, id: bigint, patch: SubscriptionPatch): Promise<WebhookSubscription> {
    const changes: SubscriptionChanges = {}
    if (patch.events !== undefined) changes.events = normalizeEvents(patch.events)
    if (patch.description !== undefined) {
      checkDescription(patch.description)
      changes.description = patch.description
    }
    if (patch.disabled !== undefined) changes.disabled = patch.disabled
    if (patch.url !== undefined) {
      // Another owner's id must look missing, not invalid: check it exists before judging the URL.
      const current = await this.getSubscription(owner, id)
      if (patch.url !== current.url) await checkWebhookUrl(patch.url, this.#policy, this.#lookup)
      changes.url = patch.url
    }
    return await this.#store.updateSubscription(owner, id, changes, this.#now()) ?? this.#missing(id)
  }

  async deleteSubscription (owner: string, id: bigint): Promise<void> {
    if (!await this.#store.deleteSubscription(owner, id)) this.#missing(id)
  }

  /**
   * A new secret; for the next 24 hours every delivery is signed with both, so receivers can switch
   * over without losing an event. Rotating again within that time drops the oldest secret.
   */
  async rotateSecret (owner: string, id: bigint): Promise<WebhookSubscription> {
    const now = this.#now()
    return await this.#store.rotateSecret(owner, id, newWebhookSecret(), now + PREVIOUS_SECRET_TTL_MS, now) ?? this.#missing(id)
  }

  async listDeliveries (owner: string, subscriptionId: bigint, query: DeliveryQuery): Promise<DeliveryPage> {
    return await this.#store.listDeliveries(owner, subscriptionId, query) ?? this.#missing(subscriptionId)
  }

  /** Attempts the delivery again now (one more attempt for a failed one); the dispatcher is woken. */
  async retryDelivery (owner: string, subscriptionId: bigint, deliveryId: bigint): Promise<WebhookDelivery> {
    const result = await this.#store.retryDelivery(owner, subscriptionId, deliveryId, this.#now())
    if (result.status === 'not-found') throw notFound(`Delivery ${deliveryId} of webhook subscription ${subscriptionId}`)
    if (result.status === 'subscription-disabled') {
      throw new ServiceError('subscription-disabled', `Webhook subscription ${subscriptionId} is disabled: enable it to retry its deliveries`)
    }
    this.#onDue()
    return result.delivery
  }

  #missing (id: bigint): never {
    throw notFound(`Webhook subscription ${id}`)
  }
}
