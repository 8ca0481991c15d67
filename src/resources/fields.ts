import { Type, type TSchema } from '@sinclair/typebox'
import type {
  ColumnKind, ColumnValue, ColumnValues, ResourceDefinition, ResourceSchemas, ResourceTexts
} from './definition.js'
import { sha256 } from '../lib/digest.js'
import { int64IdSchema, int64StringSchema } from '../schemas/int64.js'
import { cursorSchema, LIST_LIMIT_DEFAULT, listLimitSchema } from '../schemas/paging.js'
import { ref } from '../schemas/ref.js'
import { STORABLE_TEXT, STORABLE_TEXT_RULE, trimmedTextSchema } from '../schemas/text.js'
import { TIME_EXAMPLE, timeSchema } from '../schemas/time.js'
import { isoTime } from '../store/iso-time.js'

/** One field: its schemas, column (its name in snake case), row mapping, JSON and ETag follow from it. */
interface FieldDeclaration {
  readonly kind: ColumnKind
  /** A trimmed text's is its own (`The plant name`); another text's gets its length and rule appended. */
  readonly description: string
  readonly example: string | number
  /** A text is 1 to `maxLength` storable characters, stored `trimmed` or as given. */
  readonly maxLength?: number
  readonly trimmed?: boolean
  readonly minimum?: number
  readonly maximum?: number
  /** Optional in bodies, cleared by a patch's null, a NULL column. */
  readonly nullable?: boolean
  /** The description of an equality filter of the list on it. */
  readonly filter?: string
}

export type FieldsDeclaration = Readonly<Record<string, FieldDeclaration>>

type ValueOf<F extends FieldDeclaration> = F['kind'] extends 'text' ? string : number
type Keys<F, P extends keyof FieldDeclaration, V> = { [K in keyof F]: F[K] extends Record<P, V> ? K : never }[keyof F]
type FieldValues<F extends FieldsDeclaration> = { -readonly [K in Exclude<keyof F, Keys<F, 'nullable', true>>]:
  ValueOf<F[K]> } & { -readonly [K in Keys<F, 'nullable', true>]?: ValueOf<F[K]> }

/** The repository's types: every field is written by clients; `id` and the times are the stores'. */
export interface FieldTypes<F extends FieldsDeclaration> {
  item: { id: bigint } & FieldValues<F> & { createdAt: string, updatedAt: string }
  create: { id?: bigint } & FieldValues<F>
  replace: FieldValues<F>
  changes: { -readonly [K in keyof F]?: ValueOf<F[K]> | (F[K] extends Record<'nullable', true> ? null : never) }
  query: { limit: number, after?: bigint } & { -readonly [K in Keys<F, 'filter', string>]?: string }
}

interface BodyText { readonly description: string, readonly example: object }

/** A resource as declared: its fields, and the texts the document cannot derive. */
interface FieldsResource<C extends string, N extends string, F extends FieldsDeclaration> {
  readonly collection: C
  readonly name: N
  readonly title: string
  readonly fields: F
  readonly texts: ResourceTexts
  readonly bodies: { readonly create: string, readonly replace: BodyText, readonly patch: BodyText }
}

type Values = Record<string, unknown>

