import fp from 'fastify-plugin'
import type { ResourceDefinition } from '../../src/resources/definition.js'
import { scopeCatalog, type ScopeCatalog } from '../../src/auth/scopes.js'
import { eventTypesOf, type WebhookEventType } from '../../src/webhooks/events.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** The resources this app serves, in the document's order (buildApp's `resources`; RESOURCES by default). */
    resources: readonly ResourceDefinition[]
    /** Their scopes: what routes declare, the auth hook checks, plain tokens hold and the document lists. */
    scopeCatalog: ScopeCatalog
    /** Their event types, in order: what subscriptions may ask for, and what schemas and the document list. */
    eventTypes: readonly WebhookEventType[]
  }
}

export interface ResourcesPluginOptions {
  resources: readonly ResourceDefinition[]
}

/**
 * Every plugin reads the served resources from here rather than from RESOURCES, so an app can serve
 * another list (a resource declared in test code) with the same routes, checks and document.
 */
export default fp<ResourcesPluginOptions>(async function resourcesPlugin (app, { resources }) {
  app.decorate('resources', resources)
  app.decorate('scopeCatalog', scopeCatalog(resources))
  app.decorate('eventTypes', eventTypesOf(resources))
}, { name: 'resources' })
