import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { MERGE_PATCH } from '../../../src/json-body.js'
import { WriteConditionsHeaderSchema } from '../../../src/schemas/headers.js'
import { PlantParamsSchema, PlantPatchSchema } from '../../../src/schemas/plant.js'
import { ref } from '../../../src/schemas/ref.js'
import type { PlantChanges } from '../../../src/store/store.js'
import { plantResponse, plantsErrorResponses, SHARED_ERRORS, withEtag, WRITE_CONDITIONS, writeCondition } from './shared.js'

/** `PATCH /plants/{id}`: a JSON merge patch (RFC 7396) of a plant. */
const updatePlantRoute: FastifyPluginAsyncTypebox = async (app) => {
  app.patch('/plants/:id', {
    config: { scope: 'plants:write' },
    schema: {
      operationId: 'updatePlant',
      summary: 'Update a plant',
      description: 'Applies a JSON merge patch (RFC 7396) to the plant with this id: a field that is absent is kept, ' +
        '`"tag": null` clears the tag (the name cannot be cleared). Sent as `application/merge-patch+json` or plain JSON. ' +
        WRITE_CONDITIONS,
      tags: ['plants'],
      // Only this route reads merge patches (plugins/app/requests.ts reads what `consumes` lists).
      consumes: [MERGE_PATCH, 'application/json'],
      params: PlantParamsSchema,
      headers: WriteConditionsHeaderSchema,
      body: ref(PlantPatchSchema),
      response: {
        200: plantResponse('The plant as updated'),
        ...plantsErrorResponses({
          400: 'The id is not a signed 64-bit integer, the body is not a valid PlantPatch (the message names the field), or If-Match or If-None-Match is malformed',
          404: SHARED_ERRORS.notFound,
          412: SHARED_ERRORS.stale,
          413: SHARED_ERRORS.tooLarge,
          415: 'The body is neither a merge patch nor JSON'
        })
      }
    }
  }, async (request, reply) => {
    const id = BigInt(request.params.id)
    const condition = await writeCondition(request.store.plants, id, request.headers)
    const { name, tag } = request.body
    const changes: PlantChanges = {
      ...(name !== undefined && { name: name.trim() }),
      ...(tag !== undefined && { tag })
    }
    return withEtag(reply, await request.store.plants.update(id, changes, condition, app.eventOrigin(request)))
  })
}

export default updatePlantRoute
