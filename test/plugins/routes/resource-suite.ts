import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify'
import type { ResourceDefinition } from '../../../src/resources/definition.js'
import { resourceScope, type Scope } from '../../../src/auth/scopes.js'
import { tokenDigest } from '../../../src/auth/tokens.js'
import { AUTH, buildTestApp } from '../../helpers/app.js'
import type { Cleanup } from '../../helpers/cleanup.js'
import { apiTestDatabases, type ApiTestDatabase } from '../../helpers/databases.js'
import { assertError, JSON_TYPE, nextLink } from '../../helpers/plants.js'
import { scopedToken } from '../../helpers/scoped-tokens.js'

/**
 * The routes every resource gets from its declaration (plugins/routes/resources/), tested from the
 * declaration alone: run it for any resource, with bodies valid for its schemas. What is particular
 * to a resource (a plant's name rule) stays in that resource's own tests.
 */

type Body = Record<string, unknown>

export interface ResourceSuiteFixture {
  resource: ResourceDefinition
  /** What the app serves, the resource among them; buildApp's default (RESOURCES) when absent. */
  resources?: readonly ResourceDefinition[]
  /** Valid create bodies without an id, at least three, whose fields the representation carries back unchanged. */
  bodies: readonly Body[]
  /** A valid replace body, stored as sent. */
  replacement: Body
  /** A merge patch of some fields, stored as sent. */
  patch: Body
  /** A create body the schema refuses, with the exact 400 message. */
  invalid: { body: Body, message: string }
  /** A list filter: its query parameter, a value, and which of `bodies` it keeps (some, not all). */
  filter?: { parameter: string, value: string, keeps: (body: Body) => boolean }
}

const STRONG_ETAG = /^"[A-Za-z0-9_-]{22}"$/
const MERGE_PATCH = 'application/merge-patch+json'
const BAD_ID = 'params/id must match format "int64"'

const propertiesOf = (schema: { properties?: object }): string[] => Object.keys(schema.properties ?? {})

/** The representation's fields a client writes: what a PUT replaces. */
const writableFields = (resource: ResourceDefinition): string[] => propertiesOf(resource.schemas.replace)

/** The messages the error module words for every resource alike. */
const messages = ({ title }: ResourceDefinition) => ({
  notFound: (id: number | string) => `${title} ${id} not found`,
  exists: (id: number) => `${title} ${id} already exists`,
  stale: (id: number) => `${title} ${id} does not match If-Match: it has changed or is gone; GET it again`
})

/** Exactly the representation of `fields` under `id`: the writable fields as given, nothing the schema lacks. */
function assertRepresents (resource: ResourceDefinition, item: Body, id: number, fields: Body): void {
  assert.equal(item.id, id)
  for (const field of writableFields(resource)) assert.deepEqual(item[field], fields[field], `field ${field}`)
  const declared = propertiesOf(resource.schemas.representation)
  for (const key of Object.keys(item)) assert.ok(declared.includes(key), `undeclared field ${key}`)
  for (const key of resource.schemas.representation.required ?? []) assert.ok(key in item, `missing field ${key}`)
}

/** A token per scope the suite needs beside the plain one (every scope): the resource's read, its write, webhooks. */
function scopedCallers (resource: ResourceDefinition) {
  const read = resourceScope(resource, 'read')
  const write = resourceScope(resource, 'write')
  return {
    read,
    write,
    tokens: [scopedToken('reader', [read]), scopedToken('writer', [write]), scopedToken('hooks', ['webhooks'])]
  }
}

/** Registers `fixture` as a suite per test database: `describe('<collection> routes on SQLite')`. */
export function resourceRouteSuite (fixture: ResourceSuiteFixture): void {
  for (const database of apiTestDatabases) {
    describe(`${fixture.resource.collection} routes on ${database.name}`, () => { suiteOn(fixture, database) })
  }
}

