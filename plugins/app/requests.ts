import type { IncomingHttpHeaders } from 'node:http'
import type { FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import {
  invalidBody, invalidHeader, invalidQuery, unsupportedContentEncoding, unsupportedMediaType
} from '../../src/lib/errors.js'
import { isUtf8Label, parseJsonBody } from '../http/json-body.js'
import { clipped, notFoundError } from './error-handler.js'

const DEFAULT_MEDIA_TYPES: readonly string[] = ['application/json']

const QUOTED_VALUE_MAX = 40

const quoted = (value: string): string => `"${clipped(value, QUOTED_VALUE_MAX)}"`

const documentedPath = (url: string | undefined): string => (url ?? '').replace(/:(\w+)/g, '{$1}')

const takesNoBody = (request: FastifyRequest) =>
  invalidBody(`${request.method} ${documentedPath(request.routeOptions.url)} takes no request body`)

function parseContentType (header: string | undefined): { mediaType: string | undefined, charsets: string[] } {
  if (header === undefined) return { mediaType: undefined, charsets: [] }
  const [mediaType = '', ...parameters] = header.split(';')
  const charsets = parameters.map((parameter) => parameter.trim())
    .filter((parameter) => parameter.toLowerCase().startsWith('charset='))
    .map((parameter) => parameter.slice('charset='.length).replace(/^"(.*)"$/, '$1'))
  return { mediaType: mediaType.trim().toLowerCase(), charsets }
}

/** `identity` is a no-op (accepted, though RFC 9110 reserves it for Accept-Encoding); others need decoding. */
function contentCoding (header: string | undefined): string | undefined {
  if (header === undefined) return undefined
  const codings = header.split(',').map((coding) => coding.trim()).filter((coding) => coding !== '')
  return codings.every((coding) => coding.toLowerCase() === 'identity') ? undefined : header
}

/**
 * The name of the first query parameter that is not percent-encoded UTF-8 ('' when the name itself is not): Fastify
 * keeps such text as it is (`%FF` stays three characters), so a filter would match it literally.
 */
function badQueryParameter (url: string): string | undefined {
  const start = url.indexOf('?')
  if (start === -1 || !url.includes('%', start)) return undefined
  for (const parameter of url.slice(start + 1).split('&')) {
    if (!parameter.includes('%')) continue
    try {
      decodeURIComponent(parameter)
    } catch {
      const end = parameter.indexOf('=')
      try {
        return decodeURIComponent((end === -1 ? parameter : parameter.slice(0, end)).replaceAll('+', ' '))
      } catch {
        return ''
      }
    }
  }
  return undefined
}

const framesBody = (headers: IncomingHttpHeaders): boolean =>
  headers['transfer-encoding'] !== undefined ||
  (headers['content-length'] !== undefined && Number(headers['content-length']) > 0)

/**
 * The one reader of request bodies. A route without a body takes an empty one in any media type (clients send
 * `Content-Type: application/json` on a bare DELETE); a content coding, media type or charset it cannot read is a 415.
 */
async function readBody (request: FastifyRequest, body: Buffer): Promise<unknown> {
  const schema = request.routeOptions.schema
  if (schema?.body === undefined) {
    if (body.length === 0) return undefined
    throw takesNoBody(request)
  }
  const coding = contentCoding(request.headers['content-encoding'])
  if (coding !== undefined && body.length > 0) {
    throw unsupportedContentEncoding(
      `Content-Encoding ${quoted(coding)} is not supported: send the body without a content coding`
    )
  }
  const accepted = schema.consumes ?? DEFAULT_MEDIA_TYPES
  const { mediaType, charsets } = parseContentType(request.headers['content-type'])
  if (mediaType === undefined || !accepted.includes(mediaType)) {
    // Fastify's own wording, kept: clients may already match on it.
    throw unsupportedMediaType('Unsupported Media Type')
  }
  const charset = charsets.find((label) => !isUtf8Label(label))
  if (charset !== undefined) {
    throw unsupportedMediaType(`Content-Type charset ${quoted(charset)} is not supported: send the body as UTF-8`)
  }
  if (body.length === 0) throw invalidBody(`Body cannot be empty when content-type is set to '${mediaType}'`)
  return parseJsonBody(body, mediaType)
}

/** An HTTP/1.1 request names exactly one Host (RFC 9112 §3.2; Node's own check answers a bare 400 and is off). */
export default fp(async function requestsPlugin (app) {
  app.addHook('onRequest', function requireOneHost (request, _reply, done) {
    const { raw } = request
    const wrong = raw.headers.host === undefined ? raw.httpVersion === '1.1' : hostLines(raw.rawHeaders) > 1
    done(wrong ? invalidHeader('The request must have exactly one Host header') : undefined)
  })

  // Before Fastify judges framing and Content-Type; after the root hooks that set headers or count requests.
  app.addHook('onRequest', function answerUnrouted (request, _reply, done) {
    done(request.is404 ? notFoundError(app, request) : undefined)
  })

  app.removeAllContentTypeParsers()
  app.addContentTypeParser('*', { parseAs: 'buffer' }, readBody)

  app.addHook('preValidation', function refuseQueryNotUtf8 (request, _reply, done) {
    const name = badQueryParameter(request.url)
    if (name === undefined) done()
    else if (name === '') done(invalidQuery('querystring has a parameter name that is not percent-encoded UTF-8'))
    else done(invalidQuery(`querystring/${clipped(name, QUOTED_VALUE_MAX)} is not percent-encoded UTF-8`))
  })

  // Fastify never reads a GET or HEAD body (it would be silently ignored): refuse one from its framing.
  app.addHook('preValidation', function refuseGetBody (request, _reply, done) {
    const bodyless = request.method === 'GET' || request.method === 'HEAD'
    done(bodyless && framesBody(request.headers) ? takesNoBody(request) : undefined)
  })
}, { name: 'requests', dependencies: ['errors'] })

/** Node keeps only the first Host in `headers`. */
function hostLines (rawHeaders: string[]): number {
  let count = 0
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i]
    // Lower-cased only when it can be Host: every request runs this over all its header names.
    if (name?.length === 4 && name.toLowerCase() === 'host') count++
  }
  return count
}
