import type { FastifyPluginAsync } from 'fastify'
import { requireScope } from '../../app/auth.js'
import createRoute from './create.js'
import deleteRoute from './delete.js'
import getRoute from './get.js'
import listRoute from './list.js'
import replaceRoute from './replace.js'
import updateRoute from './update.js'
import type { ResourceRouteOptions } from './shared.js'

/** A resource's routes (`/plants`, `/plants/{id}`) from its declaration, one operation kind per file. */
const resourceRoutes: FastifyPluginAsync<ResourceRouteOptions> = async (app, options) => {
  app.addHook('onRequest', app.authenticate)
  app.addHook('onRoute', requireScope)
  // In the document's order.
  for (const route of [listRoute, getRoute, createRoute, replaceRoute, updateRoute, deleteRoute]) {
    await app.register(route, options)
  }
}

export default resourceRoutes
