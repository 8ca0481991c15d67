import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { plantEtag } from '../../../src/etag.js'
import { plantNotFound } from '../../../src/errors.js'
import { noneMatchFails, parseEntityTags } from '../../../src/preconditions.js'
import { etagHeader, IfNoneMatchHeaderSchema } from '../../../src/schemas/headers.js'
import { PlantParamsSchema } from '../../../src/schemas/plant.js'
import { plantResponse, plantsErrorResponses, SHARED_ERRORS } from './shared.js'

/** `GET /plants/{id}`: one plant with its ETag; 304 when the client's copy is current. */
const getPlantRoute: FastifyPluginAsyncTypebox = async (app) => {
  app.get('/plants/:id', {
    schema: {
      operationId: 'getPlant',
      summary: 'Get a plant',
      description: 'The plant with this id, with its `ETag`. With `If-None-Match` listing the current ETag ' +
        '(weak comparison) or `*`, answers 304 Not Modified with no body.',
      tags: ['plants'],
      params: PlantParamsSchema,
      headers: IfNoneMatchHeaderSchema,
      response: {
        200: plantResponse('The plant'),
        // No body at all (not even `null`), so the reply sends no Content-Type either.
        304: Type.Unsafe<undefined>({ type: 'null', description: 'Not modified: the copy named by If-None-Match is current', headers: etagHeader }),
        ...plantsErrorResponses({
          400: 'The id is not a signed 64-bit integer, or If-None-Match is malformed',
          404: SHARED_ERRORS.notFound
        })
      }
    }
  }, async (request, reply) => {
    const id = BigInt(request.params.id)
    const condition = parseEntityTags('If-None-Match', request.headers['if-none-match'])
    const plant = await app.store.get(id)
    if (plant === undefined) throw plantNotFound(id)
    const etag = plantEtag(plant)
    void reply.header('etag', etag)
    if (noneMatchFails(condition, etag)) return reply.code(304).send()
    return plant
  })
}

export default getPlantRoute
