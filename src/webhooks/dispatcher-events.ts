import type { WebhookEventType } from './events.js'
import type { DeliveryStatus } from './store-contract.js'

export interface AttemptTrace {
  headers: Record<string, string>
  end: (attempt: AttemptEvent) => void
}

export interface AttemptEvent {
  deliveryId: bigint
  subscriptionId: bigint
  messageId: string
  eventType: WebhookEventType
  attempt: number
  requestId?: string
  status: DeliveryStatus
  statusCode?: number
  error?: string
  nextAttemptAt?: number
  durationMs: number
  /** False when the lease had run out and another instance had taken the delivery over. */
  recorded: boolean
}

type StoreOperation = 'claim' | 'complete' | 'release' | 'renew' | 'prune'

export interface DispatcherEvents {
  attempt: [AttemptEvent]
  'subscription-disabled': [{ subscriptionId: bigint, reason: 'gone' | 'failing' }]
  pruned: [{ deleted: number }]
  /** The dispatcher carries on: unrecorded attempts come due again when their lease runs out. */
  'store-error': [{ operation: StoreOperation, error: unknown }]
}

/** How the dispatcher's parts tell its listeners (logging, metrics) what happened; it never throws. */
export type Report = <K extends keyof DispatcherEvents>(event: K, ...args: DispatcherEvents[K]) => void