function suiteOn (fixture: ResourceSuiteFixture, database: ApiTestDatabase): void {
  const { resource, bodies } = fixture
  const base = `/${resource.collection}`
  const callers = scopedCallers(resource)
  const appFor = async (t: Cleanup): Promise<FastifyInstance> => await buildTestApp(t, database.env(t),
    fixture.resources === undefined ? {} : { resources: fixture.resources },
    (config) => ({
      ...config,
      namedTokens: [...config.namedTokens,
        ...callers.tokens.map(({ name, scopes, token }) => ({ name, scopes, digest: tokenDigest(token) }))]
    }))
  const post = async (app: FastifyInstance, body: Body, headers: Record<string, string> = {}) =>
    await app.inject({ method: 'POST', url: base, headers: { ...AUTH, ...headers }, payload: body })
  const created = async (app: FastifyInstance, count: number): Promise<Body[]> => {
    const items: Body[] = []
    for (const body of bodies.slice(0, count)) {
      const res = await post(app, body)
      assert.equal(res.statusCode, 201, res.body)
      items.push(res.json<Body>())
    }
    return items
  }
  const get = async (app: FastifyInstance, id: number | string, headers: Record<string, string> = {}) =>
    await app.inject({ url: `${base}/${id}`, headers: { ...AUTH, ...headers } })
  const writes = (id: number | string): Array<{ ok: number, request: InjectOptions }> => [
    { ok: 200, request: { method: 'PUT', url: `${base}/${id}`, payload: fixture.replacement } },
    {
      ok: 200,
      request: {
        method: 'PATCH',
        url: `${base}/${id}`,
        headers: { 'content-type': MERGE_PATCH },
        payload: JSON.stringify(fixture.patch)
      }
    },
    { ok: 204, request: { method: 'DELETE', url: `${base}/${id}` } }
  ]
  const send = async (app: FastifyInstance, request: InjectOptions, headers: Record<string, string> = AUTH) =>
    await app.inject({
      ...request,
      headers: { ...headers, ...(request.headers as Record<string, string> | undefined) }
    })
  const text = messages(resource)

  test('POST creates: 201, Location, a strong ETag and the representation, which GET answers again', async (t) => {
    const app = await appFor(t)
    const res = await post(app, bodies[0] ?? {})
    assert.equal(res.statusCode, 201, res.body)
    assert.equal(res.headers['content-type'], JSON_TYPE)
    assert.equal(res.headers.location, `${base}/1`)
    assert.match(String(res.headers.etag), STRONG_ETAG)
    assert.equal(res.headers['idempotent-replayed'], undefined)
    assertRepresents(resource, res.json(), 1, bodies[0] ?? {})
    const again = await get(app, 1)
    assert.equal(again.statusCode, 200)
    assert.equal(again.headers['content-type'], JSON_TYPE)
    assert.equal(again.headers.etag, res.headers.etag)
    assert.equal(again.body, res.body)
  })

  test('POST with a client id: 201 at that id; the same id again is a 409 and changes nothing', async (t) => {
    const app = await appFor(t)
    const res = await post(app, { ...bodies[0], id: 42 })
    assert.equal(res.statusCode, 201, res.body)
    assert.equal(res.headers.location, `${base}/42`)
    assertRepresents(resource, res.json(), 42, bodies[0] ?? {})
    assertError(await post(app, { ...bodies[1], id: 42 }), 409, text.exists(42))
    assert.equal((await get(app, 42)).body, res.body)
  })

  test('Idempotency-Key: the same body again replays the first 201; another body is a 422', async (t) => {
    const app = await appFor(t)
    const key = { 'idempotency-key': 'suite-key-1' }
    const first = await post(app, bodies[0] ?? {}, key)
    assert.equal(first.statusCode, 201, first.body)
    const retry = await post(app, bodies[0] ?? {}, key)
    assert.equal(retry.statusCode, 201)
    assert.equal(retry.headers['idempotent-replayed'], 'true')
    assert.equal(retry.body, first.body)
    assert.equal(retry.headers.location, first.headers.location)
    assert.equal(retry.headers.etag, first.headers.etag)
    assertError(await post(app, bodies[1] ?? {}, key), 422,
      'This Idempotency-Key was already used with a different request body')
    assert.deepEqual((await app.inject({ url: base, headers: AUTH })).json(), [first.json()])
  })

  test('GET lists in id order; keyset pages of one follow Link until the last, which has none', async (t) => {
    const app = await appFor(t)
    const items = await created(app, bodies.length)
    const all = await app.inject({ url: base, headers: AUTH })
    assert.equal(all.statusCode, 200)
    assert.equal(all.headers['content-type'], JSON_TYPE)
    assert.equal(all.headers.link, undefined)
    assert.deepEqual(all.json(), items)
    const seen: Body[] = []
    let url: string | undefined = `${base}?limit=1`
    while (url !== undefined) {
      const page: LightMyRequestResponse = await app.inject({ url, headers: AUTH })
      assert.equal(page.statusCode, 200, page.body)
      seen.push(...page.json<Body[]>())
      const more = seen.length < items.length
      assert.equal(page.headers.link,
        more ? `<${base}?limit=1&after=${String(seen.at(-1)?.id)}>; rel="next"` : undefined)
      url = nextLink(page.headers.link)
    }
    assert.deepEqual(seen, items)
    assert.deepEqual((await app.inject({ url: `${base}?after=${String(items.at(-1)?.id)}`, headers: AUTH })).json(), [])
  })

  test('GET refuses a bad query: 400 naming the parameter', async (t) => {
    const app = await appFor(t)
    const list = async (query: string) => await app.inject({ url: `${base}${query}`, headers: AUTH })
    assertError(await list('?limit=0'), 400, 'querystring/limit must be >= 1')
    assertError(await list('?after=x'), 400, 'querystring/after must match format "int64"')
    assertError(await list('?unknown-parameter=1'), 400, "querystring has unknown property 'unknown-parameter'")
  })

  const { filter } = fixture
  if (filter !== undefined) {
    test(`GET ?${filter.parameter}= keeps the matching ones, and its Link keeps the filter`, async (t) => {
      const app = await appFor(t)
      const items = await created(app, bodies.length)
      const kept = items.filter((_item, i) => filter.keeps(bodies[i] ?? {}))
      assert.ok(kept.length > 1 && kept.length < items.length,
        'the fixture\'s filter keeps some, not all, and more than one')
      const query = `${filter.parameter}=${encodeURIComponent(filter.value)}`
      assert.deepEqual((await app.inject({ url: `${base}?${query}`, headers: AUTH })).json(), kept)
      const page = await app.inject({ url: `${base}?limit=1&${query}`, headers: AUTH })
      assert.deepEqual(page.json(), kept.slice(0, 1))
      assert.equal(page.headers.link, `<${base}?limit=1&after=${String(kept[0]?.id)}&${query}>; rel="next"`)
    })
  }

  test('GET /{id}: If-None-Match with its ETag is a 304 without a body; a stale If-Match a 412', async (t) => {
    const app = await appFor(t)
    const [item] = await created(app, 1)
    const etag = String((await get(app, 1)).headers.etag)
    const notModified = await get(app, 1, { 'if-none-match': etag })
    assert.equal(notModified.statusCode, 304)
    assert.equal(notModified.body, '')
    assert.equal(notModified.headers.etag, etag)
    assert.equal(notModified.headers['content-type'], undefined)
    assert.equal((await get(app, 1, { 'if-none-match': '"other"' })).statusCode, 200)
    assertError(await get(app, 1, { 'if-match': '"stale"' }), 412, text.stale(1))
    assert.deepEqual((await get(app, 1, { 'if-match': etag })).json(), item)
  })

  test('PUT replaces the writable fields: 200, a new ETag, and GET answers the same', async (t) => {
    const app = await appFor(t)
    const [item] = await created(app, 1)
    const before = String((await get(app, 1)).headers.etag)
    const res = await send(app, { method: 'PUT', url: `${base}/1`, payload: fixture.replacement })
    assert.equal(res.statusCode, 200, res.body)
    assert.equal(res.headers['content-type'], JSON_TYPE)
    assertRepresents(resource, res.json(), 1, fixture.replacement)
    assert.match(String(res.headers.etag), STRONG_ETAG)
    assert.notEqual(res.headers.etag, before)
    assert.notDeepEqual(res.json(), item)
    const again = await get(app, 1)
    assert.equal(again.body, res.body)
    assert.equal(again.headers.etag, res.headers.etag)
  })

  test('PATCH merges a patch: the fields it names change, the others stay', async (t) => {
    const app = await appFor(t)
    const [item = {}] = await created(app, 1)
    const res = await send(app, writes(1)[1]?.request ?? {})
    assert.equal(res.statusCode, 200, res.body)
    assertRepresents(resource, res.json(), 1, { ...item, ...fixture.patch })
    const again = await get(app, 1)
    assert.equal(again.body, res.body)
    assert.equal(again.headers.etag, res.headers.etag)
  })

  test('DELETE answers 204 with an empty body; then GET and DELETE are 404s', async (t) => {
    const app = await appFor(t)
    await created(app, 1)
    const res = await send(app, { method: 'DELETE', url: `${base}/1` })
    assert.equal(res.statusCode, 204)
    assert.equal(res.body, '')
    assert.equal(res.headers['content-type'], undefined)
    assertError(await get(app, 1), 404, text.notFound(1))
    assertError(await send(app, { method: 'DELETE', url: `${base}/1` }), 404, text.notFound(1))
  })

  test('PUT, PATCH and DELETE with a stale If-Match are 412s that change nothing; with the ' +
    'current ETag they go on', async (t) => {
    const app = await appFor(t)
    await created(app, 1)
    for (const { ok, request } of writes(1)) {
      const current = await get(app, 1)
      const etag = String(current.headers.etag)
      assertError(await send(app, request, { ...AUTH, 'if-match': '"stale"' }), 412, text.stale(1))
      assert.equal((await get(app, 1)).body, current.body)
      assert.equal((await send(app, request, { ...AUTH, 'if-match': etag })).statusCode, ok)
    }
  })

  test('a missing id is a 404 for every operation on /{id}; an id that is not an int64 a 400', async (t) => {
    const app = await appFor(t)
    assertError(await get(app, 9), 404, text.notFound(9))
    for (const { request } of writes(9)) assertError(await send(app, request), 404, text.notFound(9))
    assertError(await get(app, 'x'), 400, BAD_ID)
    for (const { request } of writes('x')) assertError(await send(app, request), 400, BAD_ID)
  })

  test('a body the schemas refuse is a 400 naming the field', async (t) => {
    const app = await appFor(t)
    assertError(await post(app, fixture.invalid.body), 400, fixture.invalid.message)
    await created(app, 1)
    const unknown = "body has unknown property 'unknown-field'"
    assertError(await post(app, { ...bodies[0], 'unknown-field': 1 }), 400, unknown)
    assertError(
      await send(app, { method: 'PUT', url: `${base}/1`, payload: { ...fixture.replacement, 'unknown-field': 1 } }),
      400, unknown)
    assertError(await send(app, {
      method: 'PATCH',
      url: `${base}/1`,
      headers: { 'content-type': MERGE_PATCH },
      payload: JSON.stringify({ 'unknown-field': 1 })
    }), 400, unknown)
    assert.deepEqual((await app.inject({ url: base, headers: AUTH })).json<Body[]>().length, 1)
  })

  scopeTests(fixture, appFor, callers)
}

