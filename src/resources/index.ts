import type { RepositoryOf } from '../resource.js'
import { PLANTS } from './plants.js'

/**
 * Every resource the service serves, in the order of the OpenAPI document: routes, scopes, shared
 * schemas, tags, event types and store operations are made from this list (docs/architecture.md).
 */
export const RESOURCES = [PLANTS] as const

export type AnyResource = (typeof RESOURCES)[number]

/** One repository per resource, keyed by its collection (`store.plants`). */
export type Repositories = { readonly [D in AnyResource as D['collection']]: RepositoryOf<D> }
