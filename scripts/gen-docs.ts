import { writeFileSync } from 'node:fs'
import { relative } from 'node:path'
import { CONFIGURATION_PAGE, configurationPage, ENV_EXAMPLE, envExample, readConfigurationPage } from './config-docs.js'
import { servedOpenApiDocument } from './openapi-document.js'

// `npm run gen:docs`: docs/configuration.md's settings table and .env.example from EnvSchema, and its scope table.
writeFileSync(CONFIGURATION_PAGE, configurationPage(readConfigurationPage(), await servedOpenApiDocument()))
writeFileSync(ENV_EXAMPLE, envExample())
process.stdout.write(
  `wrote ${relative(process.cwd(), CONFIGURATION_PAGE)} and ${relative(process.cwd(), ENV_EXAMPLE)}\n`)
