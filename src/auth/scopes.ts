import { RESOURCES } from '../resources/index.js'

/**
 * What a token may do: read or change a resource (`plants:read`, `plants:write`), manage its own webhooks.
 * Which resources exist is an app's to say (its ScopeCatalog).
 */
export type Scope = `${string}:${'read' | 'write'}` | 'webhooks'

/** `plants:read`, `plants:write`: a resource's scopes, as routes declare them and tokens carry them. */
export const resourceScope = ({ collection }: { collection: string }, access: 'read' | 'write'): Scope =>
  `${collection}:${access}`

/** What the scopes are made from: a resource's collection and what its scopes say. */
export interface ScopedResource {
  readonly collection: string
  readonly texts: { readonly scopes: { readonly read: string, readonly write: string } }
}

/** The scopes of a list of resources (an app's), with what each grants and says. */
export interface ScopeCatalog {
  /** In the document's order: each resource's read and write scope, then `webhooks`. */
  readonly scopes: readonly Scope[]
  /** Every scope: what a plain token holds. */
  readonly all: ReadonlySet<Scope>
  /** What each scope grants, as the OpenAPI document and the docs say it. */
  readonly descriptions: Readonly<Record<Scope, string>>
  /**
   * The scopes that grant what a scope guards: itself, and for a resource's read scope its write
   * scope too. Write includes read (as GitHub's and Stripe's read-and-write permissions do): every
   * write answers with the representation, and 200/404/412 tell whether an id exists, so a write-only
   * token could never be kept from reading.
   */
  readonly grantedBy: Readonly<Record<Scope, readonly Scope[]>>
  isScope (text: string): text is Scope
  /** Whether a token holding `held` may do what `needed` guards: the one check routes and webhook subscriptions use. */
  grants (held: ReadonlySet<Scope>, needed: Scope): boolean
}

export function scopeCatalog (resources: readonly ScopedResource[]): ScopeCatalog {
  const descriptions = Object.fromEntries([
    ...resources.flatMap((resource) => [
      [resourceScope(resource, 'read'), resource.texts.scopes.read],
      [
        resourceScope(resource, 'write'),
        `${resource.texts.scopes.write}; includes \`${resourceScope(resource, 'read')}\``
      ]
    ]),
    ['webhooks', 'Manage the caller\'s own webhook subscriptions']
  ]) as Readonly<Record<Scope, string>>
  const grantedBy = Object.fromEntries([
    ...resources.flatMap((resource) => [
      [resourceScope(resource, 'read'), [resourceScope(resource, 'read'), resourceScope(resource, 'write')]],
      [resourceScope(resource, 'write'), [resourceScope(resource, 'write')]]
    ]),
    ['webhooks', ['webhooks']]
  ]) as Readonly<Record<Scope, readonly Scope[]>>
  const scopes = Object.keys(descriptions) as readonly Scope[]
  const all: ReadonlySet<Scope> = new Set(scopes)
  const isScope = (text: string): text is Scope => (all as ReadonlySet<string>).has(text)
  return {
    scopes,
    all,
    descriptions,
    grantedBy,
    isScope,
    // An unknown scope is granted by nothing, rather than a TypeError.
    grants: (held, needed) => (grantedBy[needed] ?? []).some((scope) => held.has(scope))
  }
}

/**
 * The scopes of the resources served by default (RESOURCES): configuration and the CLI, which have no
 * app, check tokens against these; an app checks against its own catalog.
 */
export const DEFAULT_SCOPES = scopeCatalog(RESOURCES)

/**
 * Who is calling, once authenticated. `id` is what stored data is keyed by (idempotency scopes,
 * webhook owners) and what the rate limit counts; `name` is what the access log shows. Neither is
 * ever the token.
 */
export interface Principal {
  /**
   * Plain API_TOKENS: the token's hex SHA-256 (what data stored before scopes is keyed by); named
   * tokens: `token:<name>`; JWTs: `jwt:<sub>` (a digest when long: principal-id.ts).
   */
  readonly id: string
  readonly name: string
  readonly scopes: ReadonlySet<Scope>
  /** A JWT's `client_id` (or `azp`): the OAuth client that obtained the token, for the log. */
  readonly client?: string
}
