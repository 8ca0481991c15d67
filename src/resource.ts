import { sha256 } from './digest.js'

/**
 * What the resource-neutral rules need to know of a resource: how messages name it and how its
 * representation is tagged. Each resource declares one (src/store/plants.ts: `PLANT`).
 */
export interface Resource<T> {
  /** As messages name one: `Plant 3 not found`. */
  readonly title: string
  /** A strong ETag of the representation: it changes whenever anything a client can see changes. */
  readonly etag: (representation: T) => string
}

/** A strong ETag from a representation's fields: the same on every store and instance. */
export function strongEtag (fields: readonly string[]): string {
  return `"${sha256(fields.join('\n'), 'base64url').slice(0, 22)}"`
}
