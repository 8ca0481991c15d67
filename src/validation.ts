import AjvCompiler from '@fastify/ajv-compiler'
import type { FastifySchemaCompiler, FastifyServerOptions } from 'fastify'

type BuildValidator = NonNullable<NonNullable<NonNullable<FastifyServerOptions['schemaController']>['compilersFactory']>['buildValidator']>
type RouteValidatorCompiler = FastifySchemaCompiler<unknown>

/**
 * Query strings, path parameters and headers arrive as text, so their validator coerces (`'5'` → 5).
 * A JSON body already carries its types, so its validator does not: `{"name": 5}` or `{"id": true}`
 * are 400s rather than a name "5" and a plant 1.
 */
export function validatorWithoutBodyCoercion (): BuildValidator {
  const fromPool = AjvCompiler()
  const build = (...[externalSchemas, options]: Parameters<BuildValidator>): RouteValidatorCompiler => {
    const coercing = fromPool(externalSchemas, options) as unknown as RouteValidatorCompiler
    const exact = fromPool(externalSchemas, {
      ...options,
      customOptions: { ...(options as { customOptions?: object } | undefined)?.customOptions, coerceTypes: false }
    } as Parameters<BuildValidator>[1]) as unknown as RouteValidatorCompiler
    return (route) => (route.httpPart === 'body' ? exact : coercing)(route)
  }
  return build as unknown as BuildValidator
}
