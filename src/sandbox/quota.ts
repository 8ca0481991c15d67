import { plantLimit } from '../errors.js'
import type { PlantRepository } from '../resources/plants.js'

const PAGE = 1000

async function countUpTo (plants: PlantRepository, max: number): Promise<number> {
  let count = 0
  let after: bigint | undefined
  for (;;) {
    const page = await plants.list({ limit: Math.min(PAGE, max + 1 - count), ...(after !== undefined && { after }) })
    count += page.items.length
    const last = page.items.at(-1)
    if (!page.hasMore || last === undefined || count > max) return count
    after = last.id
  }
}

/**
 * At most `max` plants: creates of one tenant run one at a time on this instance, each after a
 * count, so concurrent creates cannot overshoot (instances sharing a tenant may, by one each).
 */
export function limitPlants (plants: PlantRepository, max: number): PlantRepository {
  let queue: Promise<unknown> = Promise.resolve()
  return {
    list: async (query) => await plants.list(query),
    get: async (id) => await plants.get(id),
    create: async (plant, idempotency, origin) => {
      const turn = queue.then(async () => {
        if (await countUpTo(plants, max) >= max) throw plantLimit(max)
        return await plants.create(plant, idempotency, origin)
      })
      queue = turn.catch(() => {})
      return await turn
    },
    replace: async (id, plant, ifMatch, origin) => await plants.replace(id, plant, ifMatch, origin),
    update: async (id, changes, ifMatch, origin) => await plants.update(id, changes, ifMatch, origin),
    delete: async (id, ifMatch, origin) => await plants.delete(id, ifMatch, origin)
  }
}
