import assert from 'node:assert/strict'
import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { AUTH } from './app.js'

export interface PlantBody {
  id: number
  name: string
  tag?: string
  createdAt: string
  updatedAt: string
}

export const JSON_TYPE = 'application/json; charset=utf-8'

/** Creates a plant through the API and returns the 201's body and ETag. */
export async function createPlant (app: FastifyInstance,
  body: Record<string, unknown>): Promise<{ plant: PlantBody, etag: string }> {
  const res = await app.inject({ method: 'POST', url: '/plants', headers: AUTH, payload: body })
  assert.equal(res.statusCode, 201, res.body)
  const etag = res.headers.etag
  assert.equal(typeof etag, 'string')
  return { plant: res.json<PlantBody>(), etag: etag as string }
}

/** Asserts an Error-shaped answer with exactly this status and message. */
export function assertError (res: LightMyRequestResponse, status: number, message: string | RegExp): void {
  assert.equal(res.statusCode, status, res.body)
  assert.equal(res.headers['content-type'], JSON_TYPE)
  const body = res.json<{ error: number, message: string }>()
  assert.deepEqual(Object.keys(body).sort(), ['error', 'message'])
  assert.equal(body.error, status)
  if (typeof message === 'string') assert.equal(body.message, message)
  else assert.match(body.message, message)
}

/** The URL in `Link: <url>; rel="next"`, or undefined when there is no such header. */
export function nextLink (header: string | string[] | undefined): string | undefined {
  if (header === undefined) return undefined
  const match = /^<([^>]+)>; rel="next"$/.exec(String(header))
  assert.ok(match, `unexpected Link header: ${String(header)}`)
  return match[1]
}
