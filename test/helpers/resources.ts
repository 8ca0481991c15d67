import type { ResourceDefinition } from '../../src/resources/definition.js'
import { RESOURCES } from '../../src/resources/index.js'
import { PLANTS } from '../../src/resources/plants.js'
import { resourceScope, type Scope } from '../../src/auth/scopes.js'
import type { WebhookEventType } from '../../src/webhooks/events.js'

/**
 * What every declared resource brings to the API, as issue 32 names it, computed from RESOURCES'
 * collections, names and texts rather than from the routes' code: tests that pin operations,
 * scopes or event types follow the declarations, and a new resource joins them by itself.
 */

const capital = (text: string): string => `${text.charAt(0).toUpperCase()}${text.slice(1)}`

export interface ExpectedOperation {
  operationId: string
  /** Lower case, as the document's path items key them. */
  method: string
  /** As the document writes it: `/plants/{id}`. */
  path: string
  access: 'read' | 'write'
}

/** listPlants, headPlants (GET /plants); getPlant, headPlant; createPlant; replacePlant; updatePlant; deletePlant. */
export function resourceOperations (
  { collection, name }: Pick<ResourceDefinition, 'collection' | 'name'>
): ExpectedOperation[] {
  const items = `/${collection}`
  const one = `/${collection}/{id}`
  return [
    { operationId: `list${capital(collection)}`, method: 'get', path: items, access: 'read' },
    { operationId: `head${capital(collection)}`, method: 'head', path: items, access: 'read' },
    { operationId: `get${capital(name)}`, method: 'get', path: one, access: 'read' },
    { operationId: `head${capital(name)}`, method: 'head', path: one, access: 'read' },
    { operationId: `create${capital(name)}`, method: 'post', path: items, access: 'write' },
    { operationId: `replace${capital(name)}`, method: 'put', path: one, access: 'write' },
    { operationId: `update${capital(name)}`, method: 'patch', path: one, access: 'write' },
    { operationId: `delete${capital(name)}`, method: 'delete', path: one, access: 'write' }
  ]
}

/** Every resource's operations, in RESOURCES' order. */
export const RESOURCE_OPERATIONS: ReadonlyArray<ExpectedOperation & { resource: ResourceDefinition }> =
  RESOURCES.flatMap((resource) => resourceOperations(resource).map((operation) => ({ ...operation, resource })))

/**
 * The scopes that grant an access: a read, the resource's read or write scope (write includes read); a write, its write
 * scope.
 */
export const grantingScopes = (resource: Pick<ResourceDefinition, 'collection'>, access: 'read' | 'write'): Scope[] =>
  access === 'read'
    ? [resourceScope(resource, 'read'), resourceScope(resource, 'write')]
    : [resourceScope(resource, 'write')]

/** Each resource's created, updated and deleted, in RESOURCES' order: what a subscription gets by default. */
export const RESOURCE_EVENT_TYPES: readonly WebhookEventType[] =
  RESOURCES.flatMap(({ name }) =>
    (['created', 'updated', 'deleted'] as const).map((change) => `${name}.${change}` as const))

/** The enum's 400 message lists them: `"plant.created", "plant.updated", "plant.deleted"`. */
export const KNOWN_EVENT_TYPES_TEXT = RESOURCE_EVENT_TYPES.map((type) => `"${type}"`).join(', ')

/** Every event type a receiver can get: the resources' and the test event. */
export const EVENT_TYPES: readonly string[] = [...RESOURCE_EVENT_TYPES, 'webhook.test']

/** Every scope with what it grants, in RESOURCES' order: each resource's read and write scope, then `webhooks`. */
export const EXPECTED_SCOPES: ReadonlyArray<{ scope: Scope, description: string }> = [
  ...RESOURCES.flatMap((resource) => {
    const [read, write] = [resourceScope(resource, 'read'), resourceScope(resource, 'write')]
    return [
      { scope: read, description: resource.texts.scopes.read },
      { scope: write, description: `${resource.texts.scopes.write}; includes \`${read}\`` }
    ]
  }),
  { scope: 'webhooks', description: 'Manage the caller\'s own webhook subscriptions' }
]

/** Every scope, in that order. */
export const SCOPES: readonly Scope[] = EXPECTED_SCOPES.map(({ scope }) => scope)

/** `plants:read, plants:write, webhooks`: as configuration and the CLI list the known scopes. */
export const SCOPE_NAMES = SCOPES.join(', ')

/** As the document's security schemes list them: `plants:read` (list and get plants), … */
export const SCOPE_LIST_TEXT = EXPECTED_SCOPES
  .map(({ scope, description }) => `\`${scope}\` (${description.toLowerCase()})`).join(', ')

/** The plants' event types and scopes, from their declaration: what tests that write plants expect. */
export const PLANT_CREATED = `${PLANTS.name}.created` as const
export const PLANT_UPDATED = `${PLANTS.name}.updated` as const
export const PLANT_DELETED = `${PLANTS.name}.deleted` as const
export const PLANTS_READ = resourceScope(PLANTS, 'read')
export const PLANTS_WRITE = resourceScope(PLANTS, 'write')

/** Every resource's read scope: what a token needs to subscribe to every event type. */
export const READ_SCOPES: readonly Scope[] = RESOURCES.map((resource) => resourceScope(resource, 'read'))
/** Every resource's write scope: each grants its read scope too. */
export const WRITE_SCOPES: readonly Scope[] = RESOURCES.map((resource) => resourceScope(resource, 'write'))

/** A literal text inside a RegExp. */
export const escaped = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')

/** What backup and restore say a database holds: `2 plants`, `1 plant`; a resource left out of `counts` holds none. */
export const contentsText = (counts: Readonly<Record<string, number>>): string =>
  RESOURCES.map(({ collection, name }) => {
    const count = counts[collection] ?? 0
    return `${count} ${count === 1 ? name : collection}`
  }).join(', ')
