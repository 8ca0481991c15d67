import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { parseAllDocuments } from 'yaml'
import { SERVER_NODE_FLAGS } from '../../bench/measure.js'
import { loadConfig, SHUTDOWN_EXIT_MARGIN_MS, type Config } from '../../src/load-config.js'
import { TOKEN } from '../helpers/app.js'
import { assertConfigRefused } from '../helpers/config.js'

const REPO = fileURLToPath(new URL('../../..', import.meta.url))
const read = (path: string): string => readFileSync(join(REPO, path), 'utf8')

/** Every YAML document in a file, as plain data; a parse error fails the test. */
function documents (path: string): unknown[] {
  return parseAllDocuments(read(path)).map((document) => {
    assert.deepEqual(document.errors, [], `${path}: ${document.errors.join('; ')}`)
    return document.toJS() as unknown
  })
}

interface EnvVar { name: string, value?: string, valueFrom?: { secretKeyRef?: { name: string, key: string } } }
interface Probe { httpGet: { path: string, port: string | number }, timeoutSeconds?: number, periodSeconds?: number }
interface Container {
  name: string
  image: string
  ports: Array<{ name: string, containerPort: number }>
  env: EnvVar[]
  livenessProbe: Probe
  readinessProbe: Probe
  startupProbe?: Probe
  lifecycle?: { preStop?: { exec?: { command: string[] }, sleep?: { seconds: number } } }
  resources?: { requests?: Record<string, string>, limits?: Record<string, string> }
  securityContext?: { readOnlyRootFilesystem?: boolean, allowPrivilegeEscalation?: boolean, capabilities?: { drop?: string[] } }
}
interface Deployment {
  kind: 'Deployment'
  spec: {
    selector: { matchLabels: Record<string, string> }
    template: {
      metadata: { labels: Record<string, string> }
      spec: {
        terminationGracePeriodSeconds: number
        securityContext: { runAsNonRoot?: boolean, runAsUser?: number, runAsGroup?: number }
        containers: Container[]
      }
    }
  }
}
interface Service { kind: 'Service', spec: { selector: Record<string, string>, ports: Array<{ name: string, port: number, targetPort: string | number }> } }
interface Budget { kind: 'PodDisruptionBudget', spec: { minAvailable?: number, maxUnavailable?: number, selector: { matchLabels: Record<string, string> } } }
type Manifest = Deployment | Service | Budget | { kind: string }

const KUBERNETES = 'deploy/kubernetes'

/** What `kubectl apply -R -f deploy/kubernetes/` applies: every .yaml, .yml and .json file under it (without -R, fewer). */
function applied (): string[] {
  return readdirSync(join(REPO, KUBERNETES), { recursive: true, encoding: 'utf8' })
    .filter((name) => /\.(ya?ml|json)$/.test(name)).sort().map((name) => join(KUBERNETES, name))
}

function kubernetes (): Manifest[] {
  return applied().flatMap((path) => documents(path) as Manifest[])
}
const byKind = <T extends Manifest>(manifests: Manifest[], kind: T['kind']): T => {
  const found = manifests.filter((manifest) => manifest.kind === kind)
  assert.equal(found.length, 1, `one ${kind}`)
  return found[0] as T
}

/** The configuration the service would load from these variables (secrets given stand-in values). */
function configFrom (env: Record<string, string>): Config {
  return loadConfig({ ...env, API_TOKENS: TOKEN })
}

