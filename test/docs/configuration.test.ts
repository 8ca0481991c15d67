import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { test } from 'node:test'
import { configurationPage, ENV_EXAMPLE, envExample, readConfigurationPage, scopeTable, settings, tableRow } from '../../scripts/config-docs.js'
import { servedOpenApiDocument } from '../../scripts/openapi-document.js'
import { loadConfig } from '../../src/load-config.js'
import { codeBlockUnder, readMarkdown } from './markdown.js'

test('docs/configuration.md holds the tables generated from EnvSchema and the served document (npm run gen:docs)', async () => {
  const page = readConfigurationPage()
  assert.equal(page, configurationPage(page, await servedOpenApiDocument()), 'stale: run npm run gen:docs')
  for (const { name } of settings()) assert.match(page, new RegExp(`^\\| \`${name}\` \\|`, 'm'))
  assert.match(page, /^\| `plants:read` \| List and get plants \| `listPlants`, `getPlant` \(and their HEADs\) \|$/m)
})

test('the scope table lists each scope\'s operations from the document\'s security requirements', () => {
  const document = {
    paths: {
      '/a': { get: { operationId: 'listA', security: [{ bearerAuth: ['plants:read'] }] }, head: { operationId: 'headA', security: [{ bearerAuth: ['plants:read'] }] } },
      '/b': { post: { operationId: 'makeB', security: [{ bearerAuth: ['webhooks'] }] } },
      '/health': { get: { operationId: 'health', security: [] } }
    }
  }
  const rows = scopeTable(document).split('\n')
  assert.deepEqual(rows.slice(2), [
    '| `plants:read` | List and get plants | `listA` (and their HEADs) |',
    '| `plants:write` | Create, replace, update and delete plants; includes `plants:read` |  |',
    '| `webhooks` | Manage the caller\'s own webhook subscriptions | `makeB` |'
  ])
})

test('.env.example lists every setting at its default (npm run gen:docs)', () => {
  assert.equal(readFileSync(ENV_EXAMPLE, 'utf8'), envExample(), 'stale: run npm run gen:docs')
  // Uncommented, it is a valid configuration: the defaults load (a value left empty is unset).
  const env = Object.fromEntries(envExample().split('\n').filter((line) => /^# [A-Z_]+=/.test(line))
    .map((line) => line.slice(2).split(/=(.*)/s).slice(0, 2) as [string, string]).filter(([, value]) => value !== ''))
  assert.equal(Object.keys(env).length > 30, true)
  assert.doesNotThrow(() => loadConfig(env))
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
