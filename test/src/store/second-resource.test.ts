import assert from 'node:assert/strict'
import { test, type TestContext } from 'node:test'
import { Type } from '@sinclair/typebox'
import { strongEtag, type ColumnsDeclaration, type ResourceDefinition } from '../../../src/resources/definition.js'
import { PLANTS } from '../../../src/resources/plants.js'
import { int64IdSchema, int64StringSchema } from '../../../src/schemas/int64.js'
import { cursorSchema, LIST_LIMIT_DEFAULT, listLimitSchema } from '../../../src/schemas/paging.js'
import { isoTime } from '../../../src/store/iso-time.js'
import type { Store } from '../../../src/store/contract.js'
import { createPostgresStore } from '../../../src/store/postgres/postgres-store.js'
import { createSqliteStore } from '../../../src/store/sqlite/sqlite-store.js'
import { tempDatabaseFile } from '../../helpers/cleanup.js'
import { scratchDatabaseUrl, TEST_DATABASE_URL } from '../../helpers/postgres.js'
import { resourceRouteSuite } from '../../plugins/routes/resource-suite.js'
import { resourceConformance, type ResourceUnderTest } from './resource-conformance.js'

/**
 * A second resource, declared here and nowhere else: the stores serve it from its declaration alone
 * (its table is made from it), through the same generic repository as plants, and an app given it
 * serves its routes beside the plants' (the generic route suite, on each test database).
 */
interface Pot {
  id: bigint
  diameterMm: number
  material?: string
  createdAt: string
  updatedAt: string
}

interface PotTypes {
  item: Pot
  create: { id?: bigint, diameterMm: number, material?: string }
  replace: { diameterMm: number, material?: string }
  changes: { diameterMm?: number, material?: string | null }
  query: { limit: number, after?: bigint, material?: string }
}

const PotSchema = Type.Object({
  id: int64IdSchema('The pot identifier'),
  diameterMm: Type.Integer({ minimum: 1, maximum: 10_000 }),
  material: Type.Optional(Type.String({ minLength: 1, maxLength: 50 })),
  createdAt: Type.String({ format: 'date-time' }),
  updatedAt: Type.String({ format: 'date-time' })
}, { $id: 'Pot', additionalProperties: false })
const NewPotSchema = Type.Object({
  id: Type.Optional(Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER })),
  diameterMm: Type.Integer({ minimum: 1, maximum: 10_000 }),
  material: Type.Optional(Type.String({ minLength: 1, maxLength: 50 }))
}, { $id: 'NewPot', additionalProperties: false })
const PotUpdateSchema = Type.Omit(NewPotSchema, ['id'], { $id: 'PotUpdate', additionalProperties: false })
const PotPatchSchema = Type.Object({
  diameterMm: Type.Optional(Type.Integer({ minimum: 1, maximum: 10_000 })),
  material: Type.Optional(Type.Union([Type.String({ minLength: 1, maxLength: 50 }), Type.Null()]))
}, { $id: 'PotPatch', additionalProperties: false })
const PotListQuerySchema = Type.Object({
  limit: listLimitSchema('pots'),
  after: cursorSchema('Cursor: only pots with a larger id'),
  material: Type.Optional(Type.String({ minLength: 1, maxLength: 50 }))
}, { additionalProperties: false })

const POT_TABLE = {
  diameter_mm: { kind: 'integer', nullable: false },
  material: { kind: 'text', nullable: true }
} as const satisfies ColumnsDeclaration

const potJson = (pot: Pot): string => JSON.stringify({ ...pot, id: Number(pot.id) })

