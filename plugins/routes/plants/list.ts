import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { linkHeader } from '../../../src/schemas/headers.js'
import { LIST_LIMIT_DEFAULT, PlantListQuerySchema, PlantListSchema } from '../../../src/schemas/plant.js'
import { ref } from '../../../src/schemas/ref.js'
import { canonicalLimit, linkNextPage } from '../paging.js'
import { plantsErrorResponses } from './shared.js'

/** The URL of the page after `lastId`, with the same limit and filter. */
function nextPageUrl (limit: number, tag: string | undefined, lastId: bigint): string {
  const query = `limit=${limit}&after=${lastId}${tag === undefined ? '' : `&tag=${encodeURIComponent(tag)}`}`
  return `/plants?${query}`
}

/** `GET /plants`: a page of plants in id order, keyset-paginated. */
const listPlantsRoute: FastifyPluginAsyncTypebox = async (app) => {
  app.get('/plants', {
    config: { scope: 'plants:read' },
    schema: {
      operationId: 'listPlants',
      summary: 'List plants',
      description: 'Plants ordered by id, at most `limit` of them. When more follow, a `Link: <…>; rel="next"` ' +
        'header gives the next page (keyset pagination on `after`: a deep page costs what the first one does). ' +
        '`tag` keeps only plants with exactly that tag.',
      tags: ['plants'],
      querystring: PlantListQuerySchema,
      response: {
        200: ref(PlantListSchema, { description: 'A page of plants, ordered by id', headers: linkHeader }),
        ...plantsErrorResponses({
          400: 'A query parameter is invalid or unknown (limit outside 1..100 or not a canonical integer, after not an int64, tag empty or too long), or a name or value is not percent-encoded UTF-8'
        })
      }
    },
    preValidation: canonicalLimit
  }, async (request, reply) => {
    const { limit = LIST_LIMIT_DEFAULT, after, tag } = request.query
    const { plants, hasMore } = await request.store.plants.list({
      limit,
      ...(after !== undefined && { after: BigInt(after) }),
      ...(tag !== undefined && { tag })
    })
    const last = plants.at(-1)
    if (hasMore && last !== undefined) linkNextPage(reply, nextPageUrl(limit, tag, last.id))
    return plants
  })
}

export default listPlantsRoute
