import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { AUTH, buildTestApp } from '../../../helpers/app.js'
import { assertError, createPlant, JSON_TYPE, nextLink, type PlantBody } from '../../../helpers/plants.js'

async function seed (app: FastifyInstance, count: number,
  tagOf: (i: number) => string | undefined = () => undefined): Promise<PlantBody[]> {
  const plants: PlantBody[] = []
  for (let i = 1; i <= count; i++) {
    const tag = tagOf(i)
    plants.push((await createPlant(app, { name: `plant ${i}`, ...(tag !== undefined && { tag }) })).plant)
  }
  return plants
}

const list = (app: FastifyInstance, query: string) => app.inject({ url: `/plants${query}`, headers: AUTH })

test('an empty store lists as [] with no Link', async (t) => {
  const app = await buildTestApp(t)
  const res = await list(app, '')
  assert.equal(res.statusCode, 200)
  assert.equal(res.headers['content-type'], JSON_TYPE)
  assert.equal(res.body, '[]')
  assert.equal(res.headers.link, undefined)
})

test('limit defaults to 20', async (t) => {
  const app = await buildTestApp(t)
  const plants = await seed(app, 21)
  const res = await list(app, '')
  assert.deepEqual(res.json(), plants.slice(0, 20))
  assert.equal(nextLink(res.headers.link), '/plants?limit=20&after=20')
})

test('limit 1 and 100 are accepted; 0 and 101 are 400s', async (t) => {
  const app = await buildTestApp(t)
  const plants = await seed(app, 101)
  const one = await list(app, '?limit=1')
  assert.equal(one.statusCode, 200)
  assert.deepEqual(one.json(), plants.slice(0, 1))
  assert.equal(nextLink(one.headers.link), '/plants?limit=1&after=1')
  const hundred = await list(app, '?limit=100')
  assert.equal(hundred.statusCode, 200)
  assert.deepEqual(hundred.json(), plants.slice(0, 100))
  assert.equal(nextLink(hundred.headers.link), '/plants?limit=100&after=100')
  assertError(await list(app, '?limit=0'), 400, 'querystring/limit must be >= 1')
  assertError(await list(app, '?limit=101'), 400, 'querystring/limit must be <= 100')
  assertError(await list(app, '?limit=-1'), 400, 'querystring/limit must be >= 1')
  assertError(await list(app, '?limit=2147483648'), 400, 'querystring/limit must be <= 100')
})

test('limit must be a canonical decimal integer', async (t) => {
  const app = await buildTestApp(t)
  for (const limit of ['1e1', '+5', '05', '5.0', '0x10', ' 5', '5 ', '', 'ten', '-0']) {
    assertError(await list(app, `?limit=${encodeURIComponent(limit)}`), 400,
      'querystring/limit must be a canonical decimal integer')
  }
  assertError(await list(app, '?limit=5.5'), 400, 'querystring/limit must be a canonical decimal integer')
  assertError(await list(app, '?limit=1&limit=2'), 400, 'querystring/limit must be integer')
})

test('no Link when the page holds exactly the plants that remain', async (t) => {
  const app = await buildTestApp(t)
  const plants = await seed(app, 3)
  const res = await list(app, '?limit=3')
  assert.deepEqual(res.json(), plants)
  assert.equal(res.headers.link, undefined)
  const last = await list(app, '?limit=2&after=2')
  assert.deepEqual(last.json(), plants.slice(2))
  assert.equal(last.headers.link, undefined)
})

test('following Link across page boundaries returns every plant exactly once, in id order', async (t) => {
  const app = await buildTestApp(t)
  const plants = await seed(app, 47)
  // Gaps in the ids must not matter to the cursor.
  for (const id of [5, 20, 21, 40]) {
    assert.equal((await app.inject({ method: 'DELETE', url: `/plants/${id}`, headers: AUTH })).statusCode, 204)
  }
  const expected = plants.filter((plant) => ![5, 20, 21, 40].includes(plant.id))
  const seen: PlantBody[] = []
  let url: string | undefined = '/plants?limit=10'
  let pages = 0
  while (url !== undefined) {
    const res: LightMyRequestResponse = await app.inject({ url, headers: AUTH })
    assert.equal(res.statusCode, 200)
    const page = res.json<PlantBody[]>()
    assert.ok(page.length >= 1 && page.length <= 10)
    seen.push(...page)
    url = nextLink(res.headers.link)
    pages++
  }
  assert.equal(pages, 5)
  assert.deepEqual(seen, expected)
  assert.equal(new Set(seen.map((plant) => plant.id)).size, seen.length)
})

