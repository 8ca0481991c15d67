import type { FastifyPluginAsync } from 'fastify'
import { requireScope } from '../../app/auth.js'
import createPlantRoute from './create.js'
import deletePlantRoute from './delete.js'
import getPlantRoute from './get.js'
import listPlantsRoute from './list.js'
import replacePlantRoute from './replace.js'
import updatePlantRoute from './update.js'

/** The plants resource, one operation per file. Every route here needs a bearer token. */
const plantsRoutes: FastifyPluginAsync = async (app) => {
  app.addHook('onRequest', app.authenticate)
  app.addHook('onRoute', requireScope)
  await app.register(listPlantsRoute)
  await app.register(getPlantRoute)
  await app.register(createPlantRoute)
  await app.register(replacePlantRoute)
  await app.register(updatePlantRoute)
  await app.register(deletePlantRoute)
}

export default plantsRoutes
