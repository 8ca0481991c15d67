import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import assert from 'node:assert/strict'
import type { FastifyInstance } from 'fastify'
import { newToken } from '../../src/main/commands.js'
import { RESOURCES } from '../../src/resources/index.js'
import { resourceScope, type Scope } from '../../src/auth/scopes.js'
import { tokenDigest } from '../../src/auth/tokens.js'
import { RESOURCE_OPERATIONS, SCOPES } from './resources.js'

/** A named API_TOKENS_FILE entry made as `plant-store token --name … --scopes …` makes it, with its token. */
export interface ScopedToken { name: string, scopes: readonly Scope[], token: string }

export const scopedToken = (name: string,
  scopes: readonly Scope[]): ScopedToken => ({ name, scopes, token: newToken() })

/** Writes an API_TOKENS_FILE of named entries (digests only); returns its path. */
export function tokensFile (entries: readonly ScopedToken[], extraLines: readonly string[] = []): string {
  const dir = mkdtempSync(join(tmpdir(), 'plant-store-scopes-'))
  const file = join(dir, 'tokens')
  writeFileSync(file,
    [...entries.map(({ name, scopes, token }) => `${name} ${scopes.join(',')} sha256:${tokenDigest(token)}`),
      ...extraLines, ''].join('\n'))
  return file
}

/**
 * The scope each operation needs, as issue 32 lists it (independent of the routes' own declarations):
 * `webhooks` under /webhooks, else the read scope of the resource whose collection the path names
 * for a GET or HEAD, its write scope for any other method.
 */
export function neededScope (method: string, path: string): Scope {
  if (path.startsWith('/webhooks')) return 'webhooks'
  const resource = RESOURCES.find(({ collection }) => path === `/${collection}` || path.startsWith(`/${collection}/`))
  if (resource === undefined) throw new Error(`no resource serves ${path}`)
  return resourceScope(resource, method === 'get' || method === 'head' ? 'read' : 'write')
}

/**
 * Whether a caller's scopes let it through an operation that needs `needed`: that scope, or for a
 * resource's read scope its write scope (issue 41: write includes read).
 */
export const allowed = (scopes: readonly Scope[], needed: Scope): boolean =>
  scopes.includes(needed) ||
  RESOURCES.some((resource) =>
    needed === resourceScope(resource, 'read') && scopes.includes(resourceScope(resource, 'write')))

/** The webhooks resource's 13 operations, with a HEAD for each of its 6 GETs. */
export const WEBHOOK_OPERATIONS = 13 + 6

export interface Operation { method: string, path: string, operationId: string }

/** Every operation the OpenAPI document lists behind a token (HEAD included): a new one joins the matrix by itself. */
export async function authenticatedOperations (app: FastifyInstance): Promise<Operation[]> {
  const res = await app.inject({ url: '/openapi.json' })
  const paths = res.json<{
    paths: Record<string, Record<string, {
      operationId: string,
      security?: unknown[]
    }>>
  }>().paths
  return Object.entries(paths).flatMap(([path, operations]) => Object.entries(operations)
    .filter(([, operation]) => operation.security === undefined || operation.security.length > 0)
    .map(([method, operation]) => ({ method, path, operationId: operation.operationId })))
    .filter(({ path }) => !path.startsWith('/health'))
}

/**
 * A request for the operation whose answer does not depend on the store's contents: path
 * parameters that fail validation (400), a body that fails validation (400), or a plain list (200).
 * Validation runs after the auth hook, so the status tells whether the token got through.
 */
export function probe ({ method, path }: Operation): {
  request: { method: string, url: string, payload?: object },
  status: number
} {
  const url = path.replace(/\{[^}]+\}/g, 'x')
  const hasBody = method === 'post' || method === 'put' || method === 'patch'
  const status = url !== path || hasBody ? 400 : 200
  return { request: { method: method.toUpperCase(), url, ...(hasBody && { payload: {} }) }, status }
}

/** A caller of the scope matrix: the scopes it was granted and its Authorization header. */
export interface Caller { label: string, scopes: readonly Scope[], authorization: string }

/**
 * The scope matrix: every authenticated operation with every caller. A caller with a scope that
 * grants the operation (`allowed`) gets the operation's answer; any other gets 403 with the RFC 6750
 * challenge naming the scope needed. The document lists exactly the granting scopes.
 */
export async function assertScopeMatrix (app: FastifyInstance, callers: readonly Caller[]): Promise<void> {
  const operations = await authenticatedOperations(app)
  assert.equal(operations.length, RESOURCE_OPERATIONS.length + WEBHOOK_OPERATIONS,
    'every operation and the HEAD of each GET')
  const documented = await app.inject({ url: '/openapi.json' })
  const paths = documented.json<{ paths: Record<string, Record<string, { 'x-scopes'?: string[] }>> }>().paths
  for (const operation of operations) {
    const needed = neededScope(operation.method, operation.path)
    const { request, status } = probe(operation)
    const label = `${operation.operationId} (${needed})`
    const listed = paths[operation.path]?.[operation.method]?.['x-scopes'] ?? []
    assert.deepEqual([...listed].sort(), SCOPES.filter((scope) => allowed([scope], needed)).sort(),
      `${label}: x-scopes lists the scopes that pass`)
    for (const caller of callers) {
      const res = await app.inject({ ...request, headers: { authorization: caller.authorization } })
      if (allowed(caller.scopes, needed)) {
        assert.equal(res.statusCode, status, `${label} with ${caller.label}`)
        continue
      }
      assert.equal(res.statusCode, 403, `${label} with ${caller.label}`)
      assert.equal(res.headers['www-authenticate'], `Bearer error="insufficient_scope", scope="${needed}"`, label)
      if (request.method !== 'HEAD') {
        assert.deepEqual(res.json(),
          { error: 403, message: `This token lacks the scope ${needed}, which this operation needs` }, label)
      }
    }
  }
}

export { SCOPES }