/** The image's `USER`, `EXPOSE` and `ENV PORT`, and its entrypoint's node flags, from the Dockerfile. */
function dockerfile (): { user: string, expose: number, port: number, nodeFlags: string[] } {
  const text = read('Dockerfile').replace(/\\\n/g, ' ')
  const final = text.slice(text.lastIndexOf('\nFROM '))
  const entrypoint = JSON.parse(/^ENTRYPOINT (\[.*\])$/m.exec(final)?.[1] ?? '[]') as string[]
  assert.equal(entrypoint[0], 'node', 'the image runs node itself')
  assert.equal(entrypoint.at(-1), 'dist/src/main/server.js')
  return {
    user: /^USER (\S+)$/m.exec(final)?.[1] ?? '',
    expose: Number(/^EXPOSE (\d+)$/m.exec(final)?.[1]),
    port: Number(/\bPORT=(\d+)/.exec(final)?.[1]),
    nodeFlags: entrypoint.slice(1, -1)
  }
}

test('the Dockerfile: a non-root numeric user, the port it exposes is the one it sets, and npm start\'s node flags', () => {
  const image = dockerfile()
  assert.match(image.user, /^[1-9]\d*:[1-9]\d*$/)
  assert.equal(image.expose, image.port)
  assert.deepEqual(image.nodeFlags, SERVER_NODE_FLAGS)
  // Continued lines joined, as Docker reads them.
  const joined = read('Dockerfile').replace(/\\\n/g, ' ')
  assert.match(joined, /^HEALTHCHECK .*CMD \["node", "-e", "fetch\(`http:\/\/127\.0\.0\.1:\$\{process\.env\.PORT\}\/health\/live`\)/m)
  assert.match(read('Dockerfile'), /^STOPSIGNAL SIGTERM$/m)
  assert.match(read('Dockerfile'), /^VOLUME \/data$/m)
  assert.match(read('Dockerfile'), /^ARG BASE_IMAGE=docker\.io\/library\/node:\d+-\S+-slim$/m)
  // The CA bundle is a build secret, never a COPY.
  assert.match(read('Dockerfile'), /--mount=type=secret,id=ca-bundle/)
  assert.doesNotMatch(read('Dockerfile'), /^(COPY|ADD) .*\.(crt|pem)\b/m)
})

test('Kubernetes: the Deployment\'s ports, probes, grace period, security and secrets agree with the service\'s configuration', () => {
  const manifests = kubernetes()
  const deployment = byKind<Deployment>(manifests, 'Deployment')
  const pod = deployment.spec.template.spec
  const [container, ...others] = pod.containers
  assert.ok(container !== undefined)
  assert.equal(others.length, 0)

  const plain = Object.fromEntries(container.env.filter((variable) => variable.value !== undefined).map((variable) => [variable.name, variable.value as string]))
  const config = configFrom(plain)
  const port = (name: string): number | undefined => container.ports.find((candidate) => candidate.name === name)?.containerPort
  assert.equal(port('http'), config.port)
  assert.equal(port('metrics'), config.metrics?.port)
  assert.equal(config.host, '0.0.0.0')
  assert.equal(config.metrics?.host, '0.0.0.0')
  assert.equal(dockerfile().port, config.port)

  assert.deepEqual(container.livenessProbe.httpGet, { path: '/health/live', port: 'http' })
  assert.deepEqual(container.readinessProbe.httpGet, { path: '/health/ready', port: 'http' })
  assert.deepEqual(container.startupProbe?.httpGet, { path: '/health/live', port: 'http' })

  // SIGTERM comes after the preStop hook; then the server may take the delay, the grace period and
  // its exit margin: all of it inside terminationGracePeriodSeconds, or the kubelet kills it mid-drain.
  const preStop = container.lifecycle?.preStop
  const preStopSeconds = preStop?.sleep?.seconds ?? Number(preStop?.exec?.command.join(' ').match(/^sleep (\d+)$/)?.[1])
  assert.ok(Number.isInteger(preStopSeconds) && preStopSeconds > 0, 'a preStop that waits for the endpoints to drop the pod')
  const needed = preStopSeconds * 1000 + config.shutdownDelayMs + config.shutdownGraceMs + SHUTDOWN_EXIT_MARGIN_MS
  assert.ok(pod.terminationGracePeriodSeconds * 1000 >= needed, `terminationGracePeriodSeconds ${pod.terminationGracePeriodSeconds} s < ${needed} ms`)
  // A probe that times out after the service's own slow-header deadline would never see its answer.
  for (const probe of [container.livenessProbe, container.readinessProbe]) assert.ok((probe.timeoutSeconds ?? 1) * 1000 <= config.timeouts.headers)

  assert.equal(pod.securityContext.runAsNonRoot, true)
  assert.equal(`${pod.securityContext.runAsUser ?? ''}:${pod.securityContext.runAsGroup ?? ''}`, dockerfile().user)
  assert.equal(container.securityContext?.readOnlyRootFilesystem, true)
  assert.equal(container.securityContext?.allowPrivilegeEscalation, false)
  assert.deepEqual(container.securityContext?.capabilities?.drop, ['ALL'])
  assert.ok(container.resources?.requests?.cpu !== undefined && container.resources.requests.memory !== undefined && container.resources.limits?.memory !== undefined)

  // Secrets come from a Secret, never a literal value.
  for (const name of ['API_TOKENS', 'DATABASE_URL']) {
    const secret: EnvVar | undefined = container.env.find((candidate) => candidate.name === name)
    assert.equal(secret?.value, undefined, name)
    assert.equal(secret?.valueFrom?.secretKeyRef?.name, 'plant-store', name)
  }

  const labels = deployment.spec.template.metadata.labels
  assert.deepEqual(deployment.spec.selector.matchLabels, labels)
  const service = byKind<Service>(manifests, 'Service')
  assert.deepEqual(service.spec.selector, labels)
  for (const servicePort of service.spec.ports) assert.ok(port(String(servicePort.targetPort)) !== undefined, `Service port ${servicePort.name} targets a container port`)
  const budget = byKind<Budget>(manifests, 'PodDisruptionBudget')
  assert.deepEqual(budget.spec.selector.matchLabels, labels)
  assert.equal(budget.spec.minAvailable, 1)
})

test('Kubernetes: the example Secret is never applied with the folder, and its placeholder is never a working token', () => {
  const example = `${KUBERNETES}/secret.yaml.example`
  assert.deepEqual(applied(), ['deployment.yaml', 'pdb.yaml', 'service.yaml'].map((name) => `${KUBERNETES}/${name}`))
  assert.equal(kubernetes().some((manifest) => manifest.kind === 'Secret'), false, 'apply -f of the folder creates no Secret')
  const [secret, ...others] = documents(example) as Array<{ kind: string, metadata: { name: string }, stringData: Record<string, string> }>
  assert.equal(others.length, 0)
  assert.equal(secret?.kind, 'Secret')
  // The keys the Deployment reads are the ones the example shows.
  const refs = byKind<Deployment>(kubernetes(), 'Deployment').spec.template.spec.containers[0]?.env
    .flatMap((variable) => variable.valueFrom?.secretKeyRef === undefined ? [] : [variable.valueFrom.secretKeyRef]) ?? []
  for (const ref of refs) assert.equal(ref.name, secret.metadata.name)
  assert.deepEqual(Object.keys(secret.stringData), refs.map((ref) => ref.key).filter((key) => key !== 'redis-url'))
  const placeholder = secret.stringData['api-tokens'] ?? ''
  assertConfigRefused([
    [{ API_TOKENS: placeholder }, /a token may only hold the characters/],
    [{ API_TOKENS: placeholder, ALLOW_WEAK_TOKENS: '1' }, /a token may only hold the characters/]
  ])
})

interface ComposeService {
  build?: string
  image: string
  environment?: Record<string, string>
  ports?: string[]
  read_only?: boolean
  tmpfs?: string[]
  cap_drop?: string[]
  stop_grace_period?: string
  depends_on?: Record<string, { condition: string }>
  profiles?: string[]
}

test('docs/deployment.md\'s examples work as written: the build tags the image the Deployment names, and the token is shown', () => {
  const { version } = JSON.parse(read('package.json')) as { version: string }
  const deployment = byKind<Deployment>(kubernetes(), 'Deployment')
  const images = deployment.spec.template.spec.containers.map((container) => container.image)
  assert.deepEqual(images, [`plant-store:${version}`])
  const page = read('docs/deployment.md')
  const build = /^docker build (.+) \.$/m.exec(page)?.[1] ?? ''
  const tags = [...build.matchAll(/-t (\S+)/g)].map((match) => match[1])
  assert.deepEqual(tags, ['plant-store', `plant-store:${version}`], 'the first build command tags both names')
  // The token the container accepts is one the user has: made first, printed, then passed and used.
  const run = page.slice(page.indexOf('TOKEN="$(docker run --rm plant-store token)"'))
  assert.ok(run.length < page.length, 'the token is made before docker run')
  assert.match(run, /^TOKEN="\$\(docker run --rm plant-store token\)"\necho "\$TOKEN" .*\ndocker run -d [^]*?-e API_TOKENS="\$TOKEN"[^]*?\ncurl -s \S+ -H "Authorization: Bearer \$TOKEN"/)
  assert.doesNotMatch(page, /-e API_TOKENS="\$\(/, 'no token the user never sees')
  assert.match(page, /^export API_TOKENS="\$\(docker run --rm plant-store:local token\)"\necho "\$API_TOKENS" /m)
})

test('compose.yaml: the service on PostgreSQL and Redis, its ports and stop grace period agree with its configuration; Prometheus behind a profile', () => {
  const [compose] = documents('compose.yaml') as Array<{ services: Record<string, ComposeService> }>
  assert.ok(compose !== undefined)
  const { 'plant-store': service, postgres, redis, prometheus } = compose.services
  assert.ok(service !== undefined && postgres !== undefined && redis !== undefined && prometheus !== undefined)
  const { API_TOKENS: tokens, ...env } = service.environment ?? {}
  assert.match(tokens ?? '', /^\$\{API_TOKENS:\?.+\}$/, 'the token comes from the environment, never the file')
  const config = configFrom(env)
  assert.match(config.databaseUrl, /^postgres:\/\/[^@]+@postgres:5432\//)
  assert.equal(config.redis?.url, 'redis://redis:6379')
  assert.deepEqual(service.ports, [`127.0.0.1:${config.port}:${config.port}`])
  assert.equal(service.build, '.')
  assert.equal(service.read_only, true)
  assert.deepEqual(service.tmpfs, ['/tmp'])
  assert.deepEqual(service.cap_drop, ['ALL'])
  assert.equal(service.depends_on?.postgres?.condition, 'service_healthy')
  const grace = Number(/^(\d+)s$/.exec(service.stop_grace_period ?? '')?.[1]) * 1000
  assert.ok(grace >= config.shutdownDelayMs + config.shutdownGraceMs + SHUTDOWN_EXIT_MARGIN_MS, `stop_grace_period ${service.stop_grace_period ?? ''}`)

  assert.deepEqual(prometheus.profiles, ['prometheus'])
  const [scrape] = documents('deploy/compose/prometheus.yml') as Array<{ scrape_configs: Array<{ static_configs: Array<{ targets: string[] }> }> }>
  assert.deepEqual(scrape?.scrape_configs[0]?.static_configs[0]?.targets, [`plant-store:${config.metrics?.port ?? ''}`])
})

test('yamllint passes on compose.yaml and deploy/ when it is installed', (t) => {
  const lint = spawnSync('yamllint', ['-c', '.yamllint.yaml', '-f', 'parsable', 'compose.yaml', 'deploy'], { cwd: REPO, encoding: 'utf8' })
  if (lint.error !== undefined) {
    t.diagnostic('yamllint not installed (Debian package yamllint): its check was skipped')
    return
  }
  assert.equal(lint.stdout + lint.stderr, '')
  assert.equal(lint.status, 0)
})
