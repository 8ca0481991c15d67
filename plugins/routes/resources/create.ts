import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { idempotencyKey } from '../../../src/resources/idempotency.js'
import {
  etagHeaderOf, IdempotencyKeyHeaderSchema, replayedHeader, resourceLocationHeader
} from '../../../src/schemas/headers.js'
import { ref } from '../../../src/schemas/ref.js'
import { authenticatedErrorResponses } from '../../../src/schemas/error.js'
import { resourceScope } from '../../../src/auth/scopes.js'
import {
  aOne, capitalized, operationId, repositoryOf, sharedErrors, withEtag, type ResourceRouteOptions
} from './shared.js'

/** `POST /plants`: creates one, with the id the client chose or the next one. */
const createRoute: FastifyPluginAsyncTypebox<ResourceRouteOptions> = async (app, { resource }) => {
  const { collection, name, texts } = resource
  app.post(`/${collection}`, {
    config: { scope: resourceScope(resource, 'write') },
    schema: {
      operationId: operationId('create', name),
      summary: `Create ${aOne(resource)}`,
      description: texts.create.description,
      tags: [collection],
      headers: IdempotencyKeyHeaderSchema,
      body: ref(resource.schemas.create),
      response: {
        201: ref(resource.schemas.representation, {
          description: `The ${name} was created`,
          headers: { ...resourceLocationHeader(name, collection), ...etagHeaderOf(name), ...replayedHeader }
        }),
        ...authenticatedErrorResponses({
          400: texts.create.badRequest,
          409: `${capitalized(aOne(resource))} already has this id`,
          413: sharedErrors(resource).tooLarge,
          415: 'The body is not JSON',
          422: 'This Idempotency-Key was already used with a different body'
        })
      }
    }
  }, async (request, reply) => {
    const item = resource.fromCreate(request.body)
    const key = request.headers['idempotency-key']
    // Keys are per principal: the auth hook has identified it (this route is never reached without).
    const caller = request.principal?.id
    if (key !== undefined && caller === undefined) throw new Error('an authenticated request without a principal')
    const idempotency = key === undefined || caller === undefined
      ? undefined
      : idempotencyKey(caller, key, resource.idempotencyFields(item))
    const result = await repositoryOf(request, resource).create(item, idempotency, app.eventOrigin(request))
    if (result.replayed) void reply.header('idempotent-replayed', 'true')
    void reply.code(201).header('location', `/${collection}/${result.item.id}`)
    return withEtag(reply, resource, result.item)
  })
}

export default createRoute
