import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { AUTH, buildTestApp } from '../../../helpers/app.js'
import { apiTestDatabases } from '../../../helpers/databases.js'
import { assertError, createPlant, type PlantBody } from '../../../helpers/plants.js'

const JSON_AUTH = { ...AUTH, 'content-type': 'application/json' }
const NOT_STORABLE = 'must not contain NUL (U+0000) or unpaired UTF-16 surrogates (U+D800 to U+DFFF)'

/**
 * Text no store can keep as sent, each as JSON text: NUL (PostgreSQL refuses it), and unpaired
 * surrogates, which JSON can spell but which are not Unicode text (SQLite would keep invalid
 * UTF-8 that reads back as three U+FFFD, PostgreSQL one).
 */
const UNSTORABLE = [
  'a\\u0000b', // NUL
  'a\\ud800b', // a lone high surrogate
  '\\udc00', // a lone low surrogate
  'fern\\ud83c', // a high surrogate at the end
  '\\udf35\\ud83c' // a pair in the wrong order
]

/** Valid text, as JSON text, that must come back exactly. */
const STORABLE = [
  '🌵 cactus \\ud83e\\udeb4', // an astral character, also spelled as a surrogate pair
  'e\\u0301 and \\u00e9',
  '👩‍👩‍👧 🇳🇴',
  '\\u0001\\u001f\\u007f controls',
  'BOM \\ufeff, \\ufffd, \\uffff, \\udbff\\udfff (U+10FFFF)'
]

for (const database of apiTestDatabases) {
  describe(`text that cannot be stored faithfully, on ${database.name}`, () => {
    test('POST: a name or a tag with NUL or an unpaired surrogate is a 400, and nothing is created', async (t) => {
      const app = await buildTestApp(t, database.env(t))
      for (const text of UNSTORABLE) {
        const name = await app.inject({
          method: 'POST',
          url: '/plants',
          headers: JSON_AUTH,
          payload: `{"name":"${text}"}`
        })
        assertError(name, 400, `body/name ${NOT_STORABLE}`)
        const tag = await app.inject({
          method: 'POST',
          url: '/plants',
          headers: JSON_AUTH,
          payload: `{"name":"ok","tag":"${text}"}`
        })
        assertError(tag, 400, `body/tag ${NOT_STORABLE}`)
      }
      assert.deepEqual((await app.inject({ url: '/plants', headers: AUTH })).json(), [])
    })

    test('PUT and PATCH: a name or a tag with NUL or an unpaired surrogate is a 400, and ' +
      'the plant is unchanged', async (t) => {
      const app = await buildTestApp(t, database.env(t))
      const { plant } = await createPlant(app, { name: 'kept', tag: 'kept' })
      const url = `/plants/${plant.id}`
      const patchHeaders = { ...AUTH, 'content-type': 'application/merge-patch+json' }
      for (const text of UNSTORABLE) {
        assertError(await app.inject({ method: 'PUT', url, headers: JSON_AUTH, payload: `{"name":"${text}"}` }), 400,
          `body/name ${NOT_STORABLE}`)
        assertError(
          await app.inject({ method: 'PUT', url, headers: JSON_AUTH, payload: `{"name":"ok","tag":"${text}"}` }), 400,
            `body/tag ${NOT_STORABLE}`)
        assertError(await app.inject({ method: 'PATCH', url, headers: patchHeaders, payload: `{"name":"${text}"}` }),
          400, `body/name ${NOT_STORABLE}`)
        assertError(await app.inject({ method: 'PATCH', url, headers: patchHeaders, payload: `{"tag":"${text}"}` }),
          400, `body/tag ${NOT_STORABLE}`)
      }
      assert.deepEqual((await app.inject({ url, headers: AUTH })).json(), plant)
    })

    test('GET /plants?tag= with NUL or an encoded surrogate is a 400', async (t) => {
      const app = await buildTestApp(t, database.env(t))
      assertError(await app.inject({ url: '/plants?tag=%00', headers: AUTH }), 400, `querystring/tag ${NOT_STORABLE}`)
      assertError(await app.inject({ url: '/plants?tag=a%00b&limit=5', headers: AUTH }), 400,
        `querystring/tag ${NOT_STORABLE}`)
      // Percent-encoded surrogates are not UTF-8 (CESU-8): refused, never matched as the text the query parser kept.
      assertError(await app.inject({ url: '/plants?tag=%ED%A0%80', headers: AUTH }), 400,
        'querystring/tag is not percent-encoded UTF-8')
    })

    test('valid text (astral, combining, ZWJ, controls, noncharacters) comes back ' +
      'exactly, and finds its tag', async (t) => {
      const app = await buildTestApp(t, database.env(t))
      for (const text of STORABLE) {
        const created = await app.inject({
          method: 'POST',
          url: '/plants',
          headers: JSON_AUTH,
          payload: `{"name":"${text}","tag":"${text}"}`
        })
        assert.equal(created.statusCode, 201, created.body)
        const expected = JSON.parse(`"${text}"`) as string
        const plant = created.json<PlantBody>()
        assert.equal(plant.name, expected)
        assert.equal(plant.tag, expected)
        const read = await app.inject({ url: `/plants/${plant.id}`, headers: AUTH })
        assert.deepEqual(read.json(), plant)
        const listed = await app.inject({ url: `/plants?tag=${encodeURIComponent(expected)}`, headers: AUTH })
        assert.deepEqual(listed.json(), [plant])
      }
    })

    test('a name of 100 astral characters (200 UTF-16 units) is accepted and kept; 101 are refused', async (t) => {
      const app = await buildTestApp(t, database.env(t))
      const { plant } = await createPlant(app, { name: '🌿'.repeat(100), tag: '🌱'.repeat(50) })
      assert.equal(plant.name, '🌿'.repeat(100))
      assert.deepEqual((await app.inject({ url: `/plants/${plant.id}`, headers: AUTH })).json(), plant)
      assertError(await app.inject(
        { method: 'POST', url: '/plants', headers: AUTH, payload: { name: '🌿'.repeat(101) } }), 400,
      'body/name must be 1 to 100 characters after trimming surrounding white space')
      assertError(await app.inject(
        { method: 'POST', url: '/plants', headers: AUTH, payload: { name: 'x', tag: '🌱'.repeat(51) } }), 400,
      'body/tag must NOT have more than 50 characters')
    })
  })
}
