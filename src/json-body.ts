import { invalidBody } from './errors.js'

export const MERGE_PATCH = 'application/merge-patch+json'

/** JSON exchanged between systems is UTF-8 (RFC 8259 §8.1). */

/** The WHATWG Encoding labels of UTF-8. */
export function isUtf8Label (label: string): boolean {
  try {
    return new TextDecoder(label).encoding === 'utf-8'
  } catch {
    return false
  }
}

// `fatal`: non-UTF-8 bytes are an error, never stored as U+FFFD. A leading BOM is dropped (RFC 8259 allows it).
const UTF8 = new TextDecoder('utf-8', { fatal: true })

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

/** Prototype poisoning: a later copy or merge of the value could turn these keys into a prototype change. */
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
