import { Type, type TSchema } from '@sinclair/typebox'
import {
  strongEtag, type ColumnKind, type ColumnsDeclaration, type ColumnValue, type ColumnValues, type ResourceDefinition,
  type ResourceSchemas, type ResourceTexts
} from './definition.js'
import { int64IdSchema, int64StringSchema } from '../schemas/int64.js'
import { cursorSchema, LIST_LIMIT_DEFAULT, listLimitSchema } from '../schemas/paging.js'
import { ref } from '../schemas/ref.js'
import { STORABLE_TEXT, STORABLE_TEXT_RULE, trimmedTextSchema } from '../schemas/text.js'
import { isoTime } from '../store/iso-time.js'

/**
 * One field of a resource: its schemas, column, row mapping, JSON and ETag all follow from it. Every
 * field is written by clients; `id`, `createdAt` and `updatedAt` are the stores' own.
 */
export interface FieldDeclaration {
  /** A text is 1 to `maxLength` storable characters; an integer or real is within `minimum`..`maximum`. */
  readonly kind: ColumnKind
  /** A text's: `The plant name` (trimmed) or `A free-form tag` (the document adds its length and rule). */
  readonly description: string
  readonly example: string | number
  readonly maxLength?: number
  readonly minimum?: number
  readonly maximum?: number
  /** Stored without surrounding white space. */
  readonly trimmed?: boolean
  /** Optional in bodies, null in a patch clears it, a NULL column. */
  readonly nullable?: boolean
  /** An equality filter of the list, with this description, indexed with the id. */
  readonly filter?: string
}

export type FieldsDeclaration = Readonly<Record<string, FieldDeclaration>>

type ValueOf<F extends FieldDeclaration> = F['kind'] extends 'text' ? string : number
type NullableOf<F extends FieldsDeclaration> = { [K in keyof F]: F[K]['nullable'] extends true ? K : never }[keyof F]
type FilterOf<F extends FieldsDeclaration> = { [K in keyof F]: F[K]['filter'] extends string ? K : never }[keyof F]

/** What a client writes: every field, the nullable ones optional. */
export type FieldValues<F extends FieldsDeclaration> =
  { -readonly [K in Exclude<keyof F, NullableOf<F>>]: ValueOf<F[K]> } &
  { -readonly [K in NullableOf<F>]?: ValueOf<F[K]> }

export interface FieldTypes<F extends FieldsDeclaration> {
  item: { id: bigint } & FieldValues<F> & { createdAt: string, updatedAt: string }
  create: { id?: bigint } & FieldValues<F>
  replace: FieldValues<F>
  changes: { -readonly [K in keyof F]?: ValueOf<F[K]> | (F[K]['nullable'] extends true ? null : never) }
  query: { limit: number, after?: bigint } & { -readonly [K in FilterOf<F>]?: string }
}

/** The declaration of a resource: its fields and the texts the document needs of it. */
export interface FieldsResource<C extends string, N extends string, F extends FieldsDeclaration> {
  readonly collection: C
  readonly name: N
  readonly title: string
  readonly table?: string
  readonly fields: F
  readonly texts: ResourceTexts
  /** The descriptions of the create, replace and patch bodies, and examples of the last two. */
  readonly bodies: {
    readonly create: string
    readonly replace: { readonly description: string, readonly example: object }
    readonly patch: { readonly description: string, readonly example: object }
  }
}

type Values = Record<string, unknown>
const TIME_EXAMPLE = '2026-01-02T03:04:05.678Z'
/** A larger number has already been rounded by the JSON parser: refused rather than stored as another id. */
const JSON_SAFE_ID_MAX = Number.MAX_SAFE_INTEGER

