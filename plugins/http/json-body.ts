import { invalidBody } from '../../src/lib/errors.js'

export const MERGE_PATCH = 'application/merge-patch+json'

/** The WHATWG Encoding labels of UTF-8. */
export function isUtf8Label (label: string): boolean {
  try {
    return new TextDecoder(label).encoding === 'utf-8'
  } catch {
    return false
  }
}

// JSON between systems is UTF-8 (RFC 8259 §8.1); `fatal`: never stored as U+FFFD. A leading BOM is dropped.
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
  const escaped = text.includes('\\u')
  // I-JSON (RFC 7493). The exact scan runs only for a text the cheap check flags, or one with \u
  // escapes (which can spell a colon, or a member name, that the cheap check would not see).
  if (escaped || needsStrictScan(text, value)) {
    const problem = strictJsonProblem(text)
    if (problem !== undefined) throw invalidBody(problem)
  }
  // Only a text that spells one of the two keys (or escapes something) can hold them: most bodies skip the walk.
  if (escaped || text.includes('__proto__') || text.includes('constructor')) {
    const problem = prototypeKey(value)
    if (problem !== undefined) throw invalidBody(problem)
  }
  return value
}

/** An `id` with a fraction or exponent, which JSON.parse would round onto another id (no \u escapes: a member name). */
const INEXACT_ID = /[{,]\s*"id"\s*:\s*-?\d+[.eE]/

function occurrences (text: string, char: string): number {
  let count = 0
  for (let at = text.indexOf(char); at !== -1; at = text.indexOf(char, at + 1)) count++
  return count
}

/**
 * Whether a text without \u escapes may break I-JSON: its colons equal the members plus the colons inside strings
 * exactly when no member was dropped as a repeat; a numeric `id` needs INEXACT_ID's look at the text.
 */
function needsStrictScan (text: string, value: unknown): boolean {
  if (!isObject(value)) return false
  let colons = occurrences(text, ':')
  let numericId = false
  const pending: object[] = [value]
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    if (Array.isArray(next)) {
      for (const child of next as unknown[]) {
        if (typeof child === 'string') colons -= occurrences(child, ':')
        else if (isObject(child)) pending.push(child)
      }
      continue
    }
    // A parsed object's prototype has no enumerable properties: for…in sees its own members only.
    for (const key in next) {
      const child = (next as Record<string, unknown>)[key]
      colons -= 1 + occurrences(key, ':')
      if (typeof child === 'string') colons -= occurrences(child, ':')
      else if (isObject(child)) pending.push(child)
      else if (key === 'id' && typeof child === 'number') numericId = true
    }
  }
  return colons !== 0 || (numericId && INEXACT_ID.test(text))
}

const QUOTED_NAME_MAX = 40

const quotedName = (name: string): string =>
  JSON.stringify(name.length > QUOTED_NAME_MAX ? `${name.slice(0, QUOTED_NAME_MAX)}…` : name)

/** An object or array being scanned: where it is (`body/a/0`), and in an object, the names seen. */
interface Scope {
  where: string
  names: Set<string> | undefined
  /** The member whose value comes next, or the array index. */
  at: string | number
  expectsName: boolean
}

const QUOTE = 0x22
const BACKSLASH = 0x5c

/** The exact check of valid JSON text: a message naming the first repeated member or inexact id, else undefined. */
function strictJsonProblem (text: string): string | undefined {
  const scopes: Scope[] = []
  const open = (names: Set<string> | undefined): void => {
    const parent = scopes.at(-1)
    const where = parent === undefined ? 'body' : `${parent.where}/${parent.at}`
    scopes.push({ where, names, at: 0, expectsName: names !== undefined })
  }
  for (let i = 0; i < text.length; i++) {
    const char = text[i]
    const scope = scopes.at(-1)
    if (char === '{') open(new Set())
    else if (char === '[') open(undefined)
    else if (char === '}' || char === ']') scopes.pop()
    else if (char === ',' && scope !== undefined) {
      if (scope.names === undefined) scope.at = (scope.at as number) + 1
      else scope.expectsName = true
    } else if (char === '"') {
      let end = i + 1
      while (text.charCodeAt(end) !== QUOTE) end += text.charCodeAt(end) === BACKSLASH ? 2 : 1
      if (scope?.names !== undefined && scope.expectsName) {
        const literal = text.slice(i, end + 1)
        const name = literal.includes('\\') ? JSON.parse(literal) as string : literal.slice(1, -1)
        if (scope.names.has(name)) {
          return `${scope.where} has the member ${quotedName(name)} more than once: member names must be unique ` +
            '(I-JSON, RFC 7493)'
        }
        scope.names.add(name)
        scope.at = name
        scope.expectsName = false
      }
      i = end
    } else if (char === '-' || (char !== undefined && char >= '0' && char <= '9')) {
      let end = i + 1
      while (end < text.length && /[\d.eE+-]/.test(text[end] as string)) end++
      if (scope?.names !== undefined && scope.at === 'id' && /[.eE]/.test(text.slice(i, end))) {
        return `${scope.where}/id must be an integer written without a fraction or exponent: an id is an exact int64`
      }
      i = end - 1
    }
  }
  return undefined
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
      return `${where} has a "constructor" property with a "prototype", which is refused: it could change the ` +
        'prototype of objects'
    }
    for (const [key, child] of Object.entries(value)) pending.push({ value: child, where: `${where}/${key}` })
  }
  return undefined
}
