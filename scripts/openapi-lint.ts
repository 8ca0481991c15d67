import { fileURLToPath } from 'node:url'
import { lintFromString, loadConfig } from '@redocly/openapi-core'
import { Validator } from '@seriousme/openapi-schema-validator'

/** The committed Redocly configuration (the lint rules). */
export const REDOCLY_CONFIG = fileURLToPath(new URL('../../redocly.yaml', import.meta.url))

export interface ContractProblem {
  source: 'openapi-3.1-schema' | 'redocly'
  rule: string
  where: string
  message: string
}

/**
 * Checks a document against the OpenAPI 3.1 JSON Schema and lints it with the committed Redocly
 * rules. Offline: the document is in memory and has no external references.
 */
export async function checkOpenApiDocument (document: Record<string, unknown>): Promise<ContractProblem[]> {
  const problems: ContractProblem[] = []

  const validator = new Validator()
  const result = await validator.validate(document)
  if (validator.version !== '3.1') {
    problems.push({ source: 'openapi-3.1-schema', rule: 'version', where: '#/openapi', message: `expected OpenAPI 3.1, got ${validator.version}` })
  }
  for (const error of Array.isArray(result.errors) ? result.errors : []) {
    problems.push({ source: 'openapi-3.1-schema', rule: error.keyword, where: `#${error.instancePath}`, message: error.message ?? '' })
  }

  const config = await loadConfig({ configPath: REDOCLY_CONFIG })
  const lintProblems = await lintFromString({ source: JSON.stringify(document, null, 2), absoluteRef: 'openapi.json', config })
  for (const problem of lintProblems) {
    if (problem.ignored === true) continue
    problems.push({ source: 'redocly', rule: problem.ruleId, where: problem.location[0]?.pointer ?? '#', message: `${problem.severity}: ${problem.message}` })
  }
  return problems
}
