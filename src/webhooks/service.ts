import { tokenDigest } from '../auth/tokens.js'
import { ServiceError } from '../lib/errors.js'
import type { TestAttempt, TestTarget } from './dispatcher.js'
import { DEFAULT_MAX_SUBSCRIPTIONS } from './limits.js'
import type { WebhookEventType } from './events.js'
import { newWebhookSecret, PREVIOUS_SECRET_TTL_MS } from './signing.js'
import type {
  DeliveryDetail, DeliveryPage, DeliveryQuery, SubscriptionChanges, SubscriptionPage, SubscriptionQuery,
  WebhookDelivery, WebhookStore, WebhookSubscription
} from './store-contract.js'
import { checkWebhookUrl, type AddressPolicy } from './url-policy.js'

export const MAX_DESCRIPTION_LENGTH = 500
/** The bounds Standard Webhooks (and Svix) set for a secret's key. */
export const MIN_SECRET_BYTES = 24
export const MAX_SECRET_BYTES = 64

type ServedSubscription = WebhookSubscription & { disabledReason?: string }

/** The secret is only answered by creation, rotation and GET …/secret. */
type WebhookView = Omit<ServedSubscription, 'secret'>

const withoutSecret = ({ secret: _secret, ...view }: ServedSubscription): WebhookView => view

/** Named tokens (scopes fixed until a restart) and the read scope one lacks for events: such subscriptions pause. */
export interface OwnerScopes {
  owners: readonly string[]
  missing: (owner: string, events: readonly WebhookEventType[]) => string | undefined
}

/** `paused` now, or already disabled. */
interface PausedSubscription {
  owner: string
  id: bigint
  scope: string
  paused: boolean
}

const pausedReason = (scope: string): string =>
  `Paused: the token that owns it lacks the scope ${scope}, which its events need; enabling it needs that scope`

/** A plain API_TOKENS token's principal id: the same digest as its idempotency scope. */
export const webhookOwner = (token: string): string => tokenDigest(token)

interface NewSubscriptionInput {
  url: string
  events?: readonly string[]
  description?: string
  disabled?: boolean
}

/** A JSON merge patch: `description: null` removes it. */
type SubscriptionPatch = Partial<Omit<NewSubscriptionInput, 'description'>> & { description?: string | null }

interface WebhookServiceOptions {
  store: WebhookStore
  policy: AddressPolicy
  /** WEBHOOK_TIMEOUT_MS: a URL's check waits for its host's addresses as a delivery would. */
  lookupTimeoutMs: number
  now?: () => number
  maxSubscriptions?: number
  sendTest?: (target: TestTarget) => Promise<TestAttempt>
  /** A delivery was made due now (a retry): the dispatcher's wake. */
  onDue?: () => void
  /** Awaited: the dispatcher recounts owners before the next write's event. */
  onSubscriptionsChanged?: () => Promise<void>
  /** In their canonical order: the app's resources'. */
  eventTypes: readonly WebhookEventType[]
  ownerScopes?: OwnerScopes
}

