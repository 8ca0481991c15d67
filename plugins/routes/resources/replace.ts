import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { writeConditionsHeaders } from '../../../src/schemas/headers.js'
import { ref } from '../../../src/schemas/ref.js'
import { resourceScope } from '../../../src/auth/scopes.js'
import {
  aOne, bodyWriteErrors, itemResponse, operationId, repositoryOf, withEtag, writeCondition, writeConditions,
  type ResourceRouteOptions
} from './shared.js'

/** `PUT /plants/{id}`: replaces what a client may set of one; never creates one. */
const replaceRoute: FastifyPluginAsyncTypebox<ResourceRouteOptions> = async (app, { resource }) => {
  const { collection, name, schemas } = resource
  app.put(`/${collection}/:id`, {
    config: { scope: resourceScope(resource, 'write') },
    schema: {
      operationId: operationId('replace', name),
      summary: `Replace ${aOne(resource)}`,
      description: `${resource.texts.replace.description} ${writeConditions(resource)}`,
      tags: [collection],
      params: schemas.params,
      headers: writeConditionsHeaders(name),
      body: ref(schemas.replace),
      response: {
        200: itemResponse(resource, `The ${name} as replaced`),
        ...bodyWriteErrors(resource, schemas.replace.$id ?? '', 'The body is not JSON')
      }
    }
  }, async (request, reply) => {
    const id = BigInt(request.params.id)
    const repository = repositoryOf(request, resource)
    const condition = await writeCondition(repository, resource, id, request.headers)
    return withEtag(
      reply,
      resource,
      await repository.replace(id, resource.fromReplace(request.body), condition, app.eventOrigin(request))
    )
  })
}

export default replaceRoute
