import { invalidBody } from './errors.js'

/** A JSON merge patch (RFC 7396), which the PATCH routes read besides plain JSON. */
export const MERGE_PATCH = 'application/merge-patch+json'

/**
 * Reading a JSON request body: bytes → text → value, refusing anything that would otherwise be read
 * as something it is not. JSON exchanged between systems is UTF-8 (RFC 8259 §8.1).
 */

/** True when a `charset` label names UTF-8 (`utf-8`, `UTF8`, `unicode-1-1-utf-8`…: the WHATWG Encoding labels). */
export function isUtf8Label (label: string): boolean {
  try {
    return new TextDecoder(label).encoding === 'utf-8'
  } catch {
    // An unknown label: certainly not UTF-8.
    return false
  }
}

// `fatal`: bytes that are not UTF-8 are an error, never replaced by U+FFFD and stored as such. A
// leading byte order mark is dropped (RFC 8259 allows a parser to ignore it).
const UTF8 = new TextDecoder('utf-8', { fatal: true })

/** Parses a JSON body; `mediaType` only names it in messages. Throws `invalid-body` ServiceErrors. */
export function parseJsonBody (bytes: Uint8Array, mediaType: string): unknown {
  let text: string
  try {
    text = UTF8.decode(bytes)
  } catch {
    throw invalidBody('Body is not valid UTF-8')
  }
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    throw invalidBody(`Body is not valid JSON but content-type is set to '${mediaType}'`)
  }
  // Only a text that spells one of the two keys (or escapes something) can hold them: most bodies skip the walk.
  if (text.includes('__proto__') || text.includes('constructor') || text.includes('\\u')) {
    const problem = prototypeKey(value)
    if (problem !== undefined) throw invalidBody(problem)
  }
  return value
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null

/**
 * Prototype poisoning: JSON.parse makes `__proto__` an ordinary own key, but code that later copies
 * or merges the value (`Object.assign`, a spread into a literal, a deep merge) may turn it, or
 * `constructor.prototype`, into a change of an object's prototype. A body holding either is
 * refused with a message naming where, rather than a generic "invalid JSON".
 */
function prototypeKey (root: unknown): string | undefined {
  const pending: Array<{ value: unknown, where: string }> = [{ value: root, where: 'body' }]
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    const { value, where } = next
    if (!isObject(value)) continue
    if (Object.hasOwn(value, '__proto__')) {
      return `${where} has a "__proto__" property, which is refused: it could change the prototype of objects`
    }
    const constructor = value.constructor
    if (Object.hasOwn(value, 'constructor') && isObject(constructor) && Object.hasOwn(constructor, 'prototype')) {
      return `${where} has a "constructor" property with a "prototype", which is refused: it could change the prototype of objects`
    }
    for (const [key, child] of Object.entries(value)) pending.push({ value: child, where: `${where}/${key}` })
  }
  return undefined
}
