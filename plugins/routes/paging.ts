import type { FastifyReply, FastifyRequest } from 'fastify'
import { invalidQuery } from '../../src/lib/errors.js'
import { isCanonicalInteger } from '../../src/schemas/int64.js'

/** A list route's preValidation: the schema would coerce `1e1`, `+5` or `05` into a `limit`. */
export async function canonicalLimit (request: FastifyRequest): Promise<void> {
  const { limit } = request.query as Record<string, unknown>
  if (typeof limit === 'string' && !isCanonicalInteger(limit)) {
    throw invalidQuery('querystring/limit must be a canonical decimal integer')
  }
}

export function linkNextPage (reply: FastifyReply, url: string): void {
  void reply.header('link', `<${url}>; rel="next"`)
}
