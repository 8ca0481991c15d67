import type { Static, TArray, TObject, TString } from '@sinclair/typebox'
import { sha256 } from './digest.js'
import type { CreateFields } from './idempotency.js'
import type { EventOrigin } from './webhooks/events.js'
import type { IdempotencyKey, IfMatch } from './store/store.js'

/** What the resource-neutral write rules know of a resource: its title and its ETag. */
export interface Resource<T> {
  /** As messages name one: `Plant 3 not found`. */
  readonly title: string
  etag(representation: T): string
}

/** A strong ETag from a representation's fields: the same on every store and instance. */
export function strongEtag (fields: readonly string[]): string {
  return `"${sha256(fields.join('\n'), 'base64url').slice(0, 22)}"`
}

/** The types of one resource's repository: its representation, and what each write takes. */
export interface ResourceTypes {
  item: { id: bigint }
  /** A create; `id` is the one the client chose, when it chose one. */
  create: { id?: bigint }
  replace: object
  changes: object
  query: { limit: number, after?: bigint }
}

export interface ListPage<T> {
  items: T[]
  hasMore: boolean
}

export interface CreateResult<T> {
  item: T
  /** True when an idempotency key matched an earlier create: `item` is that first result. */
  replayed: boolean
}

/**
 * A resource's repository, the same contract on every store. It rejects with a ServiceError code,
 * never an HTTP status; every write also writes its event in its own transaction.
 */
export interface Repository<R extends ResourceTypes> {
  list(query: R['query']): Promise<ListPage<R['item']>>
  get(id: bigint): Promise<R['item'] | undefined>
  create(item: R['create'], idempotency?: IdempotencyKey, origin?: EventOrigin): Promise<CreateResult<R['item']>>
  replace(id: bigint, item: R['replace'], ifMatch?: IfMatch, origin?: EventOrigin): Promise<R['item']>
  update(id: bigint, changes: R['changes'], ifMatch?: IfMatch, origin?: EventOrigin): Promise<R['item']>
  delete(id: bigint, ifMatch?: IfMatch, origin?: EventOrigin): Promise<R['item']>
}

/** The operations every repository has: metrics and spans name them `<collection>.<operation>`. */
export const REPOSITORY_OPERATIONS = ['list', 'get', 'create', 'replace', 'update', 'delete'] as const satisfies ReadonlyArray<keyof Repository<ResourceTypes>>

/** Each schema with the `$id` it is registered and documented under (`Plant`, `PlantList`, `NewPlant`, …). */
export interface ResourceSchemas {
  representation: TObject
  list: TArray
  create: TObject
  replace: TObject
  patch: TObject
  /** `{ id }`: a canonical int64 decimal string. */
  params: TObject<{ id: TString }>
  listQuery: TObject
}

/** What the OpenAPI document says of a resource's operations where it cannot be said the same way for every resource. */
export interface ResourceTexts {
  /** `The plants resource`-like tag description. */
  readonly tag: string
  readonly list: { readonly description: string, readonly badRequest: string }
  readonly create: { readonly description: string, readonly badRequest: string }
  readonly replace: { readonly description: string }
  readonly update: { readonly description: string }
  readonly scopes: { readonly read: string, readonly write: string }
  readonly events: { readonly created: string, readonly updated: string, readonly deleted: string }
}

/**
 * One resource, declared once (src/resources/): its routes, scopes, shared schemas, OpenAPI tag,
 * event types, store operations and write rules follow from this; its repositories are the
 * stores' own, a module per dialect. Functions are methods (checked bivariantly), so any
 * definition is a plain `ResourceDefinition` to code that serves every resource alike.
 */
export interface ResourceDefinition<
  C extends string = string,
  N extends string = string,
  R extends ResourceTypes = ResourceTypes,
  S extends ResourceSchemas = ResourceSchemas
> extends Resource<R['item']> {
  /** The path segment, the repository's key in the Store, the scopes' prefix and the OpenAPI tag: `plants`. */
  readonly collection: C
  /** One of them, lower case: the event types' prefix and the events' subject (`plant.created`). */
  readonly name: N
  readonly schemas: S
  readonly texts: ResourceTexts
  /** The representation the documents' examples show (ids as JSON numbers). */
  readonly example: Omit<R['item'], 'id'> & { id: number }
  /** The representation as events carry it: field by field, so a bigint id is a JSON integer. */
  json(item: R['item']): string
  fromCreate(body: Static<S['create']>): R['create']
  fromReplace(body: Static<S['replace']>): R['replace']
  fromPatch(body: Static<S['patch']>): R['changes']
  /** A create's fields in a fixed order, for its Idempotency-Key fingerprint. */
  idempotencyFields(item: R['create']): CreateFields
  /** A list request's query, as the repository takes it (`limit` filled in, `after` a bigint). */
  fromListQuery(query: Static<S['listQuery']>): R['query']
  /** The next page's query string after `limit` and `after`: the same filters (`&tag=…`), encoded. */
  filterQuery(query: R['query']): string
}

/** The repository type a definition declares. */
export type RepositoryOf<D> = D extends ResourceDefinition<string, string, infer R, ResourceSchemas> ? Repository<R> : never
