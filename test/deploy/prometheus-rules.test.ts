import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test, type TestContext } from 'node:test'
import { parse } from 'yaml'
import { alertingRules, metricNames, REPO, RULES } from '../helpers/monitoring.js'

const RULE_TESTS = 'deploy/prometheus/plant-store-rules.test.yaml'

interface RuleTest {
  name: string
  alert_rule_test: Array<{ eval_time: string, alertname: string, exp_alerts: unknown[] }>
}

/**
 * promtool's answer, or undefined (and the test skipped) where it is not installed; CI installs it (package
 * prometheus).
 */
function promtool (t: TestContext, args: readonly string[]): { status: number | null, output: string } | undefined {
  const run = spawnSync('promtool', args, { cwd: REPO, encoding: 'utf8' })
  if (run.error !== undefined) {
    t.skip('promtool not installed (Debian package prometheus)')
    return undefined
  }
  return { status: run.status, output: `${run.stdout}${run.stderr}` }
}

const minutes = (duration: string): number => {
  const match = /^(\d+)([mh])$/.exec(duration)
  assert.ok(match !== null, `a duration in minutes or hours: ${duration}`)
  return Number(match[1]) * (match[2] === 'h' ? 60 : 1)
}

test('promtool check rules: the rules file is valid, every rule an alert with a severity, a ' +
  'summary and a description', (t) => {
  const rules = alertingRules()
  for (const rule of rules) {
    assert.ok(['critical', 'warning'].includes(rule.labels?.severity ?? ''), `${rule.alert}: severity`)
    assert.ok((rule.annotations?.summary ?? '') !== '' && (rule.annotations?.description ?? '') !== '', rule.alert)
    assert.match(rule.expr, /job="plant-store"/, `${rule.alert} selects the job`)
    assert.ok(metricNames(rule.expr).length > 0, `${rule.alert} names a series`)
  }
  const checked = promtool(t, ['check', 'rules', RULES])
  if (checked === undefined) return
  assert.equal(checked.status, 0, checked.output)
  assert.match(checked.output, new RegExp(`SUCCESS: ${rules.length} rules found`))
})

test('promtool test rules: each alert stays silent, fires, then clears on synthetic series', (t) => {
  const { tests } = parse(readFileSync(join(REPO, RULE_TESTS), 'utf8')) as { tests: RuleTest[] }
  // Made from the rules file: an alert added without a test fails here.
  for (const { alert } of alertingRules()) {
    const checks = tests.flatMap((unit) => unit.alert_rule_test).filter((check) => check.alertname === alert)
    const firing = checks.filter((check) => check.exp_alerts.length > 0).map((check) => minutes(check.eval_time))
    const silent = checks.filter((check) => check.exp_alerts.length === 0).map((check) => minutes(check.eval_time))
    assert.ok(firing.length > 0, `${alert} is tested firing`)
    assert.ok(silent.some((at) => at < Math.min(...firing)), `${alert} is tested silent before it fires`)
    assert.ok(silent.some((at) => at > Math.max(...firing)), `${alert} is tested cleared after it fired`)
  }
  const run = promtool(t, ['test', 'rules', RULE_TESTS])
  if (run === undefined) return
  assert.equal(run.status, 0, run.output)
  assert.match(run.output, /SUCCESS/)
})

test('compose\'s optional Prometheus loads the rules: mounted where its configuration names them; ' +
  'promtool check config', (t) => {
  const compose = parse(readFileSync(join(REPO, 'compose.yaml'), 'utf8')) as {
    services: { prometheus: { volumes: string[] } }
  }
  const config = parse(readFileSync(join(REPO, 'deploy/compose/prometheus.yml'), 'utf8')) as { rule_files: string[] }
  const mounted = compose.services.prometheus.volumes.map((volume) => volume.split(':'))
    .find(([source]) => source === `./${RULES}`)
  assert.ok(mounted !== undefined, 'compose.yaml mounts the rules file')
  assert.deepEqual(config.rule_files, [mounted[1]])
  assert.equal(mounted[2], 'ro')
  // The configuration as Prometheus reads it, the rules at the path it would find them.
  const dir = mkdtempSync(join(tmpdir(), 'plant-store-prometheus-'))
  t.after(() => { rmSync(dir, { recursive: true, force: true }) })
  const file = join(dir, 'prometheus.yml')
  writeFileSync(file, readFileSync(join(REPO, 'deploy/compose/prometheus.yml'), 'utf8')
    .replace(String(mounted[1]), join(REPO, RULES)))
  const checked = promtool(t, ['check', 'config', file])
  if (checked === undefined) return
  assert.equal(checked.status, 0, checked.output)
  assert.match(checked.output, new RegExp(`SUCCESS: ${alertingRules().length} rules found`))
})
