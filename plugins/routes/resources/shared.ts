import type { Static, TSchema } from '@sinclair/typebox'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { parseEntityTags, writePrecondition } from '../../http/preconditions.js'
import type { IfMatch, Repository, ResourceDefinition, ResourceTypes } from '../../../src/resources/definition.js'
import type { AnyResource } from '../../../src/resources/index.js'
import { authenticatedErrorResponses } from '../../../src/schemas/error.js'
import { etagHeaderOf, writeConditionsHeaders } from '../../../src/schemas/headers.js'
import { ref } from '../../../src/schemas/ref.js'
import { resourceScope } from '../../../src/auth/scopes.js'
import type { EventOrigin } from '../../../src/webhooks/origin.js'

export interface ResourceRouteOptions {
  resource: ResourceDefinition
}

export const repositoryOf = (request: FastifyRequest, resource: ResourceDefinition): Repository<ResourceTypes> =>
  request.store[resource.collection as AnyResource['collection']]

/** `a plant`, `an order`: as summaries name one. */
export const aOne = ({ name }: ResourceDefinition): string => `${/^[aeiou]/.test(name) ? 'an' : 'a'} ${name}`

export const capitalized = (text: string): string => `${text.charAt(0).toUpperCase()}${text.slice(1)}`

export const operationId = (verb: string, noun: string): string => `${verb}${capitalized(noun)}`

export const writeConditions = ({ name }: ResourceDefinition): string =>
  `With \`If-Match\`, only when the ${name}'s current ETag is listed (or \`*\`); with \`If-None-Match\`, only ` +
  `when it is not (\`*\`: only if there is no ${name}, so a 412 on an existing one); else 412 and nothing changes.`

export const sharedErrors = ({ name }: ResourceDefinition) => ({
  notFound: `No ${name} has this id`,
  stale: `If-Match does not match the ${name}'s current ETag (or the ${name} is gone), or If-None-Match does`,
  tooLarge: 'The body is too large'
})

/** PUT's and PATCH's: `body` names its schema, `notJson` says what 415 means. */
const bodyWriteErrors = (resource: ResourceDefinition, body: string, notJson: string) => {
  const errors = sharedErrors(resource)
  return authenticatedErrorResponses({
    400: `The id is not a signed 64-bit integer, the body is not a valid ${body} (the message names the field), or ` +
      'If-Match or If-None-Match is malformed',
    404: errors.notFound,
    412: errors.stale,
    413: errors.tooLarge,
    415: notJson
  })
}

export const itemResponse = (resource: ResourceDefinition, description: string) =>
  ref(resource.schemas.representation, { description, headers: etagHeaderOf(resource.name) })

export function withEtag<T extends { id: bigint }> (reply: FastifyReply, resource: ResourceDefinition, item: T): T {
  void reply.header('etag', resource.etag(item))
  return item
}

export async function writeCondition (
  repository: Repository<ResourceTypes>,
  resource: ResourceDefinition,
  id: bigint,
  headers: { 'if-match'?: string; 'if-none-match'?: string }
): Promise<IfMatch | undefined> {
  const ifMatch = parseEntityTags('If-Match', headers['if-match'])
  const ifNoneMatch = parseEntityTags('If-None-Match', headers['if-none-match'])
  return await writePrecondition(resource, id, ifMatch, ifNoneMatch, async (itemId) => await repository.get(itemId))
}

/** What a PUT and a PATCH of one item differ in. */
interface BodyWrite<B extends TSchema> {
  method: 'PUT' | 'PATCH'
  verb: 'replace' | 'update'
  body: B
  notJson: string
  consumes?: string[]
  write: (
    repository: Repository<ResourceTypes>, id: bigint, body: Static<B>, condition: IfMatch | undefined,
    origin: EventOrigin
  ) => Promise<ResourceTypes['item']>
}

/** A conditional write of one item from a body, answered with its ETag. */
export function bodyWriteRoute<B extends TSchema> (
  app: FastifyInstance,
  resource: ResourceDefinition,
  { method, verb, body, notJson, consumes, write }: BodyWrite<B>
): void {
  const { collection, name, schemas } = resource
  app.withTypeProvider<TypeBoxTypeProvider>().route({
    method,
    url: `/${collection}/:id`,
    config: { scope: resourceScope(resource, 'write') },
    schema: {
      operationId: operationId(verb, name),
      summary: `${capitalized(verb)} ${aOne(resource)}`,
      description: `${resource.texts[verb].description} ${writeConditions(resource)}`,
      tags: [collection],
      ...(consumes !== undefined && { consumes }),
      params: schemas.params,
      headers: writeConditionsHeaders(name),
      body: ref(body),
      response: {
        200: itemResponse(resource, `The ${name} as ${verb === 'replace' ? 'replaced' : 'updated'}`),
        ...bodyWriteErrors(resource, body.$id ?? '', notJson)
      }
    },
    handler: async (request, reply) => {
      const id = BigInt(request.params.id)
      const repository = repositoryOf(request, resource)
      const condition = await writeCondition(repository, resource, id, request.headers)
      return withEtag(reply, resource, await write(repository, id, request.body, condition, app.eventOrigin(request)))
    }
  })
}
