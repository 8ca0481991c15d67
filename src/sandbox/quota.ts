import { collectionLimit } from '../lib/errors.js'
import type { Repository, ResourceDefinition, ResourceTypes } from '../resources/definition.js'

const PAGE = 1000

async function countUpTo (repository: Repository<ResourceTypes>, max: number): Promise<number> {
  let count = 0
  let after: bigint | undefined
  for (;;) {
    const page = await repository.list({
      limit: Math.min(PAGE, max + 1 - count),
      ...(after !== undefined && { after })
    })
    count += page.items.length
    const last = page.items.at(-1)
    if (!page.hasMore || last === undefined || count > max) return count
    after = last.id
  }
}

/**
 * At most `max` of a resource: one tenant's creates run one at a time here, each after a count, so concurrent
 * creates cannot overshoot (instances sharing a tenant may, by one each).
 */
export function limitCreates<R extends Repository<ResourceTypes>> (
  repository: R, resource: ResourceDefinition, max: number
): R {
  let queue: Promise<unknown> = Promise.resolve()
  return {
    ...repository,
    create: async (item, idempotency, origin) => {
      const turn = queue.then(async () => {
        // At the cap a keyed create may still replay one that landed: the store refuses only a new one.
        const full = await countUpTo(repository, max) >= max
        const refuse = (): never => { throw collectionLimit(resource, max) }
        return await repository.create(item, idempotency, origin, full ? refuse : undefined)
      })
      queue = turn.catch(() => {})
      return await turn
    }
  } satisfies Repository<ResourceTypes> as R
}
