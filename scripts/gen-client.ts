import { mkdirSync, writeFileSync } from 'node:fs'
import { dirname, relative } from 'node:path'
import { CLIENT_TYPES_FILE, generateClientTypes } from './client-types.js'
import { servedOpenApiDocument } from './openapi-document.js'

// `npm run gen:client`: regenerates the typed client from the document the app itself serves.
const types = await generateClientTypes(await servedOpenApiDocument())
mkdirSync(dirname(CLIENT_TYPES_FILE), { recursive: true })
writeFileSync(CLIENT_TYPES_FILE, types)
process.stdout.write(`wrote ${relative(process.cwd(), CLIENT_TYPES_FILE)}\n`)
