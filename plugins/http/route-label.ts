import type { FastifyRequest } from 'fastify'

/** What logs, metrics and traces call a request that matched no route: one fixed value, never the URL. */
export const UNMATCHED_ROUTE = 'unmatched'

/**
 * The route template a request matched (`/plants/:id`), never its raw URL: a label with one value
 * per id or query string would grow a metric without bound and split one route into thousands.
 */
export function routeLabel (request: FastifyRequest): string {
  return request.routeOptions.url ?? knownPathRoutes.get(request) ?? UNMATCHED_ROUTE
}

/** Requests that matched no route although their path has one (a 405), and that path's route template. */
const knownPathRoutes = new WeakMap<FastifyRequest, string>()

/**
 * Labels a request that the router did not route because of its method (a 405) with the route
 * template of its path: a wrong method on `/plants/:id` is counted and logged under that route,
 * not with the unknown paths.
 */
export function labelUnroutedRequest (request: FastifyRequest, route: string): void {
  knownPathRoutes.set(request, route)
}
