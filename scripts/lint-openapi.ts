import { checkOpenApiDocument } from './openapi-lint.js'
import { servedOpenApiDocument } from './openapi-document.js'

// `npm run lint:openapi`: the served document must pass the OpenAPI 3.1 schema, the Redocly rules and Spectral's.
const problems = await checkOpenApiDocument(await servedOpenApiDocument())
for (const problem of problems) {
  process.stdout.write(`${problem.source} ${problem.rule} ${problem.where}\n  ${problem.message}\n`)
}
process.stdout.write(
  problems.length === 0
    ? 'OpenAPI document: valid OpenAPI ' +
    '3.1, no lint problems\n'
    : `OpenAPI document: ${problems.length} problem(s)\n`)
process.exitCode = problems.length === 0 ? 0 : 1
