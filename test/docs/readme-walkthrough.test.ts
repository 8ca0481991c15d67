import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'node:test'
import { promisify } from 'node:util'
import { TOKEN } from '../helpers/app.js'
import { startServer } from '../helpers/server-process.js'
import { codeBlockUnder, readMarkdown } from './markdown.js'

/** The README's first line of the walk-through, replaced by the started server's address. */
const BASE_LINE = 'BASE=http://127.0.0.1:3000'

interface Step {
  command: string
  /** The `# → …` line after it, without the arrow. */
  expected: string
}

/** The block's commands in order; those followed by a `# →` line are steps to check. */
export function parseWalkthrough (block: string): { script: string[], steps: Step[] } {
  const script: string[] = []
  const steps: Step[] = []
  let command: string[] = []
  for (const line of block.split('\n')) {
    const expectation = /^# → (.+)$/.exec(line)
    if (expectation?.[1] !== undefined) {
      const last = script.at(-1)
      if (last === undefined || !last.startsWith('curl ')) throw new Error(`"${line}" follows no curl command`)
      steps.push({ command: last, expected: expectation[1] })
      script[script.length - 1] = `(${last}) > "$OUT/${steps.length}"`
      continue
    }
    if (line.startsWith('#') || line.trim() === '') continue
    command.push(line)
    if (line.endsWith('\\')) continue
    script.push(command.join('\n'))
    command = []
  }
  return { script, steps }
}

/** Whether `actual` has every field of `expected` (arrays element by element, of equal length). */
function assertIncludes (actual: unknown, expected: unknown, where: string): void {
  if (Array.isArray(expected)) {
    assert.ok(Array.isArray(actual), `${where}: not an array`)
    assert.equal(actual.length, expected.length, `${where}: length`)
    expected.forEach((item, i) => { assertIncludes(actual[i], item, `${where}[${i}]`) })
  } else if (expected !== null && typeof expected === 'object') {
    assert.ok(actual !== null && typeof actual === 'object' && !Array.isArray(actual), `${where}: not an object`)
    const fields = actual as Record<string, unknown>
    for (const [key, value] of Object.entries(expected)) assertIncludes(fields[key], value, `${where}.${key}`)
  } else {
    assert.deepEqual(actual, expected, where)
  }
}

/** Checks one `curl -si` output against `201 Created · Location: /plants/1 · ETag · {"id":1}`. */
export function checkStep (output: string, expected: string, label: string): void {
  const [head = '', body = ''] = output.split(/\r\n\r\n/, 2)
  const [statusLine = '', ...headerLines] = head.split('\r\n')
  const headers = new Map(headerLines.map((line) => {
    const colon = line.indexOf(':')
    return [line.slice(0, colon).toLowerCase(), line.slice(colon + 1).trim()] as const
  }))
  const [status, ...parts] = expected.split(' · ')
  assert.equal(statusLine, `HTTP/1.1 ${status}`, `${label}: status`)
  for (const part of parts) {
    if (part.startsWith('{') || part.startsWith('[')) {
      assertIncludes(JSON.parse(body), JSON.parse(part), 'body')
      continue
    }
    const colon = part.indexOf(': ')
    if (colon === -1) {
      assert.ok(headers.has(part.toLowerCase()), `${label}: a ${part} header`)
    } else {
      assert.equal(headers.get(part.slice(0, colon).toLowerCase()), part.slice(colon + 2),
        `${label}: ${part.slice(0, colon)}`)
    }
  }
}

test('the README walk-through, run with curl against a started server, answers what ' +
  'each "# →" line says', { timeout: 60_000 }, async (t) => {
  const block = readCodeBlock()
  assert.equal(block.split('\n')[0], BASE_LINE)
  const { script, steps } = parseWalkthrough(block)
  assert.ok(steps.length >= 15, `only ${steps.length} checked steps`)

  const server = await startServer(t)
  const out = mkdtempSync(join(tmpdir(), 'plant-store-walkthrough-'))
  t.after(() => { rmSync(out, { recursive: true, force: true }) })
  const bash = ['set -eu', `BASE=${server.baseUrl}`, ...script.slice(1)].join('\n')
  await promisify(execFile)('bash', ['-c', bash], { env: { PATH: process.env.PATH, TOKEN, OUT: out } })

  steps.forEach((step, i) => {
    checkStep(readFileSync(join(out, String(i + 1)), 'utf8'), step.expected,
      `step ${i + 1} (${step.command.split('\n')[0] ?? ''})`)
  })
})

test('the walk-through checker fails on a wrong status, header or body', () => {
  const output = 'HTTP/1.1 201 Created\r\nLocation: /plants/1\r\nETag: "x"\r\n\r\n{"id":1,"name":"Monstera"}'
  checkStep(output, '201 Created · Location: /plants/1 · ETag · {"id":1}', 'ok')
  assert.throws(() => { checkStep(output, '200 OK', 'status') }, /status/)
  assert.throws(() => { checkStep(output, '201 Created · Location: /plants/2', 'location') }, /Location/)
  assert.throws(() => { checkStep(output, '201 Created · Link', 'link') }, /Link header/)
  assert.throws(() => { checkStep(output, '201 Created · {"id":2}', 'body') }, /body\.id/)
  assert.throws(() => parseWalkthrough('X=1\n# → 200 OK\n'), /follows no curl command/)
})

function readCodeBlock (): string {
  return codeBlockUnder(readMarkdown('README.md'), '## Walk-through with curl')
}
