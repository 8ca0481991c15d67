import type { EventOrigin, PlantEvent, WebhookEventType } from './events.js'

/** A subscription as its owner sees it. */
export interface WebhookSubscription {
  /** Assigned by the store: 1, 2, 3, ... (int64, far below 2^53 - 1, so JSON carries it exactly). */
  id: bigint
  url: string
  events: WebhookEventType[]
  description?: string
  disabled: boolean
  /** `whsec_...`: the key receivers verify signatures with. */
  secret: string
  createdAt: string
  updatedAt: string
}

export type DeliveryStatus = 'pending' | 'succeeded' | 'failed'

/** One event on its way to one subscription, with the latest attempt's outcome. */
export interface WebhookDelivery {
  id: bigint
  eventType: WebhookEventType
  status: DeliveryStatus
  attempts: number
  lastAttemptAt?: string
  /** The receiver's answer to the latest attempt, when it answered. */
  lastStatusCode?: number
  /** Why the latest attempt did not succeed. */
  lastError?: string
  /** When the next attempt is due (pending deliveries only). */
  nextAttemptAt?: string
  createdAt: string
}

/** One attempt of a delivery, as its owner inspects it. */
export interface DeliveryAttempt {
  at: string
  durationMs: number
  /** The receiver's status code, when it answered. */
  statusCode?: number
  /** Why there was no answer, or why the answer was a failure. */
  error?: string
  /** The first KEPT_RESPONSE_BYTES of the answer's body, when it answered. */
  responseBody?: string
}

/** A delivery with its event as sent and every attempt, oldest first. */
export interface DeliveryDetail extends WebhookDelivery {
  /** The `webhook-id` header of every attempt (the message id). */
  webhookId: string
  /** The body every attempt sent, byte for byte. */
  payload: string
  attemptLog: DeliveryAttempt[]
}

/** What the store keeps for a new subscription (validated and given a secret by the service). */
export interface NewSubscriptionRecord {
  /** Whose it is: the hex SHA-256 of the token that created it. */
  owner: string
  url: string
  events: readonly WebhookEventType[]
  description?: string
  disabled: boolean
  secret: string
}

/** A merge patch: absent fields are kept, `description: null` removes the description. */
export interface SubscriptionChanges {
  url?: string
  events?: readonly WebhookEventType[]
  description?: string | null
  disabled?: boolean
}

export interface SubscriptionQuery {
  limit: number
  /** Only subscriptions whose id is greater (keyset cursor, as for plants). */
  after?: bigint
}

export interface SubscriptionPage<S = WebhookSubscription> {
  subscriptions: S[]
  hasMore: boolean
}

export interface DeliveryQuery {
  limit: number
  /** Only deliveries whose id is smaller (newest first, so the cursor walks back in time). */
  before?: bigint
  status?: DeliveryStatus
  eventType?: WebhookEventType
}

export interface DeliveryPage {
  deliveries: WebhookDelivery[]
  hasMore: boolean
}

export type RetryResult =
  | { status: 'ok', delivery: WebhookDelivery }
  | { status: 'not-found' }
  | { status: 'subscription-disabled' }

/** What a dispatcher asks for: due deliveries it will attempt now, held under a lease. */
export interface ClaimRequest {
  /** Names this claim; only its holder can complete or release what it claimed. */
  lease: string
  now: number
  /** Claimed deliveries are not handed out again before now + leaseMs (unless completed or released). */
  leaseMs: number
  limit: number
  /** At most this many of one subscription per claim. */
  perSubscription: number
  /** Subscriptions to pass over: this dispatcher already has as many in flight as it allows. */
  skipSubscriptions: readonly bigint[]
  /** Owners to pass over: this dispatcher already has as many of theirs in flight as it allows one owner. */
  skipOwners?: readonly string[]
}

/** A claimed delivery with everything one attempt needs. */
export interface ClaimedDelivery {
  id: bigint
  subscriptionId: bigint
  /** Whose subscription: delivery slots are shared fairly between owners. */
  owner: string
  messageId: string
  eventType: WebhookEventType
  payload: string
  /** Attempts made before this one. */
  attempts: number
  url: string
  /** The current secret, then those rotations replaced while they are still honoured, newest first. */
  secrets: string[]
  /** The write that caused the event. */
  origin: EventOrigin
}

export interface DeliveryCompletion {
  id: bigint
  lease: string
  attemptedAt: number
  /** How long the attempt took (0 when absent). */
  durationMs?: number
  statusCode?: number
  error?: string
  /** The start of the answer's body, kept with the attempt. */
  responseBody?: string
  /** pending again (with nextAttemptAt), or finished. */
  status: DeliveryStatus
  nextAttemptAt?: number
  /** 410 Gone: disable the subscription now. */
  disableSubscription: boolean
  /**
   * Disable the subscription when this attempt failed and its attempts have been failing, without
   * a success in between, since this time or earlier.
   */
  failingDisableBefore: number
}

/** What waits to be delivered: pending deliveries of enabled subscriptions, and those that events still in the outbox will become. */
export interface Backlog {
  pending: number
  /** When the oldest of them was created (epoch ms); undefined when none waits. */
  oldestCreatedAt: number | undefined
}

