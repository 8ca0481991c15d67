import type { FastifyPluginAsync } from 'fastify'
import { requireScope } from '../../app/auth.js'
import createRoute from './create.js'
import deleteRoute from './delete.js'
import getRoute from './get.js'
import listRoute from './list.js'
import replaceRoute from './replace.js'
import updateRoute from './update.js'
import type { ResourceRouteOptions } from './shared.js'

/**
 * A resource's routes (`/plants`, `/plants/{id}`), one operation kind per file, made from its
 * declaration in src/resources/. Every route here needs a bearer token.
 */
const resourceRoutes: FastifyPluginAsync<ResourceRouteOptions> = async (app, options) => {
  app.addHook('onRequest', app.authenticate)
  app.addHook('onRoute', requireScope)
  await app.register(listRoute, options)
  await app.register(getRoute, options)
  await app.register(createRoute, options)
  await app.register(replaceRoute, options)
  await app.register(updateRoute, options)
  await app.register(deleteRoute, options)
}

export default resourceRoutes
