import type { FastifyInstance, FastifyRequest } from 'fastify'
import { insufficientScope } from '../../../src/lib/errors.js'
import type { ResourceDefinition } from '../../../src/resources/definition.js'
import { resourceScope } from '../../../src/auth/scopes.js'
import { eventTypesOf, missingEventScope } from '../../../src/webhooks/events.js'
import { authenticatedErrorResponses } from '../../../src/schemas/error.js'
import { ref } from '../../../src/schemas/ref.js'

/** Error answers several webhooks routes share, described once. */
export const WEBHOOK_ERRORS = {
  badId: 'The id is not a signed 64-bit integer',
  notFound: "This token has no subscription with this id (another token's subscriptions are not found either)",
  tooLarge: 'The body is too large',
  badUrl:
    'The URL is not an absolute http or https URL of at most 2048 characters without credentials, its host does not ' +
    'resolve (within WEBHOOK_TIMEOUT_MS), or it is (or resolves to) a non-public address (loopback, private, ' +
    'link-local, …); the message never says what a host name resolves to'
} as const

/** The error responses of a webhooks route: every route here sits behind the bearer-auth hook. */
export const webhooksErrorResponses = authenticatedErrorResponses

/** A subscription response, without its secret. */
export const webhookResponse = (app: FastifyInstance, description: string) =>
  ref(app.webhookSchemas.WebhookSchema, { description })

/**
 * Whose subscriptions a request addresses: its principal's id. The auth hook has identified the
 * caller (these routes are never reached without), so a missing principal is a bug, not a 401.
 */
export function ownerOf (request: FastifyRequest): string {
  const owner = request.principal?.id
  if (owner === undefined) throw new Error('an authenticated request without a principal')
  return owner
}

/** What the create and update routes say of the event list's scopes, for the app's resources. */
export const eventScopesText = (resources: readonly ResourceDefinition[]): string =>
  'Subscribing to a resource\'s events needs its read scope as well (' +
  resources.map((resource) =>
    `\`${resourceScope(resource, 'read')}\`, or \`${resourceScope(resource, 'write')}\`, for ${resource.name} events`
  ).join('; ') +
  '), since every delivery carries the representation: without it, 403 naming the scope.'

/**
 * Subscribing to a resource's events hands its representations to the receiver: the caller needs
 * the resource's read scope for every event type of `events`, checked at creation and on every
 * change of the list.
 */
export function checkEventScopes (request: FastifyRequest, events: readonly string[]): void {
  const { resources, scopeCatalog } = request.server
  const missing = missingEventScope(events, request.principal?.scopes ?? new Set(), scopeCatalog, resources)
  if (missing !== undefined) throw insufficientScope(missing)
}

/**
 * The events a new subscription asks for, checked: `events`, or when absent the event types of every
 * resource the caller may read, fixed at creation like a list it sent (a scope gained later, or a
 * resource served later, adds events by a PATCH of `events`, never by itself). A caller that may read
 * none is refused as for every event type: 403 naming the first read scope it lacks.
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
 * What exposes or redirects a subscription's events (a delivery's payload, a new URL, enabling it,
 * a retry, a recovery, a test) needs their read scopes too, as subscribing does: another token of
 * the same principal (a narrower JWT, a named token narrowed since) manages it with `webhooks`
 * alone but cannot read through it. Another owner's id stays a 404.
 */
export async function checkSubscriptionScopes (request: FastifyRequest, id: bigint): Promise<void> {
  checkEventScopes(request, (await request.webhooks.getSubscription(ownerOf(request), id)).events)
}

/** What the routes that expose or redirect a subscription's events say of the scopes they need. */
export const READ_SCOPES_TEXT =
  'The token needs the read scope of every event type the subscription has, as to subscribe: without it, 403 ' +
  'naming the scope.'
