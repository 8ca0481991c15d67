import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { notFound, preconditionFailed } from '../../../src/lib/errors.js'
import { matchFails, noneMatchFails, parseEntityTags } from '../../http/preconditions.js'
import { etagHeaderOf, readConditionsHeaders } from '../../../src/schemas/headers.js'
import { authenticatedErrorResponses } from '../../../src/schemas/error.js'
import { resourceScope } from '../../../src/auth/scopes.js'
import { aOne, itemResponse, operationId, repositoryOf, sharedErrors, type ResourceRouteOptions } from './shared.js'

/** `GET /plants/{id}`: one representation with its ETag; 304 when the client's copy is current. */
const getRoute: FastifyPluginAsyncTypebox<ResourceRouteOptions> = async (app, { resource }) => {
  const { collection, name } = resource
  app.get(`/${collection}/:id`, {
    config: { scope: resourceScope(resource, 'read') },
    schema: {
      operationId: operationId('get', name),
      summary: `Get ${aOne(resource)}`,
      description:
        `The ${name} with this id, with its \`ETag\`. With \`If-Match\`, only when its current ETag is listed ` +
        '(strong comparison) or `*`, else 412. With `If-None-Match` listing the current ETag (weak comparison) or ' +
        `\`*\`, answers 304 Not Modified with no body. A missing ${name} is a 404 whatever the conditions.`,
      tags: [collection],
      params: resource.schemas.params,
      headers: readConditionsHeaders(name),
      response: {
        200: itemResponse(resource, `The ${name}`),
        // No body at all (not even `null`), so the reply sends no Content-Type either.
        304: Type.Unsafe<undefined>({
          type: 'null',
          description: 'Not modified: the copy named by If-None-Match is current',
          headers: etagHeaderOf(name)
        }),
        ...authenticatedErrorResponses({
          400: 'The id is not a signed 64-bit integer, or If-Match or If-None-Match is malformed',
          404: sharedErrors(resource).notFound,
          412: `If-Match does not match the ${name}'s current ETag`
        })
      }
    }
  }, async (request, reply) => {
    const id = BigInt(request.params.id)
    const ifMatch = parseEntityTags('If-Match', request.headers['if-match'])
    const ifNoneMatch = parseEntityTags('If-None-Match', request.headers['if-none-match'])
    // A missing one is a 404 whatever the conditions: RFC 9110 §13.2.1 ignores them unless the answer is a 2xx.
    const item = await repositoryOf(request, resource).get(id)
    if (item === undefined) throw notFound(resource, id)
    const etag = resource.etag(item)
    // RFC 9110 §13.2.2: If-Match first (412), then If-None-Match (304).
    if (matchFails(ifMatch, etag)) throw preconditionFailed(resource, id)
    void reply.header('etag', etag)
    if (noneMatchFails(ifNoneMatch, etag)) return reply.code(304).send()
    return item
  })
}

export default getRoute
