import type { FastifyRequest } from 'fastify'

/** What logs, metrics and traces call a request that matched no route: one fixed value, never the URL. */
export const UNMATCHED_ROUTE = 'unmatched'

/**
 * The route template a request matched (`/plants/:id`), never its raw URL: a label with one value
 * per id or query string would grow a metric without bound and split one route into thousands.
 */
export function routeLabel (request: FastifyRequest): string {
  return request.routeOptions.url ?? UNMATCHED_ROUTE
}