export interface CompletionResult {
  /** False when the lease was no longer held (expired and claimed by another): nothing was written. */
  recorded: boolean
  /** True when this completion disabled the subscription. */
  subscriptionDisabled: boolean
}

/**
 * Webhook persistence, the same contract on SQLite and PostgreSQL (see the conformance tests).
 * Every subscription operation is scoped by owner: another owner's subscription is "not found".
 * Times passed in are epoch milliseconds from the service's clock.
 */
export interface WebhookStore {
  /**
   * Rejects with `subscription-limit` when the owner already has `maxPerOwner` subscriptions
   * (checked atomically with the insert: concurrent creates cannot pass it together).
   */
  createSubscription: (record: NewSubscriptionRecord, now: number, maxPerOwner?: number) => Promise<WebhookSubscription>
  listSubscriptions: (owner: string, query: SubscriptionQuery) => Promise<SubscriptionPage>
  getSubscription: (owner: string, id: bigint) => Promise<WebhookSubscription | undefined>
  /** Re-enabling, or a new URL, forgets how long the subscription has been failing. */
  updateSubscription: (owner: string, id: bigint, changes: SubscriptionChanges, now: number) => Promise<WebhookSubscription | undefined>
  /** Deletes the subscription with its deliveries. */
  deleteSubscription: (owner: string, id: bigint) => Promise<boolean>
  /**
   * Makes `secret` the current one; the one it replaces is honoured until `previousUntil`, and the
   * ones replaced before still until their own time (at most MAX_PREVIOUS_SECRETS of them).
   */
  rotateSecret: (owner: string, id: bigint, secret: string, previousUntil: number, now: number) => Promise<WebhookSubscription | undefined>
  /**
   * Newest first, every committed event included (events still in the outbox are fanned out
   * first); undefined when the subscription is not the owner's.
   */
  listDeliveries: (owner: string, subscriptionId: bigint, query: DeliveryQuery) => Promise<DeliveryPage | undefined>
  /** One delivery with its event and attempts; undefined when not the owner's subscription's. */
  getDelivery: (owner: string, subscriptionId: bigint, deliveryId: bigint) => Promise<DeliveryDetail | undefined>
  /**
   * Makes the subscription's failed deliveries created at `since` or later pending and due at `now`
   * (one more attempt each); resolves with how many, or undefined when not the owner's subscription.
   */
  recoverDeliveries: (owner: string, subscriptionId: bigint, since: number, now: number) => Promise<number | undefined>
  /** Makes the delivery pending and due now (one more attempt for a failed one). */
  retryDelivery: (owner: string, subscriptionId: bigint, deliveryId: bigint, now: number) => Promise<RetryResult>

  /**
   * Writes the event to the outbox in a transaction of its own (the plant writes use the
   * transactional enqueue functions of each store instead). Resolves with how many deliveries it
   * becomes: one per enabled subscription that asked for its type (none: nothing is written).
   * A subscription receives only the events written after it was created.
   */
  enqueue: (event: PlantEvent, now: number) => Promise<number>
  /**
   * Due deliveries of enabled subscriptions, now leased to `request.lease`, in a fair order: round
   * robin between owners, and within an owner between its subscriptions, the oldest due first. When
   * fewer are due than asked for, the oldest events of the outbox are fanned out into deliveries
   * first: events wait as single rows until a dispatcher needs them.
   */
  claimDue: (request: ClaimRequest) => Promise<ClaimedDelivery[]>
  completeDelivery: (completion: DeliveryCompletion) => Promise<CompletionResult>
  /** Gives claimed deliveries back untouched (no attempt counted), due as they were. */
  releaseDeliveries: (lease: string, ids: readonly bigint[]) => Promise<void>
  /**
   * Extends the leases of deliveries still being attempted to `until` (each only while its lease is
   * the one given): the heartbeat of a live instance, so a dead one's claims lapse within one lease
   * (seconds) instead of outlasting the longest attempt. Where several instances share the store
   * (PostgreSQL); absent on SQLite.
   */
  renewLeases?: (leases: ReadonlyArray<{ id: bigint, lease: string }>, until: number) => Promise<void>
  /**
   * Gives back every leased delivery, due as it was: for a store only one process uses at a time
   * (SQLite), where a lease found at start-up belongs to a process that died mid-attempt (killed,
   * crashed) and would otherwise hold its deliveries until the lease ran out (a minute or more).
   * Absent where other instances may hold leases (PostgreSQL). Resolves with how many.
   */
  releaseOrphanedLeases?: () => Promise<number>
  /**
   * Deletes deliveries created before `before` that are finished, or that wait on a disabled
   * subscription; resolves with how many. Pending deliveries of enabled subscriptions are kept.
   */
  pruneDeliveries: (before: number) => Promise<number>
  /** How many owners have an enabled subscription: the dispatcher shares its slots between them. */
  activeOwners: () => Promise<number>
  /** The backlog, for metrics (queue depth, age of the oldest). */
  backlog: () => Promise<Backlog>
  /**
   * Calls `wake` soon after another instance (or this one) enqueued deliveries; optional (SQLite
   * has one process: its writers call the dispatcher's wake()). Resolves with an unsubscribe.
   */
  listen?: (wake: () => void) => Promise<() => Promise<void>>
  close: () => Promise<void>
}
