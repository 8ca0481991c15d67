import type { PlantStore } from './store.js'

/** The store operations that are timed and traced, by the names metrics and spans use. */
export const STORE_OPERATIONS = ['ping', 'list', 'get', 'create', 'replace', 'update', 'delete'] as const
export type StoreOperation = (typeof STORE_OPERATIONS)[number]

/**
 * Told when a store operation starts; calls the function it returns once the operation has settled
 * (`error` undefined when it succeeded). Metrics time operations with it, tracing opens a span.
 */
export type OperationObserver = (operation: StoreOperation) => (error: unknown) => void

/**
 * The same store, with every operation reported to the observers. Used only when metrics or
 * tracing are configured: without them the routes call the bare store, at no cost.
 */
export function instrumentStore (store: PlantStore, observers: readonly OperationObserver[]): PlantStore {
  if (observers.length === 0) return store
  // One observer (metrics or tracing alone, the usual case) is called directly: this runs on every
  // request, and an array of end callbacks per call would be garbage for nothing.
  const [only] = observers
  const start: OperationObserver = observers.length === 1 && only !== undefined
    ? only
    : (operation) => {
        const ends = observers.map((observer) => observer(operation))
        return (error) => { for (const end of ends) end(error) }
      }
  const observe = <A extends unknown[], R>(operation: StoreOperation, run: (...args: A) => Promise<R>) =>
    async (...args: A): Promise<R> => {
      const end = start(operation)
      try {
        const result = await run(...args)
        end(undefined)
        return result
      } catch (error) {
        end(error)
        throw error
      }
    }
  return {
    ping: observe('ping', () => store.ping()),
    list: observe('list', (query: Parameters<PlantStore['list']>[0]) => store.list(query)),
    get: observe('get', (id: bigint) => store.get(id)),
    create: observe('create', (...args: Parameters<PlantStore['create']>) => store.create(...args)),
    replace: observe('replace', (...args: Parameters<PlantStore['replace']>) => store.replace(...args)),
    update: observe('update', (...args: Parameters<PlantStore['update']>) => store.update(...args)),
    delete: observe('delete', (...args: Parameters<PlantStore['delete']>) => store.delete(...args)),
    webhooks: store.webhooks,
    close: () => store.close()
  }
}