const POTS: ResourceDefinition<'pots', 'pot', PotTypes, {
  representation: typeof PotSchema
  list: ReturnType<typeof Type.Array<typeof PotSchema>>
  create: typeof NewPotSchema
  replace: typeof PotUpdateSchema
  patch: typeof PotPatchSchema
  params: ReturnType<typeof Type.Object<{ id: ReturnType<typeof int64StringSchema> }>>
  listQuery: typeof PotListQuerySchema
}, typeof POT_TABLE> = {
  collection: 'pots',
  name: 'pot',
  title: 'Pot',
  etag: (pot) => strongEtag([String(pot.id), String(pot.diameterMm), pot.material ?? '', pot.createdAt, pot.updatedAt]),
  json: potJson,
  example: {
    id: 1,
    diameterMm: 120,
    material: 'terracotta',
    createdAt: '2026-01-02T03:04:05.678Z',
    updatedAt: '2026-01-02T03:04:05.678Z'
  },
  schemas: {
    representation: PotSchema,
    list: Type.Array(PotSchema, { $id: 'PotList' }),
    create: NewPotSchema,
    replace: PotUpdateSchema,
    patch: PotPatchSchema,
    params: Type.Object({ id: int64StringSchema() }, { additionalProperties: false }),
    listQuery: PotListQuerySchema
  },
  texts: {
    tag: 'The pots resource',
    list: { description: 'Pots ordered by id', badRequest: 'A query parameter is invalid' },
    create: { description: 'Creates a pot', badRequest: 'The body is not a valid NewPot' },
    replace: { description: 'Replaces a pot' },
    update: { description: 'Applies a JSON merge patch to a pot' },
    scopes: { read: 'List and get pots', write: 'Create, replace, update and delete pots' },
    events: { created: 'A pot was created', updated: 'A pot was changed', deleted: 'A pot was deleted' }
  },
  storage: {
    table: 'pots',
    columns: POT_TABLE,
    filters: [{ column: 'material', value: (query) => query.material }],
    create: ({ diameterMm, material }) => ({ diameter_mm: BigInt(diameterMm), material: material ?? null }),
    replace: ({ diameterMm, material }) => ({ diameter_mm: BigInt(diameterMm), material: material ?? null }),
    update: (current, { diameterMm, material }) => ({
      diameter_mm: diameterMm === undefined ? current.diameter_mm : BigInt(diameterMm),
      material: material === undefined ? current.material : material
    }),
    item: ({ id, values, createdAt, updatedAt }) => ({
      id,
      diameterMm: Number(values.diameter_mm),
      ...(values.material !== null && { material: values.material }),
      createdAt: isoTime(createdAt),
      updatedAt: isoTime(updatedAt)
    })
  },
  fromCreate: ({ id, diameterMm, material }) =>
    ({ ...(id !== undefined && { id: BigInt(id) }), diameterMm, ...(material !== undefined && { material }) }),
  fromReplace: ({ diameterMm, material }) => ({ diameterMm, ...(material !== undefined && { material }) }),
  fromPatch: (patch) => patch,
  idempotencyFields: (pot) => [pot.id, String(pot.diameterMm), pot.material],
  fromListQuery: ({ limit = LIST_LIMIT_DEFAULT, after, material }) =>
    ({ limit, ...(after !== undefined && { after: BigInt(after) }), ...(material !== undefined && { material }) }),
  filterQuery: ({ material }) => material === undefined ? '' : `&material=${encodeURIComponent(material)}`
}

const SUBJECT: ResourceUnderTest<PotTypes> = {
  definition: POTS,
  sample: (n, filtered = false) =>
    ({ diameterMm: 100 + n, ...(filtered ? { material: 'clay' } : n % 3 === 0 ? {} : { material: `m${n}` }) }),
  withId: (pot, id) => ({ ...pot, id }),
  replacement: (n) => ({ diameterMm: 5000 + n }),
  change: (n) => ({ diameterMm: 9000 + n, material: null }),
  noChange: {},
  filter: (query) => ({ ...query, material: 'clay' })
}

resourceConformance('SQLite', SUBJECT, async (t) => {
  const filename = tempDatabaseFile(t, 'plant-store-pots-')
  return {
    open: async () => {
      const store = createSqliteStore({ filename, synchronous: 'normal', resources: [POTS] as const })
      t.after(() => store.close())
      return { repository: store.pots, webhooks: store.webhooks, close: store.close }
    }
  }
})

// CI sets TEST_DATABASE_URL; each test gets a fresh schema of its own.
if (TEST_DATABASE_URL !== undefined) {
  resourceConformance('PostgreSQL', SUBJECT, async (t) => {
    const { url } = scratchDatabaseUrl(t)
    return {
      open: async () => {
        const store = await createPostgresStore({ url, poolMax: 4, resources: [POTS] as const })
        t.after(() => store.close())
        return { repository: store.pots, webhooks: store.webhooks, close: store.close }
      }
    }
  })
}

const BOTH = [PLANTS, POTS] as const
const bothStores = [
  { name: 'SQLite', open: async () => createSqliteStore({ filename: ':memory:', resources: BOTH }) },
  ...(TEST_DATABASE_URL === undefined
    ? []
    : [{
        name: 'PostgreSQL',
        open: async (t: TestContext) => await createPostgresStore({ url: scratchDatabaseUrl(t).url, resources: BOTH })
      }])
]

for (const { name, open } of bothStores) {
  test(`${name}: two resources in one store keep their keys and chosen ids apart`, async (t) => {
    const store = await open(t)
    t.after(() => store.close())
    await twoResources(store)
  })
}

async function twoResources (store: Store<typeof BOTH>): Promise<void> {
  const key = { scope: 'client-a', key: 'same key', fingerprint: 'f' }
  await store.plants.create({ id: 2n, name: 'chosen' })
  const plant = await store.plants.create({ name: 'Monstera' }, key)
  const pot = await store.pots.create({ diameterMm: 120 }, key)
  assert.deepEqual([plant.replayed, plant.item.id, pot.replayed, pot.item.id], [false, 1n, false, 1n])
  assert.equal((await store.pots.create({ diameterMm: 130 })).item.id, 2n, "plants' chosen 2 is not the pots' to skip")
  assert.deepEqual(await store.pots.create({ diameterMm: 120 }, key), { item: pot.item, replayed: true })
}

// The route half: an app serving plants and pots, its routes checked by the suite every resource passes.
resourceRouteSuite({
  resource: POTS,
  resources: BOTH,
  bodies: [{ diameterMm: 120, material: 'clay' }, { diameterMm: 90 }, { diameterMm: 300, material: 'clay' }],
  replacement: { diameterMm: 150, material: 'stone' },
  patch: { material: 'terracotta' },
  invalid: { body: { material: 'clay' }, message: "body must have property 'diameterMm'" },
  filter: { parameter: 'material', value: 'clay', keeps: (body) => body.material === 'clay' }
})
