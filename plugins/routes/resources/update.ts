import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { MERGE_PATCH } from '../../http/json-body.js'
import { bodyWriteRoute, type ResourceRouteOptions } from './shared.js'

/** `PATCH /plants/{id}`: a JSON merge patch (RFC 7396). */
const updateRoute: FastifyPluginAsyncTypebox<ResourceRouteOptions> = async (app, { resource }) => {
  bodyWriteRoute(app, resource, {
    method: 'PATCH',
    verb: 'update',
    body: resource.schemas.patch,
    notJson: 'The body is neither a merge patch nor JSON',
    // Only these routes read merge patches (plugins/app/requests.ts reads what `consumes` lists).
    consumes: [MERGE_PATCH, 'application/json'],
    write: async (repository, id, body, condition, origin) =>
      await repository.update(id, resource.fromBody(body), condition, origin)
  })
}

export default updateRoute
