import { PLANTS } from './plants.js'

/** Every resource served, in the order of the document's routes, scopes, schemas, tags and event types. */
export const RESOURCES = [PLANTS] as const

export type AnyResource = (typeof RESOURCES)[number]

export type ServedResources = typeof RESOURCES