/** Every operation of the resource, and the access it needs, in an order a write-only caller can run them through. */
function operations (fixture: ResourceSuiteFixture): Array<{
  access: 'read' | 'write',
  ok: number,
  request: InjectOptions
}> {
  const base = `/${fixture.resource.collection}`
  return [
    { access: 'read', ok: 200, request: { method: 'GET', url: base } },
    { access: 'read', ok: 200, request: { method: 'HEAD', url: base } },
    { access: 'read', ok: 200, request: { method: 'GET', url: `${base}/1` } },
    { access: 'read', ok: 200, request: { method: 'HEAD', url: `${base}/1` } },
    { access: 'write', ok: 201, request: { method: 'POST', url: base, payload: fixture.bodies[1] ?? {} } },
    { access: 'write', ok: 200, request: { method: 'PUT', url: `${base}/1`, payload: fixture.replacement } },
    {
      access: 'write',
      ok: 200,
      request: {
        method: 'PATCH',
        url: `${base}/1`,
        headers: { 'content-type': MERGE_PATCH },
        payload: JSON.stringify(fixture.patch)
      }
    },
    { access: 'write', ok: 204, request: { method: 'DELETE', url: `${base}/1` } }
  ]
}

function scopeTests (
  fixture: ResourceSuiteFixture,
  appFor: (t: Cleanup) => Promise<FastifyInstance>,
  { read, write, tokens }: ReturnType<typeof scopedCallers>
): void {
  const inject = async (app: FastifyInstance, request: InjectOptions,
    authorization?: string): Promise<LightMyRequestResponse> =>
    await app.inject({
      ...request,
      headers: { ...(request.headers as object), ...(authorization !== undefined && { authorization }) }
    })
  const seed = async (app: FastifyInstance): Promise<void> => {
    assert.equal((await inject(app, {
      method: 'POST',
      url: `/${fixture.resource.collection}`,
      payload: fixture.bodies[0] ?? {}
    },
    AUTH.authorization)).statusCode, 201)
  }

  test('without a token, or with an unknown one, every operation is a 401 with a Bearer challenge', async (t) => {
    const app = await appFor(t)
    await seed(app)
    for (const { request } of operations(fixture)) {
      for (const [authorization, message] of [[undefined, 'missing'],
        ['Bearer not-a-token-of-this-app', 'invalid']] as const) {
        const res = await inject(app, request, authorization)
        const label = `${String(request.method)} ${String(request.url)} (${message})`
        assert.equal(res.statusCode, 401, label)
        assert.equal(res.headers['www-authenticate'], 'Bearer', label)
        if (request.method !== 'HEAD') {
          assert.deepEqual(res.json(), { error: 401, message: `${message} authorization header` }, label)
        }
      }
    }
    assert.equal((await inject(app, { url: `/${fixture.resource.collection}/1` }, AUTH.authorization)).statusCode, 200)
  })

  test(`${read} reads and nothing else; ${write} does everything (write includes read); ` +
    'webhooks alone nothing', async (t) => {
    const app = await appFor(t)
    await seed(app)
    const [reader, writer, hooks] = tokens.map(({ token }) => `Bearer ${token}`)
    for (const { access, ok, request } of operations(fixture)) {
      const needed: Scope = access === 'read' ? read : write
      const label = `${String(request.method)} ${String(request.url)}`
      for (const [caller, allowed] of [[reader, access === 'read'], [hooks, false], [writer, true]] as const) {
        const res = await inject(app, request, caller)
        if (allowed) {
          assert.equal(res.statusCode, ok, `${label}: ${res.body}`)
          continue
        }
        assert.equal(res.statusCode, 403, label)
        assert.equal(res.headers['www-authenticate'], `Bearer error="insufficient_scope", scope="${needed}"`, label)
        const message = `This token lacks the scope ${needed}, which this operation needs`
        if (request.method !== 'HEAD') assert.deepEqual(res.json(), { error: 403, message }, label)
      }
    }
  })
}
