import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { WriteConditionsHeaderSchema } from '../../../src/schemas/headers.js'
import { PlantParamsSchema } from '../../../src/schemas/plant.js'
import { plantsErrorResponses, SHARED_ERRORS, WRITE_CONDITIONS, writeCondition } from './shared.js'

/** `DELETE /plants/{id}`: 204 with an empty body. */
const deletePlantRoute: FastifyPluginAsyncTypebox = async (app) => {
  app.delete('/plants/:id', {
    config: { scope: 'plants:write' },
    schema: {
      operationId: 'deletePlant',
      summary: 'Delete a plant',
      description: `Deletes the plant with this id. Answers 204 with an empty body. ${WRITE_CONDITIONS}`,
      tags: ['plants'],
      params: PlantParamsSchema,
      headers: WriteConditionsHeaderSchema,
      response: {
        204: Type.Null({ description: 'The plant was deleted' }),
        ...plantsErrorResponses({
          400: 'The id is not a signed 64-bit integer, or If-Match or If-None-Match is malformed',
          404: SHARED_ERRORS.notFound,
          412: SHARED_ERRORS.stale
        })
      }
    }
  }, async (request, reply) => {
    // The int64 format has already checked the id, so BigInt() is exact and cannot throw.
    const id = BigInt(request.params.id)
    const condition = await writeCondition(request.store.plants, id, request.headers)
    await request.store.plants.delete(id, condition, app.eventOrigin(request))
    return reply.code(204).send(null)
  })
}

export default deletePlantRoute
