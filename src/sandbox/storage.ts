import type { Repository, ResourceTypes } from '../resources/definition.js'
import type { Store, StoreLog } from '../store/contract.js'
import type { StorageLimits } from '../store/trim.js'

/** What a tenant keeps at most of what outlives its plants (docs/operations.md states the size this bounds). */
export const TENANT_STORAGE_LIMITS: Readonly<StorageLimits> = {
  keys: 200, chosenIds: 200, deliveries: 200, events: 200
}

/** Writes between two trims: a tenant holds at most this many rows past each limit. */
const TRIM_EVERY_WRITES = 50

interface TenantTrimmer {
  /** The repository, whose writes count towards the next trim. */
  counting: <R extends Repository<ResourceTypes>>(repository: R) => R
  /** Trims what the writes since the last trim added: before the store closes. */
  flush: () => Promise<void>
}

/** The write that reaches TRIM_EVERY_WRITES trims before it answers, and the close trims what is left. */
export function tenantTrimmer (store: Pick<Store, 'trim'>, log?: Pick<StoreLog, 'error'>): TenantTrimmer {
  let untrimmed = 0
  const trim = async (): Promise<void> => {
    untrimmed = 0
    await store.trim(TENANT_STORAGE_LIMITS).catch((err: unknown) => {
      log?.error({ err }, 'sandbox: a tenant\'s storage could not be trimmed')
    })
  }
  const written = async <T>(result: T): Promise<T> => {
    if (++untrimmed >= TRIM_EVERY_WRITES) await trim()
    return result
  }
  return {
    counting: <R extends Repository<ResourceTypes>>(repository: R): R => ({
      ...repository,
      create: async (item, idempotency, origin, admit) =>
        await written(await repository.create(item, idempotency, origin, admit)),
      replace: async (id, item, ifMatch, origin) => await written(await repository.replace(id, item, ifMatch, origin)),
      update: async (id, changes, ifMatch, origin) =>
        await written(await repository.update(id, changes, ifMatch, origin)),
      delete: async (id, ifMatch, origin) => await written(await repository.delete(id, ifMatch, origin))
    } satisfies Repository<ResourceTypes> as R),
    flush: async () => { if (untrimmed > 0) await trim() }
  }
}
