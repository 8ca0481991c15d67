import { fileURLToPath } from 'node:url'
import { lintFromString, loadConfig } from '@redocly/openapi-core'
import { Validator } from '@seriousme/openapi-schema-validator'
import { Spectral, type RulesetDefinition } from '@stoplight/spectral-core'
import { oas } from '@stoplight/spectral-rulesets'

/** The committed Redocly configuration (the lint rules). */
export const REDOCLY_CONFIG = fileURLToPath(new URL('../../redocly.yaml', import.meta.url))

export interface ContractProblem {
  source: 'openapi-3.1-schema' | 'redocly' | 'spectral'
  rule: string
  where: string
  message: string
}

/**
 * Checks a document against the OpenAPI 3.1 JSON Schema and lints it with the committed Redocly
 * rules and Spectral's `spectral:oas` (every rule it turns on, warnings included). Offline: the
 * document is in memory and has no external references.
 */
export async function checkOpenApiDocument (document: Record<string, unknown>): Promise<ContractProblem[]> {
  const problems: ContractProblem[] = []

  const validator = new Validator()
  const result = await validator.validate(document)
  if (validator.version !== '3.1') {
    problems.push({
      source: 'openapi-3.1-schema',
      rule: 'version',
      where: '#/openapi',
      message: `expected OpenAPI 3.1, got ${validator.version}`
    })
  }
  for (const error of Array.isArray(result.errors) ? result.errors : []) {
    problems.push({
      source: 'openapi-3.1-schema',
      rule: error.keyword,
      where: `#${error.instancePath}`,
      message: error.message ?? ''
    })
  }

  const config = await loadConfig({ configPath: REDOCLY_CONFIG })
  const lintProblems = await lintFromString({
    source: JSON.stringify(document, null, 2),
    absoluteRef: 'openapi.json',
    config
  })
  for (const problem of lintProblems) {
    if (problem.ignored === true) continue
    problems.push({
      source: 'redocly',
      rule: problem.ruleId,
      where: problem.location[0]?.pointer ?? '#',
      message: `${problem.severity}: ${problem.message}`
    })
  }
  problems.push(...await spectralProblems(document))
  return problems
}

const SEVERITIES = ['error', 'warning', 'info', 'hint']

async function spectralProblems (document: Record<string, unknown>): Promise<ContractProblem[]> {
  const spectral = new Spectral()
  // The package's ruleset type lacks `extends`, which the definition type requires of a ruleset on its own.
  spectral.setRuleset({ extends: [[oas as RulesetDefinition, 'recommended']] })
  // A string is parsed as YAML, of which JSON is a subset: the reported ranges are the text's.
  const results = await spectral.run(JSON.stringify(document, null, 2))
  return results.map((result) => ({
    source: 'spectral',
    rule: String(result.code),
    where: `#/${result.path.map((part) => String(part).replaceAll('~', '~0').replaceAll('/', '~1')).join('/')}`,
    message: `${SEVERITIES[result.severity] ?? 'unknown'}: ${result.message}`
  }))
}