test('after is a keyset cursor: plants with a larger id, even one that does not exist', async (t) => {
  const app = await buildTestApp(t)
  const plants = await seed(app, 5)
  await app.inject({ method: 'DELETE', url: '/plants/3', headers: AUTH })
  assert.deepEqual((await list(app, '?after=2')).json(), plants.slice(3))
  assert.deepEqual((await list(app, '?after=3')).json(), plants.slice(3))
  assert.deepEqual((await list(app, '?after=0')).json(), [...plants.slice(0, 2), ...plants.slice(3)])
  assert.deepEqual((await list(app, '?after=-5')).json(), [...plants.slice(0, 2), ...plants.slice(3)])
  assert.deepEqual((await list(app, '?after=5')).json(), [])
  assert.deepEqual((await list(app, '?after=9223372036854775807')).json(), [])
})

test('after must be a canonical int64', async (t) => {
  const app = await buildTestApp(t)
  for (const after of ['abc', '1.5', '01', '1e3', '9223372036854775808', '']) {
    assertError(await list(app, `?after=${after}`), 400, 'querystring/after must match format "int64"')
  }
})

test('tag filters by exact match, and the Link keeps the filter', async (t) => {
  const app = await buildTestApp(t)
  const plants = await seed(app, 12, (i) => (i % 3 === 0 ? 'a b&c' : i % 3 === 1 ? 'A B&C' : undefined))
  const tagged = plants.filter((plant) => plant.tag === 'a b&c')
  assert.equal(tagged.length, 4)
  const first = await list(app, `?tag=${encodeURIComponent('a b&c')}&limit=3`)
  assert.deepEqual(first.json(), tagged.slice(0, 3))
  const next = nextLink(first.headers.link)
  assert.equal(next, `/plants?limit=3&after=${tagged[2]?.id}&tag=a%20b%26c`)
  const second = await app.inject({ url: next as string, headers: AUTH })
  assert.deepEqual(second.json(), tagged.slice(3))
  assert.equal(second.headers.link, undefined)
  // Exact: no case folding, no prefix match.
  assert.deepEqual((await list(app, '?tag=a')).json(), [])
  assert.deepEqual((await list(app, '?tag=A%20B%26C')).json(), plants.filter((plant) => plant.tag === 'A B&C'))
})

test('tag must be 1 to 50 characters; unknown parameters are 400s', async (t) => {
  const app = await buildTestApp(t)
  assertError(await list(app, '?tag='), 400, 'querystring/tag must NOT have fewer than 1 characters')
  assertError(await list(app, `?tag=${'t'.repeat(51)}`), 400, 'querystring/tag must NOT have more than 50 characters')
  assert.equal((await list(app, `?tag=${'t'.repeat(50)}`)).statusCode, 200)
  assertError(await list(app, '?limt=5'), 400, "querystring has unknown property 'limt'")
})

test('query text that is not percent-encoded UTF-8 is a 400 for every parameter, ' +
  'never matched literally', async (t) => {
  const app = await buildTestApp(t)
  // A plant whose tag is literally what a lenient decoder would leave of an invalid escape.
  await createPlant(app, { name: 'literal', tag: '%FF' })
  // Bytes that are not UTF-8, an encoded lone surrogate, an overlong NUL, an escape cut short or not hex.
  for (const bad of ['%FF', '%ED%A0%80', '%C0%80', 'a%', '%zz', '%E2%82']) {
    for (const name of ['tag', 'after', 'limit']) {
      assertError(await list(app, `?${name}=${bad}`), 400, `querystring/${name} is not percent-encoded UTF-8`)
    }
    assertError(await list(app, `?limit=5&tag=ok&${bad}=1`), 400,
      'querystring has a parameter name that is not percent-encoded UTF-8')
  }
  // The first bad parameter is named, past good ones; valid escapes still decode.
  assertError(await list(app, '?tag=%25FF&after=%FF'), 400, 'querystring/after is not percent-encoded UTF-8')
  assert.deepEqual((await list(app, '?tag=%25FF')).json<PlantBody[]>().map((plant) => plant.name), ['literal'])
  assert.deepEqual((await list(app, '?tag=%F0%9F%8C%B1')).json(), [])
})

test('GET /plants needs a token', async (t) => {
  const app = await buildTestApp(t)
  const res = await app.inject({ url: '/plants' })
  assertError(res, 401, /authorization/i)
  assert.equal(res.headers['www-authenticate'], 'Bearer')
})
