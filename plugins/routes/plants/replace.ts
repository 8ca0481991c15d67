import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { WriteConditionsHeaderSchema } from '../../../src/schemas/headers.js'
import { PlantParamsSchema, PlantUpdateSchema } from '../../../src/schemas/plant.js'
import { ref } from '../../../src/schemas/ref.js'
import { plantResponse, plantsErrorResponses, SHARED_ERRORS, withEtag, WRITE_CONDITIONS, writeCondition } from './shared.js'

/** `PUT /plants/{id}`: replaces a plant's name and tag. */
const replacePlantRoute: FastifyPluginAsyncTypebox = async (app) => {
  app.put('/plants/:id', {
    config: { scope: 'plants:write' },
    schema: {
      operationId: 'replacePlant',
      summary: 'Replace a plant',
      description: 'Replaces the name and tag of the plant with this id (a missing tag clears it); never creates a plant. ' +
        WRITE_CONDITIONS,
      tags: ['plants'],
      params: PlantParamsSchema,
      headers: WriteConditionsHeaderSchema,
      body: ref(PlantUpdateSchema),
      response: {
        200: plantResponse('The plant as replaced'),
        ...plantsErrorResponses({
          400: 'The id is not a signed 64-bit integer, the body is not a valid PlantUpdate (the message names the field), or If-Match or If-None-Match is malformed',
          404: SHARED_ERRORS.notFound,
          412: SHARED_ERRORS.stale,
          413: SHARED_ERRORS.tooLarge,
          415: 'The body is not JSON'
        })
      }
    }
  }, async (request, reply) => {
    const id = BigInt(request.params.id)
    const condition = await writeCondition(request.store.plants, id, request.headers)
    const { name, tag } = request.body
    return withEtag(reply, await request.store.plants.replace(id, { name: name.trim(), ...(tag !== undefined && { tag }) }, condition, app.eventOrigin(request)))
  })
}

export default replacePlantRoute