const columnOf = (field: string): string => field.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`)
const toColumn = (kind: ColumnKind, value: unknown): ColumnValue =>
  value === undefined || value === null ? null : kind === 'integer' ? BigInt(value as number) : value as ColumnValue
const fromColumn = (kind: ColumnKind, value: ColumnValue): unknown => kind === 'integer' ? Number(value) : value

const JSON_TYPES = { text: 'string', integer: 'integer', real: 'number' } as const
type Use = 'body' | 'patch' | 'representation'

/** A field's schema; a trimmed text is served without its input rule, a nullable one patched with null. */
function fieldSchema (f: FieldDeclaration, use: Use = 'body', extra: object = {}): TSchema {
  const { description, example, maxLength = 1, trimmed = false } = f
  if (f.kind === 'text' && trimmed && use !== 'representation') {
    return trimmedTextSchema(description, maxLength, String(example))
  }
  const told = f.kind !== 'text' || trimmed
    ? description
    : `${description}, 1 to ${maxLength} characters; ${STORABLE_TEXT_RULE}`
  const options = f.kind !== 'text'
    ? { minimum: f.minimum, maximum: f.maximum, description }
    : { minLength: 1, maxLength, ...(!trimmed && { pattern: STORABLE_TEXT }), description: told }
  const type = f.nullable === true && use === 'patch' ? [JSON_TYPES[f.kind], 'null'] : JSON_TYPES[f.kind]
  const cleared = Array.isArray(type) ? { description: `${told}; null clears it` } : {}
  return Type.Unsafe({ ...options, examples: [example], type, ...cleared, ...extra })
}

function schemasOf ({ name, collection, title, fields, bodies }: FieldsResource<string, string, FieldsDeclaration>):
ResourceSchemas {
  const entries = Object.entries(fields)
  const object = (use: Use) => Object.fromEntries(entries.map(([key, f]) =>
    [key, f.nullable === true || use === 'patch' ? Type.Optional(fieldSchema(f, use)) : fieldSchema(f, use)]))
  const written = Object.fromEntries(entries.map(([key, f]) => [key, f.example]))
  const example = { id: 1, ...written, createdAt: TIME_EXAMPLE, updatedAt: TIME_EXAMPLE }
  const representation = Type.Object({
    id: int64IdSchema(`The ${name} identifier (signed 64-bit)`),
    ...object('representation'),
    createdAt: timeSchema(`When the ${name} was created; never changes`),
    updatedAt: timeSchema(`When the ${name} was last changed; changes on every write`)
  }, { $id: title, additionalProperties: false, description: `A ${name}`, examples: [example] })
  const given = `The id to give the ${name} (optional; the store assigns the next one when absent). ` +
    'A positive integer of at most 2^53 - 1, so that JSON carries it exactly, written as an integer ' +
    '(a fraction or an exponent, even `1.0` or `1e3`, is a 400); 409 when taken.'
  // A larger number has already been rounded by the JSON parser: refused rather than stored as another id.
  const id = Type.Integer({ minimum: 1, maximum: 2 ** 53 - 1, format: 'int64', description: given, examples: [42] })
  const closed = ($id: string, { description, example }: { description: string, example: object }) =>
    ({ $id, additionalProperties: false, description, examples: [example] })
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
      ...Object.fromEntries(entries.filter(([, f]) => f.filter !== undefined)
        .map(([key, f]) => [key,
          Type.Optional(fieldSchema({ ...f, trimmed: false }, 'body', { description: f.filter }))]))
    }, { additionalProperties: false })
  }
}

const capital = (text: string): string => `${text.charAt(0).toUpperCase()}${text.slice(1)}`

export function defineResource<C extends string, N extends string, const F extends FieldsDeclaration> (
  d: FieldsResource<C, N, F>
): ResourceDefinition<C, N, FieldTypes<F>> {
  const entries = Object.entries(d.fields).map(([key, f]) => ({ key, column: columnOf(key), ...f }))
  const filters = entries.filter((f) => f.filter !== undefined)
  const schemas = schemasOf(d)
  const input = (body: Values): Values => Object.fromEntries(entries.filter(({ key }) => body[key] !== undefined)
    .map(({ key, trimmed }) => [key, trimmed === true && typeof body[key] === 'string' ? body[key].trim() : body[key]]))
  const stored = (item: Values): ColumnValues =>
    Object.fromEntries(entries.map((f) => [f.column, toColumn(f.kind, item[f.key])]))
  // Loops rather than map and join: each runs for every row a response or an event carries.
  const json = (item: Values): string => {
    let out = `{"id":${String(item.id)}`
    for (const { key } of entries) if (item[key] !== undefined) out += `,"${key}":${JSON.stringify(item[key])}`
    return `${out},"createdAt":${JSON.stringify(item.createdAt)},"updatedAt":${JSON.stringify(item.updatedAt)}}`
  }
  const definition: ResourceDefinition<C, N> = {
    ...d,
    schemas,
    example: (schemas.representation.examples as [ResourceDefinition['example']])[0],
    // `updatedAt` changes on every write, so the ETag does too; `#` tells a null apart from every text.
    etag: (item: Values) => {
      const own = entries.map(({ key, nullable }) =>
        nullable !== true ? String(item[key]) : item[key] === undefined ? '' : `#${String(item[key])}`)
      const fields = [String(item.id), ...own, String(item.createdAt), String(item.updatedAt)]
      return `"${sha256(fields.join('\n'), 'base64url').slice(0, 22)}"`
    },
    json,
    storage: {
      columns: Object.fromEntries(entries.map((f) => [f.column, { kind: f.kind, nullable: f.nullable === true }])),
      filters: filters.map(({ key, column, kind }) =>
        ({ column, value: (q: Values) => q[key] === undefined ? undefined : toColumn(kind, q[key]) })),
      values: stored,
      update: (current, changes: Values) => Object.fromEntries(entries.map(({ key, column, kind }) =>
        [column, changes[key] === undefined ? current[column] ?? null : toColumn(kind, changes[key])])),
      // Field by field in declaration order; responses follow their schemas' order whatever this object's is.
      item: ({ id, values, createdAt, updatedAt }) => {
        const item: Values = { id }
        for (const { key, column, kind } of entries) {
          const value = values[column] ?? null
          if (value !== null) item[key] = fromColumn(kind, value)
        }
        item.createdAt = isoTime(createdAt)
        // A row never changed has equal timestamps: format once.
        item.updatedAt = updatedAt === createdAt ? item.createdAt : isoTime(updatedAt)
        return item as { id: bigint }
      }
    },
    fromCreate: ({ id, ...body }: Values) =>
      ({ ...(id !== undefined && { id: BigInt(id as number) }), ...input(body) }),
    fromBody: input,
    idempotencyFields: (item: Values) => [item.id as bigint | undefined,
      ...entries.map(({ key }) => item[key] === undefined ? undefined : String(item[key]))],
    fromListQuery: ({ limit = LIST_LIMIT_DEFAULT, after, ...query }: Values) =>
      ({ limit, ...(after !== undefined && { after: BigInt(after as string) }), ...input(query) }) as { limit: number },
    filterQuery: (query: Values) => filters.map(({ key }) =>
      query[key] === undefined ? '' : `&${key}=${encodeURIComponent(String(query[key]))}`).join('')
  }
  return definition as unknown as ResourceDefinition<C, N, FieldTypes<F>>
}
