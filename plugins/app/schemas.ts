import fp from 'fastify-plugin'
import { ErrorSchema } from '../../src/schemas/error.js'
import { NewPlantSchema, PlantListSchema, PlantPatchSchema, PlantSchema, PlantUpdateSchema } from '../../src/schemas/plant.js'

/**
 * Registers the shared schemas at the root, so routes `$ref` them, the serializer compiles them
 * once, and the OpenAPI document names them under `components/schemas`.
 */
export default fp(async function schemasPlugin (app) {
  app.addSchema(ErrorSchema)
  app.addSchema(PlantSchema)
  app.addSchema(PlantListSchema)
  app.addSchema(NewPlantSchema)
  app.addSchema(PlantUpdateSchema)
  app.addSchema(PlantPatchSchema)
}, { name: 'schemas' })
