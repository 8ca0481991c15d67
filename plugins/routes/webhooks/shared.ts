import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyInstance, FastifyRequest, FastifySchema } from 'fastify'
import { insufficientScope } from '../../../src/lib/errors.js'
import type { ResourceDefinition } from '../../../src/resources/definition.js'
import { resourceScope } from '../../../src/auth/scopes.js'
import { eventTypesOf, missingEventScope } from '../../../src/webhooks/events.js'
import { authenticatedErrorResponses } from '../../../src/schemas/error.js'
import { ref } from '../../../src/schemas/ref.js'

export const WEBHOOK_ERRORS = {
  badId: 'The id is not a signed 64-bit integer',
  notFound: "This token has no subscription with this id (another token's subscriptions are not found either)",
  tooLarge: 'The body is too large',
  badUrl:
    'The URL is not an absolute http or https URL of at most 2048 characters without credentials, its host does not ' +
    'resolve (within WEBHOOK_TIMEOUT_MS), or it is (or resolves to) a non-public address (loopback, private, ' +
    'link-local, …); the message never says what a host name resolves to'
} as const

export const webhooksErrorResponses = authenticatedErrorResponses

export type WebhooksApp = Parameters<FastifyPluginAsyncTypebox>[0]

/** Every webhooks operation needs the `webhooks` scope and is tagged `webhooks`. */
export const webhooksRoute = <S extends FastifySchema>(schema: S) =>
  ({ config: { scope: 'webhooks' as const }, schema: { ...schema, tags: ['webhooks'] } })

/** Without its secret. */
export const webhookResponse = (app: FastifyInstance, description: string) =>
  ref(app.webhookSchemas.WebhookSchema, { description })

/** The auth hook has identified the caller, so a missing principal is a bug, not a 401. */
export function ownerOf (request: FastifyRequest): string {
  const owner = request.principal?.id
  if (owner === undefined) throw new Error('an authenticated request without a principal')
  return owner
}

export const eventScopesText = (resources: readonly ResourceDefinition[]): string =>
  'Subscribing to a resource\'s events needs its read scope as well (' +
  resources.map((resource) =>
    `\`${resourceScope(resource, 'read')}\`, or \`${resourceScope(resource, 'write')}\`, for ${resource.name} events`
  ).join('; ') +
  '), since every delivery carries the representation: without it, 403 naming the scope.'

/** Subscribing hands representations to the receiver: the caller needs the read scope of every event type. */
export function checkEventScopes (request: FastifyRequest, events: readonly string[]): void {
  const { resources, scopeCatalog } = request.server
  const missing = missingEventScope(events, request.principal?.scopes ?? new Set(), scopeCatalog, resources)
  if (missing !== undefined) throw insufficientScope(missing)
}

/**
 * `events`, or when absent those of every resource the caller may read, fixed at creation (only a PATCH adds
 * more later). A caller that may read none is refused as for every event type: 403 naming a scope it lacks.
 */
export function eventsToSubscribe (request: FastifyRequest, events: readonly string[] | undefined): readonly string[] {
  const { resources, scopeCatalog } = request.server
  const held = request.principal?.scopes ?? new Set()
  const chosen = events ??
    eventTypesOf(resources.filter((resource) => scopeCatalog.grants(held, resourceScope(resource, 'read'))))
  checkEventScopes(request, chosen.length > 0 ? chosen : request.server.eventTypes)
  return chosen
}

/**
 * Exposing or redirecting a subscription's events needs their read scopes too: another token of the same
 * principal (a narrower JWT) manages it with `webhooks` alone but cannot read through it.
 */
export async function checkSubscriptionScopes (request: FastifyRequest, id: bigint): Promise<void> {
  checkEventScopes(request, (await request.webhooks.getSubscription(ownerOf(request), id)).events)
}

export const READ_SCOPES_TEXT =
  'The token needs the read scope of every event type the subscription has, as to subscribe: without it, 403 ' +
  'naming the scope.'
