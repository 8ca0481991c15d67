import type { RepositoriesOf, ResourceDefinition } from '../resources/definition.js'
import type { ServedResources } from '../resources/index.js'
import type { WebhookStore } from '../webhooks/store-contract.js'
import type { MigrationReport } from './migration.js'
import type { PoolReporter } from './pool-stats.js'
import type { StorageLimits } from './trim.js'

/** The largest integer a JavaScript client holds exactly: past it, `ids-exhausted` rather than a rounded id. */
export const MAX_ASSIGNED_ID = 9007199254740991n

/** Told once per change of the store's state, not per request. */
export interface StoreLog {
  error: (details: object, message: string) => void
  info: (details: object, message: string) => void
}

/** One repository per resource (by default every one of src/resources/); knows nothing of HTTP. */
export type Store<D extends readonly ResourceDefinition[] = ServedResources> = RepositoriesOf<D> & PoolReporter & {
  readonly webhooks: WebhookStore
  readonly migration: MigrationReport
  ping(): Promise<void>
  /** Deletes the oldest rows past `limits` (a sandbox tenant's storage bound). */
  trim(limits: StorageLimits): Promise<void>
  /** Closes every repository: stop the webhook dispatcher first. */
  close(): Promise<void>
}
