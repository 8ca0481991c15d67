import { REPOSITORY_OPERATIONS } from '../resources/definition.js'
import type { WebhookStore } from '../webhooks/store-contract.js'
import type { Store } from './contract.js'

const WEBHOOK_OPERATIONS = [
  'createSubscription', 'listSubscriptions', 'getSubscription', 'updateSubscription', 'deleteSubscription',
  'rotateSecret', 'signingTarget', 'listDeliveries', 'getDelivery', 'recoverDeliveries', 'retryDelivery'
] as const satisfies ReadonlyArray<keyof WebhookStore>

/** What the repositories of `resources` (an app's) and the webhook store time and trace, by repository. */
const instrumented = (resources: readonly Collection[]): ReadonlyArray<readonly [string, readonly string[]]> => [
  ...resources.map(({ collection }) => [collection, REPOSITORY_OPERATIONS] as const),
  ['webhooks', WEBHOOK_OPERATIONS]
]

interface Collection { readonly collection: string }

/** `<repository>.<operation>`; the dispatcher's own calls have metrics of their own. */
export type StoreOperation =
  | 'ping'
  | `${string}.${(typeof REPOSITORY_OPERATIONS)[number]}`
  | `webhooks.${(typeof WEBHOOK_OPERATIONS)[number]}`

/** Every operation a store serving `resources` reports, in order. */
export const storeOperations = (resources: readonly Collection[]): StoreOperation[] => [
  'ping',
  ...instrumented(resources).flatMap(([repository, operations]) =>
    operations.map((operation) => `${repository}.${operation}` as StoreOperation))
]

/** Told when a store operation starts; what it returns is called once it settled (`error` undefined: success). */
export type OperationObserver = (operation: StoreOperation) => (error: unknown) => void

type AsyncFunction = (...args: never[]) => Promise<unknown>

function observed<F extends AsyncFunction> (start: OperationObserver, operation: StoreOperation, run: F): F {
  return (async (...args: Parameters<F>) => {
    const end = start(operation)
    try {
      const result = await run(...args)
      end(undefined)
      return result
    } catch (error) {
      end(error)
      throw error
    }
  }) as F
}

function instrumentRepository<R extends object> (
  name: string, repository: R, operations: readonly string[], start: OperationObserver
): R {
  const wrapped: Record<string, unknown> = Object.create(repository)
  for (const key of operations) {
    const run = (repository as Record<string, unknown>)[key]
    if (typeof run === 'function') {
      wrapped[key] = observed(start, `${name}.${key}` as StoreOperation, (run as AsyncFunction).bind(repository))
    }
  }
  return wrapped as R
}

/** The same store, every listed operation reported to the observers (none: the bare store, at no cost). */
export function instrumentStore (
  store: Store, observers: readonly OperationObserver[], resources: readonly Collection[]
): Store {
  if (observers.length === 0) return store
  // One observer, the usual case, is called directly: no array of end callbacks per request.
  const [only] = observers
  const start: OperationObserver = observers.length === 1 && only !== undefined
    ? only
    : (operation) => {
        const ends = observers.map((observer) => observer(operation))
        return (error) => { for (const end of ends) end(error) }
      }
  const repositories = Object.fromEntries(instrumented(resources).map(([name, operations]) =>
    [name, instrumentRepository(name, store[name as keyof Store] as object, operations, start)]))
  return {
    ...store,
    ...repositories,
    ping: observed(start, 'ping', async () => { await store.ping() }),
    close: async () => { await store.close() }
  }
}
