import type { FastifyReply } from 'fastify'
import { parseEntityTags, writePrecondition } from '../../../src/preconditions.js'
import { authenticatedErrorResponses } from '../../../src/schemas/error.js'
import { etagHeader } from '../../../src/schemas/headers.js'
import { PlantSchema, type Plant } from '../../../src/schemas/plant.js'
import { ref } from '../../../src/schemas/ref.js'
import { PLANT } from '../../../src/store/plants.js'
import type { IfMatch, PlantRepository } from '../../../src/store/store.js'

/** How every write treats If-Match and If-None-Match, said once in each write's description. */
export const WRITE_CONDITIONS = 'With `If-Match`, only when the plant\'s current ETag is listed (or `*`); with `If-None-Match`, only ' +
  'when it is not (`*`: only if there is no plant, so a 412 on an existing one); else 412 and nothing changes.'

/** Error answers several plants routes share, described once. */
export const SHARED_ERRORS = {
  notFound: 'No plant has this id',
  stale: 'If-Match does not match the plant\'s current ETag (or the plant is gone), or If-None-Match does',
  tooLarge: 'The body is too large'
} as const

/** The error responses of a plants route: every route here sits behind the bearer-auth hook. */
export const plantsErrorResponses = authenticatedErrorResponses

/** A plant response, documented with the ETag header every plant response carries. */
export const plantResponse = (description: string) => ref(PlantSchema, { description, headers: etagHeader })

/** Sets the plant's ETag on the reply and hands the plant back for sending. */
export function withEtag (reply: FastifyReply, plant: Plant): Plant {
  void reply.header('etag', PLANT.etag(plant))
  return plant
}

/** The store precondition of a write to plant `id`, from its If-Match and If-None-Match headers (400 when malformed). */
export async function writeCondition (plants: PlantRepository, id: bigint, headers: { 'if-match'?: string, 'if-none-match'?: string }): Promise<IfMatch | undefined> {
  const ifMatch = parseEntityTags('If-Match', headers['if-match'])
  const ifNoneMatch = parseEntityTags('If-None-Match', headers['if-none-match'])
  return await writePrecondition(PLANT, id, ifMatch, ifNoneMatch, async (plantId) => await plants.get(plantId))
}
