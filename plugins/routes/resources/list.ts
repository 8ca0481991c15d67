import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { resourceLinkHeader } from '../../../src/schemas/headers.js'
import { ref } from '../../../src/schemas/ref.js'
import { canonicalLimit, linkNextPage } from '../paging.js'
import { authenticatedErrorResponses } from '../../../src/schemas/error.js'
import { resourceScope } from '../../../src/auth/scopes.js'
import { operationId, repositoryOf, type ResourceRouteOptions } from './shared.js'

/** `GET /plants`: a page in id order, keyset-paginated. */
const listRoute: FastifyPluginAsyncTypebox<ResourceRouteOptions> = async (app, { resource }) => {
  const { collection, texts } = resource
  app.get(`/${collection}`, {
    config: { scope: resourceScope(resource, 'read') },
    schema: {
      operationId: operationId('list', collection),
      summary: `List ${collection}`,
      description: texts.list.description,
      tags: [collection],
      querystring: resource.schemas.listQuery,
      response: {
        200: ref(resource.schemas.list, {
          description: `A page of ${collection}, ordered by id`,
          headers: resourceLinkHeader(collection)
        }),
        ...authenticatedErrorResponses({ 400: texts.list.badRequest })
      }
    },
    preValidation: canonicalLimit
  }, async (request, reply) => {
    const query = resource.fromListQuery(request.query)
    const { items, hasMore } = await repositoryOf(request, resource).list(query)
    const last = items.at(-1)
    if (hasMore && last !== undefined) {
      linkNextPage(reply, `/${collection}?limit=${query.limit}&after=${last.id}${resource.filterQuery(query)}`)
    }
    return items
  })
}

export default listRoute
