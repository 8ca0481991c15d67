import assert from 'node:assert/strict'
import { test } from 'node:test'
import fc from 'fast-check'
import { isServiceError } from '../../../src/lib/errors.js'
import { parseJsonBody } from '../../../plugins/http/json-body.js'

/** What parseJsonBody says of a text: the value, or the message of its invalid-body error. */
function read (text: string): { value: unknown } | { refused: string } {
  try {
    return { value: parseJsonBody(Buffer.from(text), 'application/json') }
  } catch (err) {
    assert.ok(isServiceError(err, 'invalid-body'), String(err))
    return { refused: err.message }
  }
}

/** A JSON text written member by member, so that an object may name a member twice; `repeats` says whether one does. */
interface Written { text: string, repeats: boolean }

// Few names, so that they collide; colons in names and strings, and names spelled with \u escapes.
const NAMES = ['a', 'b', 'a:b', ':', 'id', 'name']
const spelled = (name: string, escape: boolean): string =>
  escape
    ? `"${[...name].map((char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`).join('')}"`
    : JSON.stringify(name)

const written = fc.letrec<{ node: Written }>((tie) => ({
  node: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.oneof(fc.integer(), fc.constantFrom('"x:y"', '":"', '"\\":\\""', 'true', 'null', '"\\u003a"'),
      fc.string().map((text) => JSON.stringify(text)))
      .map((value): Written => ({ text: typeof value === 'number' ? String(value) : value, repeats: false })),
    fc.array(tie('node')).map((items): Written => ({
      text: `[${items.map((item) => item.text).join(',')}]`,
      repeats: items.some((item) => item.repeats)
    })),
    fc.array(
      fc.tuple(fc.constantFrom(...NAMES), fc.boolean(), fc.constantFrom('', ' ', '\n'),
        tie('node'))).map((members): Written => ({
      text: `{${members.map(([name, escape, space, value]) =>
        `${space}${spelled(name, escape)}${space}:${space}${value.text}`).join(',')}}`,
      repeats: new Set(members.map(([name]) => name)).size < members.length ||
        members.some(([, , , value]) => value.repeats)
    }))
  )
}))

test('a member named twice in any object is refused, whatever the spelling; every other text reads ' +
  'as JSON.parse reads it', () => {
  fc.assert(fc.property(written.node, ({ text, repeats }) => {
    const result = read(text)
    if (repeats) {
      assert.ok('refused' in result, text)
      assert.match(result.refused,
        /^body(\/[^ ]*)? has the member ".*" more than once: member names must be unique \(I-JSON, RFC 7493\)$/)
    } else {
      assert.deepEqual(result, { value: JSON.parse(text) }, text)
    }
  }), { numRuns: 2000 })
})

test('a duplicate is named with where it is, and its name quoted (cut at 40 characters)', () => {
  const long = 'n'.repeat(60)
  assert.deepEqual(read(`{"list":[0,{"${long}":1,"${long}":2}]}`), {
    refused: `body/list/1 has the member "${'n'.repeat(40)}…" more than once: member names must be ` +
      'unique (I-JSON, RFC 7493)'
  })
  assert.deepEqual(read('{"a":{"b\\"c":1,"b\\u0022c":2}}'), {
    refused: 'body/a has the member "b\\"c" more than once: member names must be unique (I-JSON, RFC 7493)'
  })
})

test('an id member written with a fraction or exponent is refused at any depth; other numbers and ' +
  'other members are not', () => {
  const inexact = (where: string): { refused: string } =>
    ({ refused: `${where}/id must be an integer written without a fraction or exponent: an id is an exact int64` })
  for (const id of ['1.0', '1e3', '-2E-1', '9007199254740991.4', '0.5']) {
    assert.deepEqual(read(`{"id":${id}}`), inexact('body'), id)
    assert.deepEqual(read(`[{"x":[1.5,{"id" :\t${id}}]}]`), inexact('body/0/x/1'), id)
  }
  for (const text of ['{"id":42}', '{"id":-7,"x":1.5e3}', '{"ids":1.5}', '{"x":{"id":"1.5"}}', '{"id":[1.5]}',
    '{"name":"\\"id\\":1.5"}',
    '{"\\"id":1.5}', '[1.5,"id",2e3]', '{"id":0,"v":{"w":1e-3}}']) {
    assert.deepEqual(read(text), { value: JSON.parse(text) }, text)
  }
})
