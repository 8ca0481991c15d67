import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { PlantNotFoundError } from '../src/errors.js'
import { errorResponses } from '../src/schemas/error.js'
import { PlantParamsSchema } from '../src/schemas/plant.js'

/** The plants resource. Every route here needs a bearer token. */
const plantsRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.addHook('onRequest', app.authenticate)

  app.delete('/plants/:id', {
    schema: {
      operationId: 'deletePlant',
      summary: 'Delete a plant',
      description: 'Deletes the plant with this id. Answers 204 with an empty body.',
      tags: ['plants'],
      params: PlantParamsSchema,
      response: {
        204: Type.Null({ description: 'The plant was deleted' }),
        ...errorResponses({
          400: 'The id is not a signed 64-bit integer',
          401: 'Missing or invalid bearer token',
          404: 'No plant has this id'
        })
      }
    }
  }, async (request, reply) => {
    // The int64 format has already checked the id, so BigInt() is exact and cannot throw.
    const id = BigInt(request.params.id)
    if (await app.store.delete(id) === 'not-found') throw new PlantNotFoundError(String(id))
    return reply.code(204).send(null)
  })
}

export default plantsRoutes
