import type { Static, TArray, TObject, TString } from '@sinclair/typebox'
import type { CreateFields, IdempotencyKey } from './idempotency.js'
import type { EventOrigin } from '../webhooks/origin.js'

/** `*`: any current row. Checked inside the write's transaction, so no other write can slip in between. */
export type IfMatch = '*' | readonly string[]

/** What the resource-neutral write rules know of a resource. */
export interface Resource<T> {
  /** As messages name one: `Plant 3 not found`. */
  readonly title: string
  etag(representation: T): string
}

export interface ResourceTypes {
  item: { id: bigint }
  create: { id?: bigint }
  replace: object
  changes: object
  query: { limit: number, after?: bigint }
}

export interface CreateResult<T> { item: T, replayed: boolean }

/** One contract on every store: rejects with a ServiceError code; each write writes its event in its transaction. */
export interface Repository<R extends ResourceTypes> {
  list(query: R['query']): Promise<{ items: Array<R['item']>, hasMore: boolean }>
  get(id: bigint): Promise<R['item'] | undefined>
  /** `admit` throws to refuse a create that is no replay, before it writes (a sandbox's cap). */
  create(
    item: R['create'], idempotency?: IdempotencyKey, origin?: EventOrigin, admit?: () => void
  ): Promise<CreateResult<R['item']>>
  replace(id: bigint, item: R['replace'], ifMatch?: IfMatch, origin?: EventOrigin): Promise<R['item']>
  update(id: bigint, changes: R['changes'], ifMatch?: IfMatch, origin?: EventOrigin): Promise<R['item']>
  delete(id: bigint, ifMatch?: IfMatch, origin?: EventOrigin): Promise<R['item']>
}

export const REPOSITORY_OPERATIONS = ['list', 'get', 'create', 'replace', 'update', 'delete'] as const satisfies
  ReadonlyArray<keyof Repository<ResourceTypes>>

/** How a column is stored: text, a signed 64-bit integer (read back as a bigint) or a double. */
export type ColumnKind = 'text' | 'integer' | 'real'

/** A resource's own columns in table order; `id`, `created_at` and `updated_at` are every table's. */
export type ColumnsDeclaration = Readonly<Record<string, { readonly kind: ColumnKind, readonly nullable: boolean }>>

export type ColumnValue = string | bigint | number | null

/** A row's own values by column; the declaration and the database keep kinds and nulls as declared. */
export type ColumnValues = Record<string, ColumnValue>

/** A stored row as a repository reads it; timestamps are epoch milliseconds. */
export interface StoredRow<V> { id: bigint, values: V, createdAt: number, updatedAt: number }

/** How a resource is stored in the table named by its collection; keys and chosen ids are in shared tables. */
export interface ResourceStorage<R extends ResourceTypes = ResourceTypes> {
  readonly columns: ColumnsDeclaration
  /** Equality filters of the list, each indexed with the id so a filtered page is a range scan. */
  readonly filters: ReadonlyArray<{ readonly column: string, value(query: R['query']): ColumnValue | undefined }>
  /** A create's or a replace's values: a create's id is the row's, not a value. */
  values(item: R['create'] | R['replace']): ColumnValues
  /** A merge patch over the current values: values equal to the current ones are a write that changes nothing. */
  update(current: ColumnValues, changes: R['changes']): ColumnValues
  item(row: StoredRow<ColumnValues>): R['item']
}

export interface ResourceSchemas {
  representation: TObject
  list: TArray
  create: TObject
  replace: TObject
  patch: TObject
  params: TObject<{ id: TString }>
  listQuery: TObject
}

/** What the document says of a resource that cannot be said the same way for every resource. */
export interface ResourceTexts {
  readonly tag: string
  readonly list: { readonly description: string, readonly badRequest: string }
  readonly create: { readonly description: string, readonly badRequest: string }
  readonly replace: { readonly description: string }
  readonly update: { readonly description: string }
  readonly scopes: { readonly read: string, readonly write: string }
  readonly events: { readonly created: string, readonly updated: string, readonly deleted: string }
}

/** One resource (src/resources/fields.ts derives it); methods are bivariant, so any is a plain ResourceDefinition. */
export interface ResourceDefinition<
  C extends string = string, N extends string = string, R extends ResourceTypes = ResourceTypes,
  S extends ResourceSchemas = ResourceSchemas
> extends Resource<R['item']> {
  /** The path segment, the repository's key in the Store, the scopes' prefix and the OpenAPI tag: `plants`. */
  readonly collection: C
  /** One of them, lower case: the event types' prefix and the events' subject (`plant.created`). */
  readonly name: N
  readonly schemas: S
  readonly texts: ResourceTexts
  readonly storage: ResourceStorage<R>
  readonly example: Omit<R['item'], 'id'> & { id: number }
  /** The representation as events carry it: field by field, so a bigint id is a JSON integer. */
  json(item: R['item']): string
  fromCreate(body: Static<S['create']>): R['create']
  /** A replace's or a patch's body as the store takes it: texts trimmed as declared, absent fields left out. */
  fromBody(body: Static<S['replace']>): R['replace']
  fromBody(body: Static<S['patch']>): R['changes']
  idempotencyFields(item: R['create']): CreateFields
  fromListQuery(query: Static<S['listQuery']>): R['query']
  /** The next page's query string after `limit` and `after`: the same filters (`&tag=…`), encoded. */
  filterQuery(query: R['query']): string
}

/** What a store's tables need of a resource: its collection names its table and keys its keys and chosen ids. */
export type StoredResource = Pick<ResourceDefinition, 'collection' | 'storage'>

export type RepositoriesOf<D extends readonly ResourceDefinition[]> = {
  readonly [X in D[number] as X['collection']]:
  X extends ResourceDefinition<string, string, infer R> ? Repository<R> : never
}
