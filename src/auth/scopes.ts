import { RESOURCES } from '../resources/index.js'

/** Read or change a resource (`plants:read`, `plants:write`), or manage one's own webhooks. */
export type Scope = `${string}:${'read' | 'write'}` | 'webhooks'

export const resourceScope = ({ collection }: { collection: string }, access: 'read' | 'write'): Scope =>
  `${collection}:${access}`

interface ScopedResource {
  readonly collection: string
  readonly texts: { readonly scopes: { readonly read: string, readonly write: string } }
}

export interface ScopeCatalog {
  /** In the document's order: each resource's read and write scope, then `webhooks`. */
  readonly scopes: readonly Scope[]
  /** What a plain token holds. */
  readonly all: ReadonlySet<Scope>
  readonly descriptions: Readonly<Record<Scope, string>>
  /** Write includes read (as GitHub's and Stripe's do): every write answers with the representation anyway. */
  readonly grantedBy: Readonly<Record<Scope, readonly Scope[]>>
  isScope (text: string): text is Scope
  /** The one check routes and webhook subscriptions use. */
  grants (held: ReadonlySet<Scope>, needed: Scope): boolean
}

export function scopeCatalog (resources: readonly ScopedResource[]): ScopeCatalog {
  // Each scope, what it says, and the scopes that grant it.
  const entries: Array<[Scope, string, Scope[]]> = [
    ...resources.flatMap((resource): Array<[Scope, string, Scope[]]> => {
      const [read, write] = [resourceScope(resource, 'read'), resourceScope(resource, 'write')]
      const { scopes } = resource.texts
      return [[read, scopes.read, [read, write]], [write, `${scopes.write}; includes \`${read}\``, [write]]]
    }),
    ['webhooks', 'Manage the caller\'s own webhook subscriptions', ['webhooks']]
  ]
  const descriptions = Object.fromEntries(entries.map(([scope, text]) => [scope, text])) as Record<Scope, string>
  const grantedBy = Object.fromEntries(entries.map(([scope, , by]) => [scope, by])) as Record<Scope, Scope[]>
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

/** For configuration and the CLI, which have no app; an app checks against its own catalog. */
export const DEFAULT_SCOPES = scopeCatalog(RESOURCES)

/** `id` keys stored data and the rate limit; `name` is what the log shows. Neither is ever the token. */
export interface Principal {
  /** Plain tokens: their hex SHA-256; named tokens: `token:<name>`; JWTs: `jwt:<sub>` (principal-id.ts). */
  readonly id: string
  readonly name: string
  readonly scopes: ReadonlySet<Scope>
  /** A JWT's `client_id` (or `azp`), for the log. */
  readonly client?: string
}
