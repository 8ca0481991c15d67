import type { ResourceEvent, WebhookEventType } from './events.js'
import type { EventOrigin } from './origin.js'
import type { PoolReporter } from '../store/pool-stats.js'

export interface WebhookSubscription {
  /** int64, far below 2^53 - 1, so JSON carries it exactly. */
  id: bigint
  url: string
  events: WebhookEventType[]
  description?: string
  disabled: boolean
  secret: string
  createdAt: string
  updatedAt: string
}

export type DeliveryStatus = 'pending' | 'succeeded' | 'failed'

export interface WebhookDelivery {
  id: bigint
  eventType: WebhookEventType
  status: DeliveryStatus
  attempts: number
  lastAttemptAt?: string
  lastStatusCode?: number
  lastError?: string
  nextAttemptAt?: string
  createdAt: string
}

export interface DeliveryAttempt {
  at: string
  durationMs: number
  statusCode?: number
  error?: string
  /** The first KEPT_RESPONSE_BYTES of the answer's body, when it answered. */
  responseBody?: string
}

/** A delivery with its event as sent and every attempt, oldest first. */
export interface DeliveryDetail extends WebhookDelivery {
  webhookId: string
  /** The body every attempt sent, byte for byte. */
  payload: string
  attemptLog: DeliveryAttempt[]
}

/** What the store keeps for a new subscription (validated and given a secret by the service). */
export interface NewSubscriptionRecord {
  /** The hex SHA-256 of the token that created it. */
  owner: string
  url: string
  events: readonly WebhookEventType[]
  description?: string
  disabled: boolean
  secret: string
}

/** A merge patch: `description: null` removes the description. */
export interface SubscriptionChanges {
  url?: string
  events?: readonly WebhookEventType[]
  description?: string | null
  disabled?: boolean
}

export interface SubscriptionQuery {
  limit: number
  after?: bigint
}

export interface SubscriptionPage<S = WebhookSubscription> {
  subscriptions: S[]
  hasMore: boolean
}

export interface DeliveryQuery {
  limit: number
  /** Newest first, so the cursor walks back in time. */
  before?: bigint
  status?: DeliveryStatus
  eventType?: WebhookEventType
}

export interface DeliveryPage {
  deliveries: WebhookDelivery[]
  hasMore: boolean
}

type RetryResult =
  | { status: 'ok', delivery: WebhookDelivery }
  | { status: 'not-found' }
  | { status: 'subscription-disabled' }

export interface ClaimRequest {
  /** Only its holder can complete or release what it claimed. */
  lease: string
  now: number
  leaseMs: number
  limit: number
  perSubscription: number
  skipSubscriptions: readonly bigint[]
  /** Owners to pass over: this dispatcher already has as many of theirs in flight as it allows one owner. */
  skipOwners?: readonly string[]
}

/** A subscription's URL and the secrets an attempt signs with now: the current one, then those still honoured. */
export interface SigningTarget {
  url: string
  secrets: string[]
}

export interface ClaimedDelivery {
  id: bigint
  subscriptionId: bigint
  /** Whose subscription: delivery slots are shared fairly between owners. */
  owner: string
  messageId: string
  eventType: WebhookEventType
  payload: string
  attempts: number
  url: string
  /** The current secret, then those rotations replaced while they are still honoured, newest first. */
  secrets: string[]
  origin: EventOrigin
}

export interface DeliveryCompletion {
  id: bigint
  lease: string
  attemptedAt: number
  durationMs?: number
  statusCode?: number
  error?: string
  responseBody?: string
  /** pending again (with nextAttemptAt), or finished. */
  status: DeliveryStatus
  nextAttemptAt?: number
  disableSubscription: boolean
  failingDisableBefore: number
}

export interface Backlog {
  pending: number
  oldestCreatedAt: number | undefined
}

export interface CompletionResult {
  /** False when the lease was no longer held (expired and claimed by another): nothing was written. */
  recorded: boolean
  subscriptionDisabled: boolean
}

