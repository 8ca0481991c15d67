import { writeFileSync } from 'node:fs'
import { relative } from 'node:path'
import { CONFIGURATION_PAGE, configurationPage, ENV_EXAMPLE, envExample, readConfigurationPage } from './config-docs.js'

// `npm run gen:docs`: the settings table of docs/configuration.md and .env.example, from EnvSchema.
writeFileSync(CONFIGURATION_PAGE, configurationPage(readConfigurationPage()))
writeFileSync(ENV_EXAMPLE, envExample())
process.stdout.write(`wrote ${relative(process.cwd(), CONFIGURATION_PAGE)} and ${relative(process.cwd(), ENV_EXAMPLE)}\n`)
