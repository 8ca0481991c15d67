import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { MERGE_PATCH } from '../../../src/json-body.js'
import { WriteConditionsHeaderSchema } from '../../../src/schemas/headers.js'
import { ref } from '../../../src/schemas/ref.js'
import {
  aOne, itemResponse, operationId, repositoryOf, resourceErrorResponses, sharedErrors, withEtag, writeCondition, writeConditions, scopeOf, type ResourceRouteOptions
} from './shared.js'

/** `PATCH /plants/{id}`: a JSON merge patch (RFC 7396). */
const updateRoute: FastifyPluginAsyncTypebox<ResourceRouteOptions> = async (app, { resource }) => {
  const { collection, name, schemas } = resource
  const errors = sharedErrors(resource)
  app.patch(`/${collection}/:id`, {
    config: { scope: scopeOf(resource, 'write') },
    schema: {
      operationId: operationId('update', name),
      summary: `Update ${aOne(resource)}`,
      description: `${resource.texts.update.description} ${writeConditions(resource)}`,
      tags: [collection],
      // Only these routes read merge patches (plugins/app/requests.ts reads what `consumes` lists).
      consumes: [MERGE_PATCH, 'application/json'],
      params: schemas.params,
      headers: WriteConditionsHeaderSchema,
      body: ref(schemas.patch),
      response: {
        200: itemResponse(resource, `The ${name} as updated`),
        ...resourceErrorResponses({
          400: `The id is not a signed 64-bit integer, the body is not a valid ${schemas.patch.$id ?? ''} (the message names the field), or If-Match or If-None-Match is malformed`,
          404: errors.notFound,
          412: errors.stale,
          413: errors.tooLarge,
          415: 'The body is neither a merge patch nor JSON'
        })
      }
    }
  }, async (request, reply) => {
    const id = BigInt(request.params.id)
    const repository = repositoryOf(request, resource)
    const condition = await writeCondition(repository, resource, id, request.headers)
    return withEtag(reply, resource, await repository.update(id, resource.fromPatch(request.body), condition, app.eventOrigin(request)))
  })
}

export default updateRoute
