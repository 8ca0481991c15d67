import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { bodyWriteRoute, type ResourceRouteOptions } from './shared.js'

/** `PUT /plants/{id}`: replaces what a client may set of one; never creates one. */
const replaceRoute: FastifyPluginAsyncTypebox<ResourceRouteOptions> = async (app, { resource }) => {
  bodyWriteRoute(app, resource, {
    method: 'PUT',
    verb: 'replace',
    body: resource.schemas.replace,
    notJson: 'The body is not JSON',
    write: async (repository, id, body, condition, origin) =>
      await repository.replace(id, resource.fromBody(body), condition, origin)
  })
}

export default replaceRoute
