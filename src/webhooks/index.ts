/** The webhook core: framework-free, no HTTP statuses; routes and plugins build on this. */
export { WebhookError, isWebhookError, type WebhookErrorCode } from './errors.js'
export {
  WEBHOOK_EVENT_TYPES, buildEventMessage, eventPayload, isWebhookEventType, newMessageId, plantJson,
  type EventMessage, type PlantEvent, type WebhookEventType
} from './events.js'
export { PREVIOUS_SECRET_TTL_MS, newWebhookSecret, signatureHeader } from './signing.js'
export {
  MAX_WEBHOOK_URL_LENGTH, checkWebhookUrl, defaultAddressPolicy, nonPublicRange, parseWebhookUrl, pinnedLookup,
  resolveWebhookTarget, systemResolver, type AddressPolicy, type ResolvedAddress, type Resolver
} from './url-policy.js'
export { MAX_RESPONSE_BYTES, attemptDelivery, type AttemptRequest, type AttemptResult, type RequestFunction } from './deliver.js'
export { DEFAULT_JITTER, DEFAULT_RETRY_SCHEDULE_MS, retryDelay, verdict, type AttemptVerdict } from './schedule.js'
export type * from './store.js'
export {
  MAX_DESCRIPTION_LENGTH, WebhookService, normalizeEvents, webhookOwner,
  type NewSubscriptionInput, type SubscriptionPatch, type WebhookServiceOptions
} from './service.js'
export { WebhookDispatcher, describeFailure, type AttemptEvent, type DispatcherEvents, type DispatcherOptions } from './dispatcher.js'
export { loadWebhookConfig, type WebhookConfig } from './config.js'
export { USER_AGENT } from './user-agent.js'
