import { invalidHeader, noneMatchFailed, preconditionFailed } from '../../src/lib/errors.js'
import type { IfMatch, Resource } from '../../src/resources/definition.js'

/** RFC 9110 §8.8.3. */
type EntityTagCondition = { any: true } | { any: false, tags: EntityTag[] }

interface EntityTag {
  weak: boolean
  opaque: string
}

// One list element: optional weak prefix, a quoted run of etagc (%x21 / %x23-7E / obs-text), then a comma or the end.
const ELEMENT = /[ \t]*(?:(W\/)?("[\x21\x23-\x7E\x80-\xFF]*")[ \t]*)?(?:,|$)/y

/** A malformed value is a 400 rather than a condition silently read as something else. */
export function parseEntityTags (name: string, value: string | undefined): EntityTagCondition | undefined {
  if (value === undefined) return undefined
  if (value.trim() === '*') return { any: true }
  const tags: EntityTag[] = []
  ELEMENT.lastIndex = 0
  while (ELEMENT.lastIndex < value.length) {
    const start = ELEMENT.lastIndex
    const match = ELEMENT.exec(value)
    if (match === null || ELEMENT.lastIndex === start) {
      throw invalidHeader(`${name} must be * or a list of quoted entity tags`)
    }
    if (match[2] !== undefined) tags.push({ weak: match[1] !== undefined, opaque: match[2] })
  }
  if (tags.length === 0) throw invalidHeader(`${name} must be * or a list of quoted entity tags`)
  return { any: false, tags }
}

/** Weak comparison: true means 304. */
export function noneMatchFails (condition: EntityTagCondition | undefined, currentEtag: string): boolean {
  if (condition === undefined) return false
  return condition.any || condition.tags.some((tag) => tag.opaque === currentEtag)
}

/** Strong comparison (a weak tag never matches): true means 412. */
export function matchFails (condition: EntityTagCondition | undefined, currentEtag: string): boolean {
  if (condition === undefined || condition.any) return false
  return !condition.tags.some((tag) => !tag.weak && tag.opaque === currentEtag)
}

/** Only strong tags go to the store, which checks them inside the write. */
function ifMatchForStore (condition: EntityTagCondition | undefined): IfMatch | undefined {
  if (condition === undefined) return undefined
  if (condition.any) return '*'
  return condition.tags.filter((tag) => !tag.weak).map((tag) => tag.opaque)
}

/** RFC 9110 §13.2.2. With If-None-Match the write is tied to the ETag read: one slipping in between makes a 412. */
export async function writePrecondition<T> (
  resource: Resource<T>, id: bigint, ifMatch: EntityTagCondition | undefined,
  ifNoneMatch: EntityTagCondition | undefined, read: (id: bigint) => Promise<T | undefined>
): Promise<IfMatch | undefined> {
  if (ifNoneMatch === undefined) return ifMatchForStore(ifMatch)
  const current = await read(id)
  if (current === undefined) return ifMatchForStore(ifMatch)
  const etag = resource.etag(current)
  if (matchFails(ifMatch, etag)) throw preconditionFailed(resource, id)
  if (noneMatchFails(ifNoneMatch, etag)) throw noneMatchFailed(resource, id)
  return [etag]
}
