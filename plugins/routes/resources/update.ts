import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { MERGE_PATCH } from '../../http/json-body.js'
import { writeConditionsHeaders } from '../../../src/schemas/headers.js'
import { ref } from '../../../src/schemas/ref.js'
import { resourceScope } from '../../../src/auth/scopes.js'
import {
  aOne, bodyWriteErrors, itemResponse, operationId, repositoryOf, withEtag, writeCondition, writeConditions,
  type ResourceRouteOptions
} from './shared.js'

/** `PATCH /plants/{id}`: a JSON merge patch (RFC 7396). */
const updateRoute: FastifyPluginAsyncTypebox<ResourceRouteOptions> = async (app, { resource }) => {
  const { collection, name, schemas } = resource
  app.patch(`/${collection}/:id`, {
    config: { scope: resourceScope(resource, 'write') },
    schema: {
      operationId: operationId('update', name),
      summary: `Update ${aOne(resource)}`,
      description: `${resource.texts.update.description} ${writeConditions(resource)}`,
      tags: [collection],
      // Only these routes read merge patches (plugins/app/requests.ts reads what `consumes` lists).
      consumes: [MERGE_PATCH, 'application/json'],
      params: schemas.params,
      headers: writeConditionsHeaders(name),
      body: ref(schemas.patch),
      response: {
        200: itemResponse(resource, `The ${name} as updated`),
        ...bodyWriteErrors(resource, schemas.patch.$id ?? '', 'The body is neither a merge patch nor JSON')
      }
    }
  }, async (request, reply) => {
    const id = BigInt(request.params.id)
    const repository = repositoryOf(request, resource)
    const condition = await writeCondition(repository, resource, id, request.headers)
    return withEtag(
      reply,
      resource,
      await repository.update(id, resource.fromPatch(request.body), condition, app.eventOrigin(request))
    )
  })
}

export default updateRoute
