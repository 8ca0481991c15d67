import { sha256 } from './digest.js'

/** What the resource-neutral write rules know of a resource (`PLANT` in src/store/plants.ts). */
export interface Resource<T> {
  /** As messages name one: `Plant 3 not found`. */
  readonly title: string
  readonly etag: (representation: T) => string
}

/** A strong ETag from a representation's fields: the same on every store and instance. */
export function strongEtag (fields: readonly string[]): string {
  return `"${sha256(fields.join('\n'), 'base64url').slice(0, 22)}"`
}
