import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { writeConditionsHeaders } from '../../../src/schemas/headers.js'
import { authenticatedErrorResponses } from '../../../src/schemas/error.js'
import { resourceScope } from '../../../src/auth/scopes.js'
import {
  aOne, operationId, repositoryOf, sharedErrors, writeCondition, writeConditions, type ResourceRouteOptions
} from './shared.js'

/** `DELETE /plants/{id}`: 204 with an empty body. */
const deleteRoute: FastifyPluginAsyncTypebox<ResourceRouteOptions> = async (app, { resource }) => {
  const { collection, name } = resource
  const errors = sharedErrors(resource)
  app.delete(`/${collection}/:id`, {
    config: { scope: resourceScope(resource, 'write') },
    schema: {
      operationId: operationId('delete', name),
      summary: `Delete ${aOne(resource)}`,
      description: `Deletes the ${name} with this id. Answers 204 with an empty body. ${writeConditions(resource)}`,
      tags: [collection],
      params: resource.schemas.params,
      headers: writeConditionsHeaders(name),
      response: {
        204: Type.Null({ description: `The ${name} was deleted` }),
        ...authenticatedErrorResponses({
          400: 'The id is not a signed 64-bit integer, or If-Match or If-None-Match is malformed',
          404: errors.notFound,
          412: errors.stale
        })
      }
    }
  }, async (request, reply) => {
    const id = BigInt(request.params.id)
    const repository = repositoryOf(request, resource)
    const condition = await writeCondition(repository, resource, id, request.headers)
    await repository.delete(id, condition, app.eventOrigin(request))
    return reply.code(204).send(null)
  })
}

export default deleteRoute
