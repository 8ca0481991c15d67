import type { FastifyReply } from 'fastify'
import { plantEtag } from '../../../src/etag.js'
import { errorResponses } from '../../../src/schemas/error.js'
import { etagHeader } from '../../../src/schemas/headers.js'
import { PlantSchema, type Plant } from '../../../src/schemas/plant.js'
import { ref } from '../../../src/schemas/ref.js'

/** Error answers several plants routes share, described once. */
export const SHARED_ERRORS = {
  notFound: 'No plant has this id',
  stale: 'If-Match does not match the plant\'s current ETag (or the plant is gone)',
  tooLarge: 'The body is too large'
} as const

/**
 * The error responses of a plants route: every route here sits behind the bearer-auth hook, so each
 * documents the 401 (with the route's own statuses, and `4xx`/`5xx`).
 */
export const plantsErrorResponses = <const S extends number>(statuses: Record<S, string>) =>
  errorResponses({ ...statuses, 401: 'Missing or invalid bearer token' })

/** A plant response, documented with the ETag header every plant response carries. */
export const plantResponse = (description: string) => ref(PlantSchema, { description, headers: etagHeader })

/** Sets the plant's ETag on the reply and hands the plant back for sending. */
export function withEtag (reply: FastifyReply, plant: Plant): Plant {
  void reply.header('etag', plantEtag(plant))
  return plant
}
