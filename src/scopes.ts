import { RESOURCES, type AnyResource } from './resources/index.js'

/** What a token may do: read or change each resource (`plants:read`, `plants:write`), manage its own webhooks. */
export type Scope = `${AnyResource['collection']}:${'read' | 'write'}` | 'webhooks'

/** `plants:read`, `plants:write`: a resource's scopes, as routes declare them and tokens carry them. */
export const resourceScope = ({ collection }: { collection: string }, access: 'read' | 'write'): Scope =>
  `${collection}:${access}` as Scope

/** What each scope grants, as the OpenAPI document and the docs say it. */
export const SCOPE_DESCRIPTIONS = Object.fromEntries([
  ...RESOURCES.flatMap((resource) => [
    [resourceScope(resource, 'read'), resource.texts.scopes.read],
    [
      resourceScope(resource, 'write'),
      `${resource.texts.scopes.write}; includes \`${resourceScope(resource, 'read')}\``
    ]
  ]),
  ['webhooks', 'Manage the caller\'s own webhook subscriptions']
]) as Readonly<Record<Scope, string>>

export const SCOPES = Object.keys(SCOPE_DESCRIPTIONS) as readonly Scope[]

export const ALL_SCOPES: ReadonlySet<Scope> = new Set(SCOPES)

export const isScope = (text: string): text is Scope => (SCOPES as readonly string[]).includes(text)

/**
 * The scopes that grant what `scope` guards: itself, and for a resource's read scope its write
 * scope too. Write includes read (as GitHub's and Stripe's read-and-write permissions do): every
 * write answers with the representation, and 200/404/412 tell whether an id exists, so a write-only
 * token could never be kept from reading.
 */
export const GRANTED_BY: Readonly<Record<Scope, readonly Scope[]>> = Object.fromEntries([
  ...RESOURCES.flatMap((resource) => [
    [resourceScope(resource, 'read'), [resourceScope(resource, 'read'), resourceScope(resource, 'write')]],
    [resourceScope(resource, 'write'), [resourceScope(resource, 'write')]]
  ]),
  ['webhooks', ['webhooks']]
]) as Readonly<Record<Scope, readonly Scope[]>>

/** Whether a token holding `held` may do what `needed` guards: the one check routes and webhook subscriptions use. */
export const grants = (held: ReadonlySet<Scope>, needed: Scope): boolean =>
  GRANTED_BY[needed].some((scope) => held.has(scope))

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
