import type { EventOrigin, PlantEvent, WebhookEventType } from './events.js'

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

export interface SubscriptionPage {
  subscriptions: WebhookSubscription[]
  hasMore: boolean
}

export interface DeliveryQuery {
  limit: number
  /** Newest first, so the cursor walks back in time. */
  before?: bigint
}

export interface DeliveryPage {
  deliveries: WebhookDelivery[]
  hasMore: boolean
}

export type RetryResult =
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
}

export interface ClaimedDelivery {
  id: bigint
  subscriptionId: bigint
  messageId: string
  eventType: WebhookEventType
  payload: string
  attempts: number
  url: string
  /** The current secret, then the one a rotation replaced while it is still honoured. */
  secrets: string[]
  origin: EventOrigin
}

export interface DeliveryCompletion {
  id: bigint
  lease: string
  attemptedAt: number
  statusCode?: number
  error?: string
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

/** Webhook persistence, the same contract on SQLite and PostgreSQL; every subscription operation is scoped by owner. */
export interface WebhookStore {
  createSubscription: (record: NewSubscriptionRecord, now: number) => Promise<WebhookSubscription>
  listSubscriptions: (owner: string, query: SubscriptionQuery) => Promise<SubscriptionPage>
  getSubscription: (owner: string, id: bigint) => Promise<WebhookSubscription | undefined>
  updateSubscription: (owner: string, id: bigint, changes: SubscriptionChanges, now: number) => Promise<WebhookSubscription | undefined>
  deleteSubscription: (owner: string, id: bigint) => Promise<boolean>
  rotateSecret: (owner: string, id: bigint, secret: string, previousUntil: number, now: number) => Promise<WebhookSubscription | undefined>
  /** Events still in the outbox are fanned out first. */
  listDeliveries: (owner: string, subscriptionId: bigint, query: DeliveryQuery) => Promise<DeliveryPage | undefined>
  retryDelivery: (owner: string, subscriptionId: bigint, deliveryId: bigint, now: number) => Promise<RetryResult>

  /** The plant writes use each store's transactional enqueue instead; a subscription gets only later events. */
  enqueue: (event: PlantEvent, now: number) => Promise<number>
  /** Events wait in the outbox as single rows until a claim falls short and fans them out. */
  claimDue: (request: ClaimRequest) => Promise<ClaimedDelivery[]>
  completeDelivery: (completion: DeliveryCompletion) => Promise<CompletionResult>
  releaseDeliveries: (lease: string, ids: readonly bigint[]) => Promise<void>
  /** SQLite only: a lease found at start-up belongs to a process that died mid-attempt. */
  releaseOrphanedLeases?: () => Promise<number>
  /** Pending deliveries of enabled subscriptions are kept. */
  pruneDeliveries: (before: number) => Promise<number>
  backlog: () => Promise<Backlog>
  /** Optional: SQLite has one process, whose writers call the dispatcher's wake(). */
  listen?: (wake: () => void) => Promise<() => Promise<void>>
  close: () => Promise<void>
}
