import type { Socket } from 'node:net'
import { STATUS_CODES } from 'node:http'
import createError from '@fastify/error'
import type { FastifyError, FastifyReply, FastifyRequest, FastifySchemaValidationError } from 'fastify'
import type { ErrorBody } from './schemas/error.js'
import { patternMessages } from './schemas/pattern-messages.js'

/** The Error body for a status: `error` is the status code itself. */
export function errorBody (status: number, message: string): ErrorBody {
  return { error: status, message }
}

export const PlantNotFoundError = createError<[string]>('PLANT_NOT_FOUND', 'Plant %s not found', 404)
export const ShuttingDownError = createError('SHUTTING_DOWN', 'The service is shutting down, retry on another instance', 503)
export const DatabaseUnavailableError = createError('DATABASE_UNAVAILABLE', 'The database is unavailable, retry shortly', 503)

/**
 * Turns an error from any source into the status and message a client may see. Anything that is
 * not a deliberate 4xx/503 becomes a generic 500: no stack, SQL text or file path leaves the service.
 */
export function toErrorBody (error: unknown): ErrorBody {
  const { statusCode: status, message } = (error ?? {}) as Partial<FastifyError>
  if (typeof status === 'number' && typeof message === 'string' && ((status >= 400 && status < 500) || status === 503)) {
    return errorBody(status, message)
  }
  return errorBody(500, 'Internal Server Error')
}

/** Validation messages that name the offending field, e.g. `body has unknown property 'colour'`. */
export function formatValidationErrors (errors: FastifySchemaValidationError[], dataVar: string): Error {
  const messages = errors.map((error) => {
    const where = `${dataVar}${error.instancePath}`
    const params = error.params as Record<string, unknown>
    if (error.keyword === 'additionalProperties') return `${where} has unknown property '${String(params.additionalProperty)}'`
    if (error.keyword === 'required') return `${where} must have property '${String(params.missingProperty)}'`
    const patternMessage = error.keyword === 'pattern' ? patternMessages.get(String(params.pattern)) : undefined
    if (patternMessage !== undefined) return `${where} ${patternMessage}`
    return `${where} ${error.message ?? 'is invalid'}`
  })
  return new Error(messages.join(', '))
}

/** For errors Fastify raises before routing (a malformed URL, for one): same shape as the rest. */
export function frameworkErrorHandler (error: FastifyError, _request: FastifyRequest, reply: FastifyReply): void {
  const body = toErrorBody(error)
  void reply.code(body.error).type('application/json; charset=utf-8').send(body)
}

/** For requests so malformed that the HTTP parser rejects them: answer in the Error shape, then hang up. */
export function clientErrorHandler (error: NodeJS.ErrnoException, socket: Socket): void {
  if (error.code === 'ECONNRESET' || !socket.writable) {
    socket.destroy()
    return
  }
  const status = error.code === 'HPE_HEADER_OVERFLOW' ? 431 : error.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 408 : 400
  const body = JSON.stringify(errorBody(status, STATUS_CODES[status] ?? 'Bad Request'))
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\n` +
    `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`
  )
}

export const PlantIdTakenError = createError<[string]>('PLANT_ID_TAKEN', 'Plant %s already exists', 409)
export const PreconditionFailedError = createError<[string]>(
  'PRECONDITION_FAILED', 'Plant %s does not match If-Match: it has changed or is gone; GET it again', 412)
export const IdempotencyKeyReusedError = createError(
  'IDEMPOTENCY_KEY_REUSED', 'This Idempotency-Key was already used with a different request body', 422)
/** A request header or query value that the schema alone cannot judge. */
export const InvalidHeaderError = createError<[string]>('INVALID_HEADER', '%s', 400)
export const InvalidQueryError = createError<[string]>('INVALID_QUERY', '%s', 400)
