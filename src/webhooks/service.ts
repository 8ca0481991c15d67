import { tokenDigest } from '../auth/tokens.js'
import { ServiceError } from '../lib/errors.js'
import type { TestAttempt, TestTarget } from './dispatcher.js'
import { DEFAULT_MAX_SUBSCRIPTIONS } from './limits.js'
import type { WebhookEventType } from './events.js'
import { newWebhookSecret, PREVIOUS_SECRET_TTL_MS } from './signing.js'
import type {
  DeliveryDetail,
  DeliveryPage,
  DeliveryQuery,
  SubscriptionChanges,
  SubscriptionPage,
  SubscriptionQuery,
  WebhookDelivery,
  WebhookStore,
  WebhookSubscription
} from './store-contract.js'
import { checkWebhookUrl, type AddressPolicy } from './url-policy.js'

export const MAX_DESCRIPTION_LENGTH = 500
/** The bounds Standard Webhooks (and Svix) set for a secret's key. */
export const MIN_SECRET_BYTES = 24
export const MAX_SECRET_BYTES = 64

/** A subscription as answered: why it stays disabled, when the reason still holds. */
export type ServedSubscription = WebhookSubscription & { disabledReason?: string }

/** A subscription as GET, list and PATCH answer it: the secret only comes from creation, rotation and GET …/secret. */
export type WebhookView = Omit<ServedSubscription, 'secret'>

const withoutSecret = ({ secret: _secret, ...view }: ServedSubscription): WebhookView => view

/**
 * The owners whose scopes are known while the service runs (named tokens, fixed until a restart), and
 * the read scope one of them lacks for a subscription's events: such a subscription is paused.
 */
export interface OwnerScopes {
  owners: readonly string[]
  missing: (owner: string, events: readonly WebhookEventType[]) => string | undefined
}

/** A subscription whose owner lacks a read scope of its events: `paused` now, or already disabled. */
export interface PausedSubscription {
  owner: string
  id: bigint
  scope: string
  paused: boolean
}

const pausedReason = (scope: string): string =>
  `Paused: the token that owns it lacks the scope ${scope}, which its events need; enabling it needs that scope`

/**
 * Whose subscriptions a plain API_TOKENS token has: its principal id, the hex SHA-256 of the token (the same as its
 * idempotency scope).
 */
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
  /** The most subscriptions one owner may have (WEBHOOK_MAX_SUBSCRIPTIONS). */
  maxSubscriptions?: number
  /** Sends a test event to a subscription now (the dispatcher's sendTest). */
  sendTest?: (target: TestTarget) => Promise<TestAttempt>
  /** Told when a delivery was made due now (a retry): the dispatcher's wake. */
  onDue?: () => void
  /** Awaited after a subscription changed: the dispatcher recounts owners before the next write's event. */
  onSubscriptionsChanged?: () => Promise<void>
  /** The event types a subscription may ask for, in their canonical order: the app's resources'. */
  eventTypes: readonly WebhookEventType[]
  /** Owners with configured scopes (named tokens): their subscriptions that need more are paused at start. */
  ownerScopes?: OwnerScopes
}

/** The event types asked for, each once, in the canonical order of `known`. Throws 'invalid-events'. */
export function normalizeEvents (
  events: readonly string[] | undefined, known: readonly WebhookEventType[]
): WebhookEventType[] {
  if (events === undefined) return [...known]
  const unknown = events.filter((name) => !(known as readonly string[]).includes(name))
  if (unknown.length > 0) {
    throw new ServiceError(
      'invalid-events',
      `Unknown event type ${JSON.stringify(unknown[0])}; known: ${known.join(', ')}`
    )
  }
  if (events.length === 0) throw new ServiceError('invalid-events', 'A subscription needs at least one event type')
  return known.filter((name) => events.includes(name))
}

function checkDescription (description: string | null | undefined): void {
  if (typeof description === 'string' && description.length > MAX_DESCRIPTION_LENGTH) {
    throw new ServiceError('invalid-description', `The description is longer than ${MAX_DESCRIPTION_LENGTH} characters`)
  }
}

