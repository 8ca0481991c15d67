import type { FastifyRequest } from 'fastify'

/** Requests that matched no route although their path has one (a 405), and that path's route template. */
const knownPathRoutes = new WeakMap<FastifyRequest, string>()

/** The route template (`/plants/:id`), never the raw URL: one value per id would grow a metric without bound. */
export function routeLabel (request: FastifyRequest): string {
  return request.routeOptions.url ?? knownPathRoutes.get(request) ?? 'unmatched'
}

/** A wrong method on `/plants/:id` (a 405) is counted and logged under that route, not with the unknown paths. */
export function labelUnroutedRequest (request: FastifyRequest, route: string): void {
  knownPathRoutes.set(request, route)
}
