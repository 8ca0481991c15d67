import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { test } from 'node:test'
import { CLIENT_TYPES_FILE, generateClientTypes } from '../../scripts/client-types.js'
import { servedOpenApiDocument } from '../../scripts/openapi-document.js'

test('the committed client types are what openapi-typescript makes of the served document ' +
  '(else: npm run gen:client)', async () => {
  const fresh = await generateClientTypes(await servedOpenApiDocument())
  const committed = readFileSync(CLIENT_TYPES_FILE, 'utf8')
  assert.ok(committed === fresh, 'client/plant-store-api.ts is stale: run `npm run gen:client` and commit it')
})
