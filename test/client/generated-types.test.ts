import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'
import ts from 'typescript'
import { CLIENT_TYPES_FILE, generateClientTypes } from '../../scripts/client-types.js'
import { servedOpenApiDocument } from '../../scripts/openapi-document.js'

const ROOT = fileURLToPath(new URL('../../../', import.meta.url))

test('the committed client types are what openapi-typescript makes of the served document ' +
  '(else: npm run gen:client)', async () => {
  const fresh = await generateClientTypes(await servedOpenApiDocument())
  const committed = readFileSync(CLIENT_TYPES_FILE, 'utf8')
  assert.ok(committed === fresh, 'client/plant-store-api.ts is stale: run `npm run gen:client` and commit it')
})

/** The files a `tsc -p <config>` compiles, relative to the repo: the roots and all they import. */
function compiledFiles (config: string): string[] {
  const parsed = ts.getParsedCommandLineOfConfigFile(join(ROOT, config), {}, {
    ...ts.sys,
    onUnRecoverableConfigFileDiagnostic: (diagnostic) =>
      assert.fail(ts.flattenDiagnosticMessageText(diagnostic.messageText, ' '))
  })
  assert.ok(parsed !== undefined, config)
  return ts.createProgram(parsed.fileNames, parsed.options).getSourceFiles()
    .map(({ fileName }) => relative(ROOT, fileName)).filter((file) => !file.startsWith('node_modules/'))
}

test('npm run gen:client writes the client before it compiles what imports it, then compiles that against ' +
  'the new client', () => {
  const { scripts } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as
    { scripts: Record<string, string> }
  const steps = (scripts['gen:client'] ?? '').split('&&').map((step) => step.trim())
  const generate = steps.indexOf('node build/scripts/gen-client.js')
  assert.ok(generate > 0, steps.join(' && '))
  // Before it: only a compile of the generator's own program, holding nothing that imports the client.
  for (const step of steps.slice(0, generate)) {
    const config = /^tsc -p (\S+)$/.exec(step)?.[1]
    assert.ok(config !== undefined, `before the generator, only tsc -p: ${step}`)
    const files = compiledFiles(config)
    assert.ok(files.includes('scripts/gen-client.ts'), config)
    assert.deepEqual(files.filter((file) => /^(client|examples|test)\//.test(file)), [], config)
  }
  // After it: the examples (and the tests) are compiled against the client just written.
  assert.deepEqual(steps.slice(generate + 1), ['npm run build:test'])
  assert.ok(compiledFiles('tsconfig.json').includes('examples/plants-client.ts'))
})