const columnOf = (field: string): string => field.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`)
const toColumn = (kind: ColumnKind, value: unknown): ColumnValue =>
  value === undefined || value === null ? null : kind === 'integer' ? BigInt(value as number) : value as ColumnValue
const fromColumn = (kind: ColumnKind, value: ColumnValue): unknown => kind === 'integer' ? Number(value) : value

const JSON_TYPES = { text: 'string', integer: 'integer', real: 'number' } as const

/** A field's schema options; `representation`: as served (a trimmed text is served without its input rule). */
function fieldOptions (f: FieldDeclaration, representation = false): Record<string, unknown> {
  const { description, example } = f
  if (f.kind !== 'text') return { minimum: f.minimum, maximum: f.maximum, description, examples: [example] }
  const maxLength = f.maxLength ?? 1
  if (f.trimmed === true && representation) return { minLength: 1, maxLength, description, examples: [example] }
  return {
    minLength: 1,
    maxLength,
    pattern: STORABLE_TEXT,
    description: f.trimmed === true
      ? description
      : `${description}, 1 to ${maxLength} characters; ${STORABLE_TEXT_RULE}`,
    examples: [example]
  }
}

/** In a patch, `null` clears a nullable field. */
function fieldSchema (f: FieldDeclaration, use: 'body' | 'patch' | 'representation' = 'body'): TSchema {
  if (f.nullable === true && use === 'patch') {
    const options = fieldOptions(f)
    const description = `${String(options.description)}; null clears it`
    return Type.Unsafe({ ...options, type: [JSON_TYPES[f.kind], 'null'], description })
  }
  if (f.kind === 'text' && f.trimmed === true && use !== 'representation') {
    return trimmedTextSchema(f.description, f.maxLength ?? 1, String(f.example))
  }
  return Type.Unsafe({ ...fieldOptions(f, use === 'representation'), type: JSON_TYPES[f.kind] })
}

function schemasOf ({ name, collection, title, fields, bodies }: FieldsResource<string, string, FieldsDeclaration>):
ResourceSchemas {
  const entries = Object.entries(fields)
  const object = (use: 'body' | 'patch' | 'representation') => Object.fromEntries(entries.map(([key, f]) =>
    [key, f.nullable === true || use === 'patch' ? Type.Optional(fieldSchema(f, use)) : fieldSchema(f, use)]))
  const written = Object.fromEntries(entries.map(([key, f]) => [key, f.example]))
  const example = { id: 1, ...written, createdAt: TIME_EXAMPLE, updatedAt: TIME_EXAMPLE }
  const time = (description: string) => Type.String({ format: 'date-time', description, examples: [TIME_EXAMPLE] })
  const representation = Type.Object({
    id: int64IdSchema(`The ${name} identifier (signed 64-bit)`),
    ...object('representation'),
    createdAt: time(`When the ${name} was created; never changes`),
    updatedAt: time(`When the ${name} was last changed; changes on every write`)
  }, { $id: title, additionalProperties: false, description: `A ${name}`, examples: [example] })
  const id = Type.Integer({
    minimum: 1,
    maximum: JSON_SAFE_ID_MAX,
    format: 'int64',
    description: `The id to give the ${name} (optional; the store assigns the next one when absent). ` +
      'A positive integer of at most 2^53 - 1, so that JSON carries it exactly, written as an integer ' +
      '(a fraction or an exponent, even `1.0` or `1e3`, is a 400); 409 when taken.',
    examples: [42]
  })
  const closed = ($id: string, { description, example }: { description: string, example: object }) =>
    ({ $id, additionalProperties: false, description, examples: [example] })
  const filters = entries.filter(([, f]) => f.filter !== undefined)
  return {
    representation,
    list: Type.Array(ref(representation), {
      $id: `${title}List`, description: `${capital(collection)} ordered by id`, examples: [[example]]
    }),
    create: Type.Object({ id: Type.Optional(id), ...object('body') },
      closed(`New${title}`, { description: bodies.create, example: written })),
    replace: Type.Object(object('body'), closed(`${title}Update`, bodies.replace)),
    patch: Type.Object(object('patch'), closed(`${title}Patch`, bodies.patch)),
    params: Type.Object({ id: int64StringSchema() }, { additionalProperties: false }),
    listQuery: Type.Object({
      limit: listLimitSchema(collection),
      after: cursorSchema(`Cursor: only ${collection} with a larger id`),
      ...Object.fromEntries(filters.map(([key, f]) =>
        [key, Type.Optional(Type.String({ ...fieldOptions(f), description: f.filter as string }))]))
    }, { additionalProperties: false })
  }
}

const capital = (text: string): string => `${text.charAt(0).toUpperCase()}${text.slice(1)}`

/**
 * A resource from its fields: schemas, columns (a field's name in snake case), row mapping, JSON, ETag,
 * filters and the conversions of bodies and queries, the same for every resource.
 */
export function defineResource<C extends string, N extends string, const F extends FieldsDeclaration> (
  d: FieldsResource<C, N, F>
): ResourceDefinition<C, N, FieldTypes<F>> {
  const entries = Object.entries(d.fields).map(([key, f]) => ({ key, column: columnOf(key), ...f }))
  const kept = entries.filter((f) => f.nullable !== true)
  const optional = entries.filter((f) => f.nullable === true)
  const columns: ColumnsDeclaration =
    Object.fromEntries(entries.map((f) => [f.column, { kind: f.kind, nullable: f.nullable === true }]))
  const schemas = schemasOf(d)
  /** A body's fields as the store takes them: texts trimmed when declared so, absent ones left out. */
  const input = (body: Values): Values => {
    const out: Values = {}
    for (const { key, trimmed } of entries) {
      const value = body[key]
      if (value !== undefined) out[key] = trimmed === true && typeof value === 'string' ? value.trim() : value
    }
    return out
  }
  const stored = (item: Values): ColumnValues =>
    Object.fromEntries(entries.map((f) => [f.column, toColumn(f.kind, item[f.key])])) as ColumnValues
  const json = (item: Values): string => {
    let out = `{"id":${String(item.id)}`
    for (const { key } of entries) {
      if (item[key] !== undefined) out += `,${JSON.stringify(key)}:${JSON.stringify(item[key])}`
    }
    return `${out},"createdAt":${JSON.stringify(item.createdAt)},"updatedAt":${JSON.stringify(item.updatedAt)}}`
  }
  const filters = entries.filter((f) => f.filter !== undefined)
  const definition: ResourceDefinition<C, N> = {
    collection: d.collection,
    name: d.name,
    title: d.title,
    texts: d.texts,
    schemas,
    example: (schemas.representation.examples as [ResourceDefinition['example']])[0],
    /** `updatedAt` changes on every write, so the ETag does too; a null is told apart from every text. */
    etag: (item: Values) => strongEtag([String(item.id), ...entries.map(({ key, nullable }) => {
      const value = item[key]
      return nullable !== true ? String(value) : value === undefined ? '' : `#${String(value)}`
    }), item.createdAt as string, item.updatedAt as string]),
    json,
    storage: {
      table: d.table ?? d.collection,
      columns,
      filters: filters.map(({ key, column, kind }) =>
        ({ column, value: (q: Values) => q[key] === undefined ? undefined : toColumn(kind, q[key]) })),
      create: stored,
      replace: stored,
      update: (current, changes: Values) => Object.fromEntries(entries.map(({ key, column, kind }) =>
        [column, changes[key] === undefined ? current[column] ?? null : toColumn(kind, changes[key])])) as ColumnValues,
      item: ({ id, values, createdAt, updatedAt }) => {
        const item: Values = { id }
        for (const { key, column, kind } of kept) item[key] = fromColumn(kind, values[column] ?? null)
        item.createdAt = isoTime(createdAt)
        // A row never changed has equal timestamps: format once.
        item.updatedAt = updatedAt === createdAt ? item.createdAt : isoTime(updatedAt)
        for (const { key, column, kind } of optional) {
          const value = values[column] ?? null
          if (value !== null) item[key] = fromColumn(kind, value)
        }
        return item as { id: bigint }
      }
    },
    fromCreate: ({ id, ...body }: Values) =>
      ({ ...(id !== undefined && { id: BigInt(id as number) }), ...input(body) }),
    fromReplace: input,
    fromPatch: input,
    idempotencyFields: (item: Values) => [item.id as bigint | undefined, ...entries.map(({ key }) => {
      const value = item[key]
      return typeof value === 'number' ? String(value) : value as string | undefined
    })],
    fromListQuery: ({ limit = LIST_LIMIT_DEFAULT, after, ...query }: Values) => ({
      limit, ...(after !== undefined && { after: BigInt(after as string) }), ...input(query)
    }) as { limit: number },
    filterQuery: (query: Values) => filters.map(({ key }) =>
      query[key] === undefined ? '' : `&${key}=${encodeURIComponent(String(query[key]))}`).join('')
  }
  return definition as unknown as ResourceDefinition<C, N, FieldTypes<F>>
}
