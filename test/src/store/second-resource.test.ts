import assert from 'node:assert/strict'
import { test, type TestContext } from 'node:test'
import { defineResource, type FieldTypes } from '../../../src/resources/fields.js'
import { PLANTS } from '../../../src/resources/plants.js'
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
const POT_FIELDS = {
  diameterMm: { kind: 'integer', minimum: 1, maximum: 10_000, example: 120, description: 'The diameter in mm' },
  material: {
    kind: 'text',
    maxLength: 50,
    nullable: true,
    description: 'What the pot is made of',
    example: 'terracotta',
    filter: 'Only pots of this material'
  }
} as const

type PotTypes = FieldTypes<typeof POT_FIELDS>

const POTS = defineResource({
  collection: 'pots',
  name: 'pot',
  title: 'Pot',
  fields: POT_FIELDS,
  bodies: {
    create: 'A pot to create',
    replace: { description: 'A full replacement of a pot', example: { diameterMm: 150 } },
    patch: { description: 'A JSON merge patch of a pot', example: { material: null } }
  },
  texts: {
    tag: 'The pots resource',
    list: { description: 'Pots ordered by id', badRequest: 'A query parameter is invalid' },
    create: { description: 'Creates a pot', badRequest: 'The body is not a valid NewPot' },
    replace: { description: 'Replaces a pot' },
    update: { description: 'Applies a JSON merge patch to a pot' },
    scopes: { read: 'List and get pots', write: 'Create, replace, update and delete pots' },
    events: { created: 'A pot was created', updated: 'A pot was changed', deleted: 'A pot was deleted' }
  }
})

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
