import { test } from 'node:test'
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { groupModule, planTests, startsProcesses } from '../../scripts/test-plan.js'

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../..')

/** A scratch tree: each path → its content, under a fresh directory removed when the test ends. */
function tree (t: { after: (fn: () => void) => void }, files: Record<string, string>): string {
  const root = mkdtempSync(join(tmpdir(), 'plant-store-plan-'))
  t.after(() => { rmSync(root, { recursive: true, force: true }) })
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(dirname(join(root, path)), { recursive: true })
    writeFileSync(join(root, path), content)
  }
  return root
}

function testFiles (dir: string): string[] {
  return readdirSync(join(ROOT, dir), { recursive: true, encoding: 'utf8' })
    .filter((name) => name.endsWith('.test.ts')).map((name) => join(dir, name)).sort()
}

test('a file starts processes when it or a test/ helper it imports does; the service\'s modules do not count', (t) => {
  const root = tree(t, {
    'test/direct.test.ts': "import { spawn } from 'node:child_process'\n",
    'test/through.test.ts': "import { run } from './helpers/run.js'\n",
    'test/helpers/run.ts': "import { helper } from './deeper.js'\n",
    'test/helpers/deeper.ts': "import { execFile } from 'node:child_process'\n",
    'test/cycle.test.ts': "import './helpers/a.js'\n",
    'test/helpers/a.ts': "import './b.js'\n",
    'test/helpers/b.ts': "import './a.js'\nimport 'node:fs'\n",
    'test/in-process.test.ts': "import { server } from '../src/server.js'\n",
    'src/server.ts': "import { fork } from 'node:child_process'\n"
  })
  assert.equal(startsProcesses(root, 'test/direct.test.ts'), true)
  assert.equal(startsProcesses(root, 'test/through.test.ts'), true)
  assert.equal(startsProcesses(root, 'test/cycle.test.ts'), false)
  assert.equal(startsProcesses(root, 'test/in-process.test.ts'), false)
})

test('the plan runs each test file once: those that start processes alone, the rest dealt into the groups', () => {
  const files = testFiles('test')
  const plan = planTests(ROOT, files, 6)
  assert.deepEqual([...plan.alone, ...plan.groups.flat()].sort(), files)
  assert.equal(plan.groups.length, 6)
  const sizes = plan.groups.map((group) => group.length)
  assert.ok(Math.max(...sizes) - Math.min(...sizes) <= 1, `group sizes ${sizes.join(', ')}`)
  // This file and the server's own tests start processes; a route test builds its app in-process.
  for (const file of ['test/scripts/test-plan.test.ts', 'test/src/main/server.test.ts']) {
    assert.ok(plan.alone.includes(file), file)
  }
  assert.ok(plan.groups.flat().includes('test/plugins/routes/plants/get.test.ts'))
})

test('a group module runs each file inside a describe of its name: no file\'s hooks reach another\'s tests', (t) => {
  const root = tree(t, {
    'hooked.test.js': [
      "import { beforeEach, test } from 'node:test'",
      'beforeEach(() => { globalThis.hooked = (globalThis.hooked ?? 0) + 1 })',
      "test('sees its own hook', () => {",
      "  if (globalThis.hooked !== 1) throw new Error('hook ran ' + globalThis.hooked)",
      '})',
      ''
    ].join('\n'),
    'plain.test.js': [
      "import { test } from 'node:test'",
      'await new Promise((resolve) => setTimeout(resolve, 5))',
      "test('is not hooked', () => { if (globalThis.hooked !== 1) throw new Error('hook ran ' + globalThis.hooked) })",
      ''
    ].join('\n')
  })
  const entry = join(root, 'group.mjs')
  writeFileSync(entry, groupModule([join(root, 'hooked.test.js'), join(root, 'plain.test.js')], root))
  const output = execFileSync(process.execPath, ['--test', '--test-reporter=spec', entry], {
    encoding: 'utf8',
    env: { PATH: process.env.PATH ?? '' }
  })
  assert.match(output, /▶ "?hooked\.test\.js"?\n {2}✔ sees its own hook/)
  assert.match(output, /▶ "?plain\.test\.js"?\n {2}✔ is not hooked/)
  assert.match(output, /ℹ pass 2\n/)
})
