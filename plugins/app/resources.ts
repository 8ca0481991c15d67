import fp from 'fastify-plugin'
import type { ResourceDefinition } from '../../src/resources/definition.js'
import { scopeCatalog, type ScopeCatalog } from '../../src/auth/scopes.js'
import { eventTypesOf, type WebhookEventType } from '../../src/webhooks/events.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** In the document's order. */
    resources: readonly ResourceDefinition[]
    scopeCatalog: ScopeCatalog
    eventTypes: readonly WebhookEventType[]
  }
}

/** Plugins read the served resources here, not from RESOURCES, so an app can serve another list (tests do). */
export default fp<{ resources: readonly ResourceDefinition[] }>(async function resourcesPlugin (app, { resources }) {
  app.decorate('resources', resources)
  app.decorate('scopeCatalog', scopeCatalog(resources))
  app.decorate('eventTypes', eventTypesOf(resources))
}, { name: 'resources' })
