import assert from 'node:assert/strict'
import { test, type TestContext } from 'node:test'
import type { ResourceDefinition } from '../../../src/resources/definition.js'
import { defineResource, type FieldsDeclaration } from '../../../src/resources/fields.js'
import { PLANTS } from '../../../src/resources/plants.js'
import { StoreOpenError } from '../../../src/lib/errors.js'
import { migrationLines } from '../../../src/store/migration.js'
import { createPostgresStore } from '../../../src/store/postgres/postgres-store.js'
import { createSqliteStore } from '../../../src/store/sqlite/sqlite-store.js'
import { tempDatabaseFile } from '../../helpers/cleanup.js'
import { scratchDatabaseUrl, TEST_DATABASE_URL } from '../../helpers/postgres.js'

/**
 * A resource's table against its declaration at start, on both stores: a declared nullable column
 * the table lacks is added (and reported as migrations are); any other drift refuses the start,
 * naming the table and the column.
 */

const NAME = { kind: 'text', maxLength: 50, description: 'A name', example: 'jam' } as const
const NOTE = {
  kind: 'text', maxLength: 20, nullable: true, description: 'A note', example: 'sweet', filter: 'Only this note'
} as const

const jars = <const F extends FieldsDeclaration>(fields: F) => defineResource({
  collection: 'jars',
  name: 'jar',
  title: 'Jar',
  fields,
  bodies: {
    create: 'A jar to create',
    replace: { description: 'A jar', example: { name: 'jam' } },
    patch: { description: 'A patch of a jar', example: { name: 'jam' } }
  },
  texts: { ...PLANTS.texts, tag: 'The jars resource', scopes: { read: 'Read jars', write: 'Change jars' } }
})
const BEFORE = jars({ name: NAME })
const WITH_NOTE = jars({ name: NAME, note: NOTE })

interface Opened {
  migration: { addedColumns?: readonly string[] }
  jars: {
    create: (item: { name: string, note?: string }) => Promise<{ item: object }>
    get: (id: bigint) => Promise<object | undefined>
    list: (query: { limit: number, note?: string }) => Promise<{ items: object[] }>
  }
  close: () => Promise<void> | void
}
type Open = (resource: ResourceDefinition, check?: boolean) => Promise<Opened>

const stores: Array<{ name: string, types: { text: string, integer: string }, database: (t: TestContext) => Open }> = [
  {
    name: 'SQLite',
    types: { text: 'TEXT', integer: 'INTEGER' },
    database: (t) => {
      const filename = tempDatabaseFile(t, 'plant-store-drift-')
      return async (resource, check = false) => createSqliteStore({
        filename, resources: [resource] as const, ...(check && { migrate: 'check' as const })
      }) as unknown as Opened
    }
  },
  ...(TEST_DATABASE_URL === undefined
    ? []
    : [{
        name: 'PostgreSQL',
        types: { text: 'text', integer: 'bigint' },
        database: (t: TestContext): Open => {
          const { url } = scratchDatabaseUrl(t)
          return async (resource, check = false) => await createPostgresStore({
            url, poolMax: 2, resources: [resource] as const, ...(check && { migrate: 'check' as const })
          }) as unknown as Opened
        }
      }])
]

const refusal = (message: string) => (err: unknown): boolean => {
  assert.ok(err instanceof StoreOpenError, String(err))
  assert.equal(err.message, message)
  return true
}

for (const { name, types, database } of stores) {
  test(`${name}: a declared nullable column the table lacks is added at start and reported`, async (t) => {
    const open = database(t)
    const before = await open(BEFORE)
    const { item: old } = await before.jars.create({ name: 'jam' })
    await before.close()
    const after = await open(WITH_NOTE)
    t.after(async () => { await after.close() })
    assert.deepEqual(after.migration.addedColumns, ['jars.note'])
    assert.deepEqual(migrationLines(after.migration as Parameters<typeof migrationLines>[0]).slice(0, 1),
      ['added the declared nullable column jars.note'])
    assert.deepEqual(await after.jars.get(1n), old)
    await after.jars.create({ name: 'honey', note: 'sweet' })
    const sweet = await after.jars.list({ limit: 10, note: 'sweet' })
    assert.deepEqual(sweet.items.map((jar) => (jar as { id: bigint }).id), [2n])
    await after.close()
    const again = await open(WITH_NOTE)
    assert.equal(again.migration.addedColumns, undefined)
    await again.close()
  })

  test(`${name}: with MIGRATE_ON_START=0 the missing nullable column is refused, naming it`, async (t) => {
    const open = database(t)
    await (await open(BEFORE)).close()
    await assert.rejects(open(WITH_NOTE, true), refusal('the table jars lacks the declared nullable column note and ' +
      'MIGRATE_ON_START=0: run `plant-store migrate` first (docs/upgrading.md)'))
  })

  test(`${name}: any other drift refuses the start, naming the table and the column`, async (t) => {
    const open = database(t)
    await (await open(WITH_NOTE)).close()
    const drifted = 'the table jars does not match its declaration: the column'
    const size = { kind: 'integer', minimum: 1, maximum: 9, description: 'A size', example: 1 } as const
    await assert.rejects(open(jars({ name: NAME, note: NOTE, size })), refusal(`${drifted} size is missing ` +
      `(declared ${types.integer} NOT NULL; only a nullable column is added at start)`))
    await assert.rejects(open(jars({ name: { ...size }, note: NOTE })),
      refusal(`${drifted} name is ${types.text} NOT NULL, declared ${types.integer} NOT NULL`))
    await assert.rejects(open(jars({ name: NAME, note: { ...NOTE, nullable: false } })),
      refusal(`${drifted} note is ${types.text} nullable, declared ${types.text} NOT NULL`))
    await assert.rejects(open(jars({ note: NOTE })),
      refusal(`${drifted} name is NOT NULL without a default and not declared: an insert would fail`))
    // Refused, not changed: the declaration it was made from still opens it.
    const same = await open(WITH_NOTE)
    assert.equal(same.migration.addedColumns, undefined)
    await same.close()
  })
}