/** Webhook persistence, the same on SQLite and PostgreSQL; every subscription operation is scoped by owner. */
export interface WebhookStore extends PoolReporter {
  /** Rejects with `subscription-limit` at `maxPerOwner`, checked atomically with the insert. */
  createSubscription: (record: NewSubscriptionRecord, now: number, maxPerOwner?: number) => Promise<WebhookSubscription>
  listSubscriptions: (owner: string, query: SubscriptionQuery) => Promise<SubscriptionPage>
  getSubscription: (owner: string, id: bigint) => Promise<WebhookSubscription | undefined>
  updateSubscription: (
    owner: string, id: bigint, changes: SubscriptionChanges, now: number
  ) => Promise<WebhookSubscription | undefined>
  deleteSubscription: (owner: string, id: bigint) => Promise<boolean>
  /** Where a test event goes and the secrets it is signed with at `now`, as a delivery's. */
  signingTarget: (owner: string, id: bigint, now: number) => Promise<SigningTarget | undefined>
  /** The replaced secret signs until `previousUntil`; earlier ones until their own time (MAX_PREVIOUS_SECRETS). */
  rotateSecret: (
    owner: string, id: bigint, secret: string, previousUntil: number, now: number
  ) => Promise<WebhookSubscription | undefined>
  /** Events still in the outbox are fanned out first. */
  listDeliveries: (owner: string, subscriptionId: bigint, query: DeliveryQuery) => Promise<DeliveryPage | undefined>
  /** One delivery with its event and attempts; undefined when not the owner's subscription's. */
  getDelivery: (owner: string, subscriptionId: bigint, deliveryId: bigint) => Promise<DeliveryDetail | undefined>
  /** Failed deliveries created at `since` or later become due at `now`; how many, or undefined when not the owner's. */
  recoverDeliveries: (owner: string, subscriptionId: bigint, since: number, now: number) => Promise<number | undefined>
  /** Makes the delivery pending and due now (one more attempt for a failed one). */
  retryDelivery: (owner: string, subscriptionId: bigint, deliveryId: bigint, now: number) => Promise<RetryResult>

  /** Repositories' writes use each store's transactional outbox instead; a subscription gets only later events. */
  enqueue: (event: ResourceEvent, now: number) => Promise<number>
  /** Round robin between owners, then their subscriptions; outbox events fan out only when a claim falls short. */
  claimDue: (request: ClaimRequest) => Promise<ClaimedDelivery[]>
  completeDelivery: (completion: DeliveryCompletion) => Promise<CompletionResult>
  /** Completions of distinct deliveries, each as completeDelivery would (successes first); results in their order. */
  completeDeliveries?: (completions: readonly DeliveryCompletion[]) => Promise<CompletionResult[]>
  releaseDeliveries: (lease: string, ids: readonly bigint[]) => Promise<void>
  /** PostgreSQL's heartbeat: extends live attempts' leases, so a dead instance's claims lapse within one lease. */
  renewLeases?: (leases: ReadonlyArray<{ id: bigint; lease: string }>, until: number) => Promise<void>
  /** SQLite only: a lease found at start-up belongs to a process that died mid-attempt. */
  releaseOrphanedLeases?: () => Promise<number>
  /** Pending deliveries of enabled subscriptions are kept. */
  pruneDeliveries: (before: number) => Promise<number>
  /** How many owners have an enabled subscription: the dispatcher shares its slots between them. */
  activeOwners: () => Promise<number>
  backlog: () => Promise<Backlog>
  /** True while no subscription, delivery or outbox event exists: a dispatcher has nothing to do yet. */
  empty?: () => Promise<boolean>
  /** Optional: SQLite has one process, whose writers call the dispatcher's wake(). */
  listen?: (wake: () => void) => Promise<() => Promise<void>>
  close: () => Promise<void>
}
