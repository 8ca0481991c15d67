/** What a token may do: read plants, change plants, manage its own webhooks. */
export const SCOPES = ['plants:read', 'plants:write', 'webhooks'] as const
export type Scope = (typeof SCOPES)[number]

export const ALL_SCOPES: ReadonlySet<Scope> = new Set(SCOPES)

export const isScope = (text: string): text is Scope => (SCOPES as readonly string[]).includes(text)

/** What each scope grants, as the OpenAPI document and the docs say it. */
export const SCOPE_DESCRIPTIONS: Readonly<Record<Scope, string>> = {
  'plants:read': 'List and get plants',
  'plants:write': 'Create, replace, update and delete plants',
  webhooks: 'Manage the caller\'s own webhook subscriptions'
}

/**
 * Who is calling, once authenticated. `id` is what stored data is keyed by (idempotency scopes,
 * webhook owners) and what the rate limit counts; `name` is what the access log shows. Neither is
 * ever the token.
 */
export interface Principal {
  /** Plain API_TOKENS: the token's hex SHA-256 (what data stored before scopes is keyed by); named tokens: `token:<name>`; JWTs: `jwt:<sub>`. */
  readonly id: string
  readonly name: string
  readonly scopes: ReadonlySet<Scope>
  /** A JWT's `client_id` (or `azp`): the OAuth client that obtained the token, for the log. */
  readonly client?: string
}
