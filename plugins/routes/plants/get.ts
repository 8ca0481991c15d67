import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { notFound, preconditionFailed } from '../../../src/errors.js'
import { matchFails, noneMatchFails, parseEntityTags } from '../../../src/preconditions.js'
import { etagHeader, ReadConditionsHeaderSchema } from '../../../src/schemas/headers.js'
import { PlantParamsSchema } from '../../../src/schemas/plant.js'
import { PLANT } from '../../../src/store/plants.js'
import { plantResponse, plantsErrorResponses, SHARED_ERRORS } from './shared.js'

/** `GET /plants/{id}`: one plant with its ETag; 304 when the client's copy is current. */
const getPlantRoute: FastifyPluginAsyncTypebox = async (app) => {
  app.get('/plants/:id', {
    config: { scope: 'plants:read' },
    schema: {
      operationId: 'getPlant',
      summary: 'Get a plant',
      description: 'The plant with this id, with its `ETag`. With `If-Match`, only when its current ETag is listed ' +
        '(strong comparison) or `*`, else 412. With `If-None-Match` listing the current ETag (weak comparison) or `*`, ' +
        'answers 304 Not Modified with no body. A missing plant is a 404 whatever the conditions.',
      tags: ['plants'],
      params: PlantParamsSchema,
      headers: ReadConditionsHeaderSchema,
      response: {
        200: plantResponse('The plant'),
        // No body at all (not even `null`), so the reply sends no Content-Type either.
        304: Type.Unsafe<undefined>({ type: 'null', description: 'Not modified: the copy named by If-None-Match is current', headers: etagHeader }),
        ...plantsErrorResponses({
          400: 'The id is not a signed 64-bit integer, or If-Match or If-None-Match is malformed',
          404: SHARED_ERRORS.notFound,
          412: 'If-Match does not match the plant\'s current ETag'
        })
      }
    }
  }, async (request, reply) => {
    const id = BigInt(request.params.id)
    const ifMatch = parseEntityTags('If-Match', request.headers['if-match'])
    const ifNoneMatch = parseEntityTags('If-None-Match', request.headers['if-none-match'])
    // A missing plant is a 404 whatever the conditions: RFC 9110 §13.2.1 has preconditions ignored
    // when the answer without them would not be a 2xx.
    const plant = await request.store.plants.get(id)
    if (plant === undefined) throw notFound(PLANT, id)
    const etag = PLANT.etag(plant)
    // RFC 9110 §13.2.2: If-Match first (412), then If-None-Match (304).
    if (matchFails(ifMatch, etag)) throw preconditionFailed(PLANT, id)
    void reply.header('etag', etag)
    if (noneMatchFails(ifNoneMatch, etag)) return reply.code(304).send()
    return plant
  })
}

export default getPlantRoute