/** A secret as Standard Webhooks has it: `whsec_` and 24 to 64 bytes in (canonical) base64. */
export function checkSecret (secret: string): void {
  const encoded = secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : undefined
  const bytes = encoded === undefined ? undefined : Buffer.from(encoded, 'base64')
  if (
    bytes === undefined ||
    bytes.toString('base64') !== encoded ||
    bytes.length < MIN_SECRET_BYTES ||
    bytes.length > MAX_SECRET_BYTES
  ) {
    throw new ServiceError(
      'invalid-secret',
      `A secret is whsec_ and ${MIN_SECRET_BYTES} to ${MAX_SECRET_BYTES} random bytes in base64`
    )
  }
  // All one byte (whsec_AAAA…) is a placeholder, not a key: anyone could sign with it.
  if (bytes.every((byte) => byte === bytes[0])) {
    throw new ServiceError('invalid-secret',
      'A secret of one byte repeated has no entropy: give random bytes (or send no secret to get some)')
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
  readonly #onSubscriptionsChanged: () => Promise<void>
  readonly #maxSubscriptions: number
  readonly #sendTest: ((target: TestTarget) => Promise<TestAttempt>) | undefined
  readonly #eventTypes: readonly WebhookEventType[]
  readonly #ownerScopes: OwnerScopes | undefined

  constructor (options: WebhookServiceOptions) {
    this.#store = options.store
    this.#policy = options.policy
    this.#lookup = { timeoutMs: options.lookupTimeoutMs }
    this.#now = options.now ?? Date.now
    this.#onDue = options.onDue ?? (() => {})
    this.#onSubscriptionsChanged = options.onSubscriptionsChanged ?? (async () => {})
    this.#maxSubscriptions = options.maxSubscriptions ?? DEFAULT_MAX_SUBSCRIPTIONS
    this.#sendTest = options.sendTest
    this.#eventTypes = options.eventTypes
    this.#ownerScopes = options.ownerScopes
  }

  async createSubscription (owner: string, input: NewSubscriptionInput): Promise<WebhookSubscription> {
    const events = normalizeEvents(input.events, this.#eventTypes)
    checkDescription(input.description)
    await checkWebhookUrl(input.url, this.#policy, this.#lookup)
    const created = await this.#store.createSubscription({
      owner,
      url: input.url,
      events,
      ...(input.description !== undefined && { description: input.description }),
      disabled: input.disabled ?? false,
      secret: newWebhookSecret()
    }, this.#now(), this.#maxSubscriptions)
    await this.#onSubscriptionsChanged()
    return created
  }

  async listSubscriptions (owner: string, query: SubscriptionQuery): Promise<SubscriptionPage<WebhookView>> {
    const page = await this.#store.listSubscriptions(owner, query)
    const subscriptions = page.subscriptions.map((found) => withoutSecret(this.#served(owner, found)))
    return { subscriptions, hasMore: page.hasMore }
  }

  async getSubscription (owner: string, id: bigint): Promise<WebhookView> {
    return withoutSecret(this.#served(owner, await this.#store.getSubscription(owner, id) ?? this.#missing(id)))
  }

  async updateSubscription (owner: string, id: bigint, patch: SubscriptionPatch): Promise<WebhookView> {
    const changes: SubscriptionChanges = {}
    if (patch.events !== undefined) changes.events = normalizeEvents(patch.events, this.#eventTypes)
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
    const updated = await this.#store.updateSubscription(owner, id, changes, this.#now()) ?? this.#missing(id)
    await this.#onSubscriptionsChanged()
    return withoutSecret(this.#served(owner, updated))
  }

  async deleteSubscription (owner: string, id: bigint): Promise<void> {
    if (!await this.#store.deleteSubscription(owner, id)) this.#missing(id)
    await this.#onSubscriptionsChanged()
  }

  async getSecret (owner: string, id: bigint): Promise<{ secret: string }> {
    return { secret: (await this.#store.getSubscription(owner, id) ?? this.#missing(id)).secret }
  }

  /**
   * A new secret (`secret`, when the integrator supplies one, else a random one); every secret it
   * replaces keeps signing deliveries for 24 hours after its replacement, so receivers can switch
   * over without losing an event, however often it is rotated.
   */
  async rotateSecret (owner: string, id: bigint, secret?: string): Promise<ServedSubscription> {
    if (secret !== undefined) checkSecret(secret)
    const now = this.#now()
    const previousUntil = now + PREVIOUS_SECRET_TTL_MS
    const rotated = await this.#store.rotateSecret(owner, id, secret ?? newWebhookSecret(), previousUntil, now)
    return this.#served(owner, rotated ?? this.#missing(id))
  }

  async listDeliveries (owner: string, subscriptionId: bigint, query: DeliveryQuery): Promise<DeliveryPage> {
    return await this.#store.listDeliveries(owner, subscriptionId, query) ?? this.#missing(subscriptionId)
  }

  /** Re-queues the subscription's failed deliveries created at `since` or later; resolves with how many. */
  async recoverDeliveries (owner: string, subscriptionId: bigint, since: number): Promise<{ recovered: number }> {
    const recovered = await this.#store.recoverDeliveries(owner, subscriptionId, since, this.#now()) ??
      this.#missing(subscriptionId)
    if (recovered > 0) this.#onDue()
    return { recovered }
  }

  /**
   * Sends a signed `webhook.test` event to the subscription now, signed as its deliveries are (with
   * every secret still honoured); resolves with the attempt's outcome.
   */
  async sendTest (owner: string, id: bigint): Promise<TestAttempt> {
    const target = await this.#store.signingTarget(owner, id, this.#now()) ?? this.#missing(id)
    if (this.#sendTest === undefined) throw new Error('no test sender configured')
    return await this.#sendTest({ id, owner, ...target })
  }

  async getDelivery (owner: string, subscriptionId: bigint, deliveryId: bigint): Promise<DeliveryDetail> {
    const delivery = await this.#store.getDelivery(owner, subscriptionId, deliveryId)
    if (delivery === undefined) throw notFound(`Delivery ${deliveryId} of webhook subscription ${subscriptionId}`)
    return delivery
  }

  /** Attempts the delivery again now (one more attempt for a failed one); the dispatcher is woken. */
  async retryDelivery (owner: string, subscriptionId: bigint, deliveryId: bigint): Promise<WebhookDelivery> {
    const result = await this.#store.retryDelivery(owner, subscriptionId, deliveryId, this.#now())
    if (result.status === 'not-found') {
      throw notFound(`Delivery ${deliveryId} of webhook subscription ${subscriptionId}`)
    }
    if (result.status === 'subscription-disabled') {
      throw new ServiceError(
        'subscription-disabled',
        `Webhook subscription ${subscriptionId} is disabled: enable it to retry its deliveries`
      )
    }
    this.#onDue()
    return result.delivery
  }

  /**
   * At start: every subscription of an owner with configured scopes whose events need a read scope
   * it lacks (a named token narrowed since) is disabled, so it stops receiving them. Each is
   * returned, for the log, with whether it was disabled now.
   */
  async pauseUncovered (): Promise<PausedSubscription[]> {
    const found: PausedSubscription[] = []
    for (const owner of this.#ownerScopes?.owners ?? []) {
      let after: bigint | undefined
      let hasMore = true
      while (hasMore) {
        const page = await this.#store.listSubscriptions(owner, { limit: 100, ...(after !== undefined && { after }) })
        for (const subscription of page.subscriptions) {
          const scope = this.#uncovered(owner, subscription)
          if (scope === undefined) continue
          if (!subscription.disabled) {
            await this.#store.updateSubscription(owner, subscription.id, { disabled: true }, this.#now())
          }
          found.push({ owner, id: subscription.id, scope, paused: !subscription.disabled })
        }
        hasMore = page.hasMore
        after = page.subscriptions.at(-1)?.id
      }
    }
    return found
  }

  /** A subscription's event types this app serves (another app's on its database, or a newer one's, are left out). */
  #served (owner: string, subscription: WebhookSubscription): ServedSubscription {
    const events = subscription.events.filter((type) => this.#eventTypes.includes(type))
    const served = events.length === subscription.events.length ? subscription : { ...subscription, events }
    const scope = served.disabled ? this.#uncovered(owner, served) : undefined
    return scope === undefined ? served : { ...served, disabledReason: pausedReason(scope) }
  }

  /** The read scope the owner (a named token) lacks for the subscription's events, if any. */
  #uncovered (owner: string, subscription: WebhookSubscription): string | undefined {
    const events = subscription.events.filter((type) => this.#eventTypes.includes(type))
    return this.#ownerScopes?.missing(owner, events)
  }

  #missing (id: bigint): never {
    throw notFound(`Webhook subscription ${id}`)
  }
}
