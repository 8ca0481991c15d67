import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { describe, test } from 'node:test'
import { promisify } from 'node:util'
import { parseAllDocuments } from 'yaml'
import { migrations } from '../../src/store/postgres/migrations.js'
import { cleanupStack } from '../helpers/cleanup.js'
import { directUrl, scratchDatabaseUrl, TEST_DATABASE_URL } from '../helpers/postgres.js'
import { expectStartFailure, SERVER_JS, startServer } from '../helpers/server-process.js'

const run = promisify(execFile)

interface EnvVar { name: string, value?: string, valueFrom?: { secretKeyRef?: { key: string } } }
interface Container { name: string, args?: string[], env?: EnvVar[] }

/** The first container of the one workload in a manifest file of deploy/kubernetes/. */
function container (file: string): Container {
  const path = new URL(`../../../deploy/kubernetes/${file}`, import.meta.url)
  const [document] = parseAllDocuments(readFileSync(path, 'utf8'))
  const workload = document?.toJS() as { spec: { template: { spec: { containers: Container[] } } } }
  return workload.spec.template.spec.containers[0] ?? assert.fail(`${file}: no container`)
}

/** A container's database settings as the cluster gives them: the Secret's keys are this test's database. */
function databaseEnv (spec: Container, secret: Record<string, string>): Record<string, string> {
  const env: Record<string, string> = {}
  for (const { name, value, valueFrom } of spec.env ?? []) {
    if (!/^(DATABASE_|MIGRATE_ON_START$)/.test(name)) continue
    const key = valueFrom?.secretKeyRef?.key
    env[name] = key === undefined ? value ?? '' : secret[key] ?? assert.fail(`no Secret key ${key}`)
  }
  return env
}

// The shipped order of a deploy (docs/deployment.md): the Job migrates, then the Deployment's pods serve.
const NO_POSTGRES = TEST_DATABASE_URL === undefined

describe('deploy/kubernetes: the migrate Job, then the Deployment (PostgreSQL)', { skip: NO_POSTGRES }, () => {
  test('a pod before the Job is refused; the Job\'s command migrates; then a pod serves', async (t) => {
    const cleanup = cleanupStack(t)
    const { url } = scratchDatabaseUrl(cleanup)
    const secret = { 'database-url': url, 'database-direct-url': directUrl(url) }
    const job = container('migrate-job.yaml')
    const pod = databaseEnv(container('deployment.yaml'), secret)
    assert.equal(pod.MIGRATE_ON_START, '0')

    const early = await expectStartFailure({ env: { ...pod, LOG_FORMAT: 'pretty' } })
    assert.equal(early.code, 1)
    assert.match(early.stderr, /is behind this plant-store .* run `plant-store migrate` first/)

    const migrated = await run(process.execPath, [SERVER_JS, ...job.args ?? []], {
      env: { PATH: process.env.PATH, NODE_V8_COVERAGE: process.env.NODE_V8_COVERAGE, ...databaseEnv(job, secret) }
    })
    assert.ok(migrated.stdout.endsWith(`plant-store migrate: schema version ${migrations.length} (was 0)\n`),
      migrated.stdout)

    const server = await startServer(cleanup, { env: pod })
    assert.equal((await fetch(`${server.baseUrl}/health/ready`)).status, 200)
  })
})