/** The event types asked for, each once, in the canonical order of `known`. */
function normalizeEvents (
  events: readonly string[] | undefined, known: readonly WebhookEventType[]
): WebhookEventType[] {
  if (events === undefined) return [...known]
  const unknown = events.filter((name) => !(known as readonly string[]).includes(name))
  if (unknown.length > 0) {
    throw new ServiceError('invalid-events',
      `Unknown event type ${JSON.stringify(unknown[0])}; known: ${known.join(', ')}`)
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
  const valid = bytes !== undefined && bytes.toString('base64') === encoded &&
    bytes.length >= MIN_SECRET_BYTES && bytes.length <= MAX_SECRET_BYTES
  if (!valid) {
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

/** Validation, secrets and the store, by owner: another owner's subscription is 'not-found', like a missing one. */
export class WebhookService {
  readonly #options: WebhookServiceOptions
  readonly #store: WebhookStore
  readonly #now: () => number

  constructor (options: WebhookServiceOptions) {
    this.#options = options
    this.#store = options.store
    this.#now = options.now ?? Date.now
  }

  async createSubscription (owner: string, input: NewSubscriptionInput): Promise<WebhookSubscription> {
    const events = normalizeEvents(input.events, this.#options.eventTypes)
    checkDescription(input.description)
    await this.#checkUrl(input.url)
    const created = await this.#store.createSubscription({
      owner,
      url: input.url,
      events,
      ...(input.description !== undefined && { description: input.description }),
      disabled: input.disabled ?? false,
      secret: newWebhookSecret()
    }, this.#now(), this.#options.maxSubscriptions ?? DEFAULT_MAX_SUBSCRIPTIONS)
    await this.#options.onSubscriptionsChanged?.()
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
    if (patch.events !== undefined) changes.events = normalizeEvents(patch.events, this.#options.eventTypes)
    if (patch.description !== undefined) {
      checkDescription(patch.description)
      changes.description = patch.description
    }
    if (patch.disabled !== undefined) changes.disabled = patch.disabled
    if (patch.url !== undefined) {
      // Another owner's id must look missing, not invalid: check it exists before judging the URL.
      const current = await this.getSubscription(owner, id)
      if (patch.url !== current.url) await this.#checkUrl(patch.url)
      changes.url = patch.url
    }
    const updated = await this.#store.updateSubscription(owner, id, changes, this.#now()) ?? this.#missing(id)
    await this.#options.onSubscriptionsChanged?.()
    return withoutSecret(this.#served(owner, updated))
  }

  async deleteSubscription (owner: string, id: bigint): Promise<void> {
    if (!await this.#store.deleteSubscription(owner, id)) this.#missing(id)
    await this.#options.onSubscriptionsChanged?.()
  }

  async getSecret (owner: string, id: bigint): Promise<{ secret: string }> {
    return { secret: (await this.#store.getSubscription(owner, id) ?? this.#missing(id)).secret }
  }

  /** Each replaced secret keeps signing for 24 hours, so receivers switch over without losing an event. */
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

  async recoverDeliveries (owner: string, subscriptionId: bigint, since: number): Promise<{ recovered: number }> {
    const recovered = await this.#store.recoverDeliveries(owner, subscriptionId, since, this.#now()) ??
      this.#missing(subscriptionId)
    if (recovered > 0) this.#options.onDue?.()
    return { recovered }
  }

  async sendTest (owner: string, id: bigint): Promise<TestAttempt> {
    const target = await this.#store.signingTarget(owner, id, this.#now()) ?? this.#missing(id)
    if (this.#options.sendTest === undefined) throw new Error('no test sender configured')
    return await this.#options.sendTest({ id, owner, ...target })
  }

  async getDelivery (owner: string, subscriptionId: bigint, deliveryId: bigint): Promise<DeliveryDetail> {
    return await this.#store.getDelivery(owner, subscriptionId, deliveryId) ??
      this.#missingDelivery(subscriptionId, deliveryId)
  }

  async retryDelivery (owner: string, subscriptionId: bigint, deliveryId: bigint): Promise<WebhookDelivery> {
    const result = await this.#store.retryDelivery(owner, subscriptionId, deliveryId, this.#now())
    if (result.status === 'not-found') this.#missingDelivery(subscriptionId, deliveryId)
    if (result.status === 'subscription-disabled') {
      throw new ServiceError('subscription-disabled',
        `Webhook subscription ${subscriptionId} is disabled: enable it to retry its deliveries`)
    }
    this.#options.onDue?.()
    return result.delivery
  }

  /** At start: a named token narrowed since may no longer receive its subscriptions' events; they are disabled. */
  async pauseUncovered (): Promise<PausedSubscription[]> {
    const found: PausedSubscription[] = []
    for (const owner of this.#options.ownerScopes?.owners ?? []) {
      let page: SubscriptionPage<WebhookSubscription> | undefined
      do {
        const after = page?.subscriptions.at(-1)?.id
        page = await this.#store.listSubscriptions(owner, { limit: 100, ...(after !== undefined && { after }) })
        for (const subscription of page.subscriptions) {
          const scope = this.#uncovered(owner, subscription)
          if (scope === undefined) continue
          if (!subscription.disabled) {
            await this.#store.updateSubscription(owner, subscription.id, { disabled: true }, this.#now())
          }
          found.push({ owner, id: subscription.id, scope, paused: !subscription.disabled })
        }
      } while (page.hasMore)
    }
    return found
  }

  /** A subscription's event types this app serves (another app's on its database, or a newer one's, are left out). */
  #served (owner: string, subscription: WebhookSubscription): ServedSubscription {
    const events = subscription.events.filter((type) => this.#options.eventTypes.includes(type))
    const served = events.length === subscription.events.length ? subscription : { ...subscription, events }
    const scope = served.disabled ? this.#uncovered(owner, served) : undefined
    return scope === undefined ? served : { ...served, disabledReason: pausedReason(scope) }
  }

  #uncovered (owner: string, subscription: WebhookSubscription): string | undefined {
    const events = subscription.events.filter((type) => this.#options.eventTypes.includes(type))
    return this.#options.ownerScopes?.missing(owner, events)
  }

  async #checkUrl (url: string): Promise<void> {
    await checkWebhookUrl(url, this.#options.policy, { timeoutMs: this.#options.lookupTimeoutMs })
  }

  #missing (id: bigint): never {
    throw new ServiceError('not-found', `Webhook subscription ${id} not found`)
  }

  #missingDelivery (subscriptionId: bigint, deliveryId: bigint): never {
    throw new ServiceError('not-found', `Delivery ${deliveryId} of webhook subscription ${subscriptionId} not found`)
  }
}
