import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { test } from 'node:test'
import {
  configurationPage, ENV_EXAMPLE, envExample, readConfigurationPage, scopeTable, settings,
  tableRow
} from '../../scripts/config-docs.js'
import { servedOpenApiDocument } from '../../scripts/openapi-document.js'
import { EXPECTED_SCOPES } from '../helpers/resources.js'
import { TOKEN } from '../helpers/app.js'
import { SERVER_JS } from '../helpers/server-process.js'
import { codeBlockUnder, readMarkdown } from './markdown.js'

test('docs/configuration.md holds the tables generated from EnvSchema and the served document ' +
  '(npm run gen:docs)', async () => {
  const page = readConfigurationPage()
  assert.equal(page, configurationPage(page, await servedOpenApiDocument()), 'stale: run npm run gen:docs')
  for (const { name } of settings()) assert.match(page, new RegExp(`^\\| \`${name}\` \\|`, 'm'))
  assert.match(page, /^\| `plants:read` \| List and get plants \| `listPlants`, `getPlant` \(and their HEADs\) \|$/m)
})

test('the scope table lists each scope\'s operations from the document\'s x-scopes', () => {
  const document = {
    paths: {
      '/a': {
        get: { operationId: 'listA', 'x-scopes': ['plants:read'] },
        head: { operationId: 'headA', 'x-scopes': ['plants:read'] }
      },
      '/b': { post: { operationId: 'makeB', 'x-scopes': ['webhooks'] } },
      '/health': { get: { operationId: 'health', security: [] } }
    }
  }
  const rows = scopeTable(document).split('\n')
  const operations: Record<string, string> = { 'plants:read': '`listA` (and their HEADs)', webhooks: '`makeB`' }
  assert.deepEqual(rows.slice(2),
    EXPECTED_SCOPES.map(({ scope, description }) => `| \`${scope}\` | ${description} | ${operations[scope] ?? ''} |`))
  assert.equal(rows[2], '| `plants:read` | List and get plants | `listA` (and their HEADs) |')
})

test('.env.example lists every setting at its default (npm run gen:docs)', () => {
  assert.equal(readFileSync(ENV_EXAMPLE, 'utf8'), envExample(), 'stale: run npm run gen:docs')
})

test('.env.example, every line uncommented and a token in API_TOKENS: node ' +
  '--env-file=.env.example server.js check passes (an empty value is unset, but an empty token setting is refused)',
async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'plant-store-env-example-'))
  t.after(() => rmSync(dir, { recursive: true, force: true }))
  const uncommented = readFileSync(ENV_EXAMPLE, 'utf8').replace(/^# ([A-Z][A-Z0-9_]*=)/gm, '$1')
  assert.ok((uncommented.match(/^[A-Z][A-Z0-9_]*=$/gm)?.length ?? 0) >= 10, 'empty values are among them')
  assert.equal(uncommented.match(/^[A-Z][A-Z0-9_]*=/gm)?.length, settings().length)
  const check = async (text: string): Promise<{ stdout: string, stderr: string, code?: number }> => {
    writeFileSync(join(dir, '.env'), text)
    // Only PATH from here: the file is the whole configuration (DATABASE_URL's default is relative to cwd).
    return await promisify(execFile)(process.execPath, ['--env-file=.env', SERVER_JS, 'check'],
      { cwd: dir, env: { PATH: process.env.PATH } })
      .catch(({ stdout, stderr, code }: { stdout: string, stderr: string, code: number }) => ({ stdout, stderr, code }))
  }
  assert.deepEqual(await check(uncommented), {
    stdout: '',
    stderr: 'plant-store: invalid configuration: API_TOKENS is set but holds no token (unset it to have none)\n',
    code: 1
  })
  const run = await check(
    uncommented.replace(/^API_TOKENS=$/m, `API_TOKENS=${TOKEN}`).replace(/^API_TOKENS_FILE=$/m, '# API_TOKENS_FILE='))
  assert.equal(run.stdout,
    'plant-store check: configuration ok\nplant-store check: database data/plants.db does not exist yet; the ' +
      'first start creates it\n')
  assert.equal(run.stderr, '')
})

test('the README\'s short configuration table is made of the generated rows, defaults included', () => {
  const readme = readMarkdown('README.md')
  const section = readme.slice(readme.indexOf('## Configuration'), readme.indexOf('## Statuses'))
  const rows = section.split('\n').filter((line) => line.startsWith('| `'))
  assert.ok(rows.length >= 8)
  const generated = new Set(settings().map(tableRow))
  for (const row of rows) assert.ok(generated.has(row), `not as generated: ${row}`)
})

test('a generated row shows the default, or — when there is none, and escapes pipes', () => {
  assert.equal(tableRow({ name: 'A', defaultValue: '1', description: 'x | y' }), '| `A` | `1` | x \\| y |')
  assert.equal(tableRow({ name: 'B', defaultValue: undefined, description: 'z' }), '| `B` | — | z |')
  assert.equal(tableRow({ name: 'C', defaultValue: '', description: 'z' }), '| `C` | (empty) | z |')
  assert.throws(() => configurationPage('no markers', { paths: {} }), /markers/)
  assert.ok(codeBlockUnder('## X\n```sh\nls\n```\n', '## X') === 'ls\n')
})
