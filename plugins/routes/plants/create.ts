import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { idempotencyKey } from '../../../src/idempotency.js'
import { etagHeader, IdempotencyKeyHeaderSchema, locationHeader, replayedHeader } from '../../../src/schemas/headers.js'
import { NewPlantSchema, PlantSchema } from '../../../src/schemas/plant.js'
import { ref } from '../../../src/schemas/ref.js'
import type { NewPlant } from '../../../src/store/store.js'
import { plantsErrorResponses, SHARED_ERRORS, withEtag } from './shared.js'

/** `POST /plants`: creates a plant, with the id the client chose or the next one. */
const createPlantRoute: FastifyPluginAsyncTypebox = async (app) => {
  app.post('/plants', {
    config: { scope: 'plants:write' },
    schema: {
      operationId: 'createPlant',
      summary: 'Create a plant',
      description: 'Creates a plant and answers 201 with it and `Location: /plants/{id}`. `id` is optional (clients of ' +
        'the original `NewPlant`, which required it, keep working): when given it must be free, else 409. ' +
        'With an `Idempotency-Key`, a retry of the same request within 24 hours answers the first 201 again.',
      tags: ['plants'],
      headers: IdempotencyKeyHeaderSchema,
      body: ref(NewPlantSchema),
      response: {
        201: ref(PlantSchema, { description: 'The plant was created', headers: { ...locationHeader, ...etagHeader, ...replayedHeader } }),
        ...plantsErrorResponses({
          400: 'The body is not a valid NewPlant (the message names the field; an id must be written without a fraction or exponent), or the Idempotency-Key is malformed',
          409: 'A plant already has this id',
          413: SHARED_ERRORS.tooLarge,
          415: 'The body is not JSON',
          422: 'This Idempotency-Key was already used with a different body'
        })
      }
    }
  }, async (request, reply) => {
    const { id, name, tag } = request.body
    const plant: NewPlant = {
      ...(id !== undefined && { id: BigInt(id) }),
      name: name.trim(),
      ...(tag !== undefined && { tag })
    }
    const key = request.headers['idempotency-key']
    // Keys are per principal: the auth hook has identified it (this route is never reached without).
    const caller = request.principal?.id
    if (key !== undefined && caller === undefined) throw new Error('an authenticated request without a principal')
    const result = await request.store.plants.create(plant, key === undefined || caller === undefined ? undefined : idempotencyKey(caller, key, [plant.id, plant.name, plant.tag]), app.eventOrigin(request))
    if (result.replayed) void reply.header('idempotent-replayed', 'true')
    void reply.code(201).header('location', `/plants/${result.plant.id}`)
    return withEtag(reply, result.plant)
  })
}

export default createPlantRoute
