import type { RepositoriesOf } from '../resource.js'
import { PLANTS } from './plants.js'

/** Every resource served, in the document's order: routes, scopes, schemas, tags, event types and store operations follow it. */
export const RESOURCES = [PLANTS] as const

export type AnyResource = (typeof RESOURCES)[number]

export type ServedResources = typeof RESOURCES

export type Repositories = RepositoriesOf<ServedResources>
