import { writeFileSync } from 'node:fs'
import { relative } from 'node:path'
import { RESOURCES } from '../src/resources/index.js'
import { CONFIGURATION_PAGE, configurationPage, ENV_EXAMPLE, envExample, readConfigurationPage } from './config-docs.js'
import { servedOpenApiDocument } from './openapi-document.js'
import { readWebhooksPage, WEBHOOKS_PAGE, webhooksPage } from './webhook-docs.js'

// `npm run gen:docs`: docs/configuration.md's settings table and .env.example from EnvSchema, and its scope table;
// docs/webhooks.md's default events from the served resources.
writeFileSync(CONFIGURATION_PAGE, configurationPage(readConfigurationPage(), await servedOpenApiDocument()))
writeFileSync(ENV_EXAMPLE, envExample())
writeFileSync(WEBHOOKS_PAGE, webhooksPage(readWebhooksPage(), RESOURCES))
const written = [CONFIGURATION_PAGE, ENV_EXAMPLE, WEBHOOKS_PAGE].map((file) => relative(process.cwd(), file))
process.stdout.write(`wrote ${written.join(', ')}\n`)
