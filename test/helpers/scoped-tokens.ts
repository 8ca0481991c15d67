import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { FastifyInstance } from 'fastify'
import { newToken } from '../../src/commands.js'
import { SCOPES, type Scope } from '../../src/scopes.js'
import { tokenDigest } from '../../src/tokens.js'

/** A named API_TOKENS_FILE entry made as `plant-store token --name … --scopes …` makes it, with its token. */
export interface ScopedToken { name: string, scopes: readonly Scope[], token: string }

export const scopedToken = (name: string, scopes: readonly Scope[]): ScopedToken => ({ name, scopes, token: newToken() })

/** Writes an API_TOKENS_FILE of named entries (digests only); returns its path. */
export function tokensFile (entries: readonly ScopedToken[], extraLines: readonly string[] = []): string {
  const dir = mkdtempSync(join(tmpdir(), 'plant-store-scopes-'))
  const file = join(dir, 'tokens')
  writeFileSync(file, [...entries.map(({ name, scopes, token }) => `${name} ${scopes.join(',')} sha256:${tokenDigest(token)}`), ...extraLines, ''].join('\n'))
  return file
}

/** The scope each operation needs, as issue 32 lists it (independent of the routes' own declarations). */
export function neededScope (method: string, path: string): Scope {
  if (path.startsWith('/webhooks')) return 'webhooks'
  return method === 'get' || method === 'head' ? 'plants:read' : 'plants:write'
}

export interface Operation { method: string, path: string, operationId: string }

/** Every operation the OpenAPI document lists behind a token (HEAD included): a new one joins the matrix by itself. */
export async function authenticatedOperations (app: FastifyInstance): Promise<Operation[]> {
  const res = await app.inject({ url: '/openapi.json' })
  const paths = res.json<{ paths: Record<string, Record<string, { operationId: string, security?: unknown[] }>> }>().paths
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
export function probe ({ method, path }: Operation): { request: { method: string, url: string, payload?: object }, status: number } {
  const url = path.replace(/\{[^}]+\}/g, 'x')
  const hasBody = method === 'post' || method === 'put' || method === 'patch'
  const status = url !== path || hasBody ? 400 : 200
  return { request: { method: method.toUpperCase(), url, ...(hasBody && { payload: {} }) }, status }
}

export { SCOPES }
