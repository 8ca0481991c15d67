import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parse } from 'yaml'

/** The repository's root, from the compiled test tree. */
export const REPO = fileURLToPath(new URL('../../..', import.meta.url))
export const RULES = 'deploy/prometheus/plant-store-rules.yaml'
export const DASHBOARD = 'deploy/grafana/plant-store-dashboard.json'

export interface AlertingRule {
  alert: string
  expr: string
  for?: string
  labels?: Record<string, string>
  annotations?: Record<string, string>
}

/** Every alerting rule of deploy/prometheus/, in order. */
export function alertingRules (): AlertingRule[] {
  const { groups } = parse(readFileSync(join(REPO, RULES), 'utf8')) as { groups: Array<{ rules: AlertingRule[] }> }
  return groups.flatMap((group) => group.rules)
}

/** PromQL's words that are not series: operators and modifiers (functions are told by their `(`). */
const KEYWORDS = new Set(['and', 'or', 'unless', 'bool', 'offset', 'by', 'without', 'on', 'ignoring', 'group_left',
  'group_right', 'inf', 'nan'])

/**
 * The metric names a PromQL expression selects: every identifier that is not a function (followed by
 * `(`), a keyword, a label (inside `{…}` or a by/without/on/ignoring list), a string, a duration or
 * a Grafana variable (`$__rate_interval`).
 */
export function metricNames (expr: string): string[] {
  const bare = expr
    .replace(/"(?:[^"\\]|\\.)*"/g, '""')
    .replace(/\{[^}]*\}/g, '')
    .replace(/\[[^\]]*\]/g, '')
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, '')
    .replace(/\$\w+/g, '')
  // Not inside a number or a duration (`5m`, `1e3`).
  const names = [...bare.matchAll(/(?<![\w.])([a-zA-Z_:][a-zA-Z0-9_:]*)(\s*\()?/g)]
    .filter((match) => match[2] === undefined && !KEYWORDS.has(match[1]?.toLowerCase() ?? ''))
    .map((match) => match[1] as string)
  return [...new Set(names)].sort()
}
