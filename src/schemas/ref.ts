import { Type, type SchemaOptions, type Static, type TSchema, type TUnsafe } from '@sinclair/typebox'

/**
 * A `$ref` to a shared schema (registered with `addSchema`) that keeps the referenced static type,
 * so the OpenAPI document names it under `components/schemas` instead of inlining it.
 */
export function ref<T extends TSchema> (schema: T, options?: SchemaOptions): TUnsafe<Static<T>> {
  if (schema.$id === undefined) throw new Error('ref() needs a schema with an $id')
  return Type.Unsafe<Static<T>>(Type.Ref(schema.$id, options))
}
