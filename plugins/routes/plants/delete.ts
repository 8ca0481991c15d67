import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { ifMatchForStore, parseEntityTags } from '../../../src/preconditions.js'
import { IfMatchHeaderSchema } from '../../../src/schemas/headers.js'
import { PlantParamsSchema } from '../../../src/schemas/plant.js'
import { plantsErrorResponses, SHARED_ERRORS } from './shared.js'

/** `DELETE /plants/{id}`: 204 with an empty body. */
const deletePlantRoute: FastifyPluginAsyncTypebox = async (app) => {
  app.delete('/plants/:id', {
    schema: {
      operationId: 'deletePlant',
      summary: 'Delete a plant',
      description: 'Deletes the plant with this id. Answers 204 with an empty body. With `If-Match`, only when the ' +
        'plant\'s current ETag is listed (or `*`), else 412.',
      tags: ['plants'],
      params: PlantParamsSchema,
      headers: IfMatchHeaderSchema,
      response: {
        204: Type.Null({ description: 'The plant was deleted' }),
        ...plantsErrorResponses({
          400: 'The id is not a signed 64-bit integer, or If-Match is malformed',
          404: SHARED_ERRORS.notFound,
          412: SHARED_ERRORS.stale
        })
      }
    }
  }, async (request, reply) => {
    // The int64 format has already checked the id, so BigInt() is exact and cannot throw.
    const id = BigInt(request.params.id)
    const condition = parseEntityTags('If-Match', request.headers['if-match'])
    await app.store.delete(id, ifMatchForStore(condition))
    return reply.code(204).send(null)
  })
}

export default deletePlantRoute
