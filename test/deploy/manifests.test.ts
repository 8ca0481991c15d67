import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { parseAllDocuments } from 'yaml'
import { SERVER_NODE_FLAGS } from '../../bench/measure.js'
import { EnvSchema, loadConfig, SHUTDOWN_EXIT_MARGIN_MS, type Config } from '../../src/config/load-config.js'
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
  imagePullPolicy?: string
  args?: string[]
  ports: Array<{ name: string, containerPort: number }>
  env: EnvVar[]
  livenessProbe: Probe
  readinessProbe: Probe
  startupProbe?: Probe
  lifecycle?: { preStop?: { exec?: { command: string[] }, sleep?: { seconds: number } } }
  resources?: { requests?: Record<string, string>, limits?: Record<string, string> }
  securityContext?: {
    readOnlyRootFilesystem?: boolean,
    allowPrivilegeEscalation?: boolean,
    capabilities?: { drop?: string[] }
  }
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
interface Service {
  kind: 'Service',
  spec: { selector: Record<string, string>, ports: Array<{ name: string, port: number, targetPort: string | number }> }
}
interface Budget {
  kind: 'PodDisruptionBudget',
  spec: { minAvailable?: number, maxUnavailable?: number, selector: { matchLabels: Record<string, string> } }
}
interface PodSpec {
  restartPolicy?: string
  automountServiceAccountToken?: boolean
  securityContext: { runAsNonRoot?: boolean, runAsUser?: number, runAsGroup?: number }
  initContainers?: Container[]
  containers: Container[]
}
interface Job {
  kind: 'Job'
  metadata: { name: string }
  spec: { backoffLimit?: number, template: { metadata: { labels: Record<string, string> }, spec: PodSpec } }
}
type Manifest = Deployment | Service | Budget | Job | { kind: string }

const KUBERNETES = 'deploy/kubernetes'

/**
 * What `kubectl apply -R -f deploy/kubernetes/` applies: every .yaml, .yml and .json file under it (without -R, fewer).
 */
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

test('the Dockerfile: a non-root numeric user, the port it exposes is the one it sets, and ' +
  'npm start\'s node flags', () => {
  const image = dockerfile()
  assert.match(image.user, /^[1-9]\d*:[1-9]\d*$/)
  assert.equal(image.expose, image.port)
  assert.deepEqual(image.nodeFlags, SERVER_NODE_FLAGS)
  // Continued lines joined, as Docker reads them.
  const joined = read('Dockerfile').replace(/\\\n/g, ' ')
  assert.match(joined,
    /^HEALTHCHECK .*CMD \["node", "-e", "fetch\(`http:\/\/127\.0\.0\.1:\$\{process\.env\.PORT\}\/health\/live`\)/m)
  assert.match(read('Dockerfile'), /^STOPSIGNAL SIGTERM$/m)
  assert.match(read('Dockerfile'), /^VOLUME \/data$/m)
  assert.match(read('Dockerfile'), /^ARG BASE_IMAGE=docker\.io\/library\/node:\d+-\S+-slim$/m)
  // The CA bundle is a build secret, never a COPY.
  assert.match(read('Dockerfile'), /--mount=type=secret,id=ca-bundle/)
  assert.doesNotMatch(read('Dockerfile'), /^(COPY|ADD) .*\.(crt|pem)\b/m)
})

test('Kubernetes: the Deployment\'s ports, probes, grace period, security and secrets agree with the ' +
  'service\'s configuration', () => {
  const manifests = kubernetes()
  const deployment = byKind<Deployment>(manifests, 'Deployment')
  const pod = deployment.spec.template.spec
  const [container, ...others] = pod.containers
  assert.ok(container !== undefined)
  assert.equal(others.length, 0)

  const plain = Object.fromEntries(
    container.env.filter((variable) => variable.value !== undefined).map(
      (variable) => [variable.name, variable.value as string]))
  const config = configFrom(plain)
  const port = (name: string): number | undefined => container.ports.find(
    (candidate) => candidate.name === name)?.containerPort
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
  assert.ok(Number.isInteger(preStopSeconds) && preStopSeconds > 0,
    'a preStop that waits for the endpoints to drop the pod')
  const needed = preStopSeconds * 1000 + config.shutdownDelayMs + config.shutdownGraceMs + SHUTDOWN_EXIT_MARGIN_MS
  assert.ok(pod.terminationGracePeriodSeconds * 1000 >= needed,
    `terminationGracePeriodSeconds ${pod.terminationGracePeriodSeconds} s < ${needed} ms`)
  // A probe that times out after the service's own slow-header deadline would never see its answer.
  for (const probe of [container.livenessProbe, container.readinessProbe]) {
    assert.ok((probe.timeoutSeconds ?? 1) * 1000 <= config.timeouts.headers)
  }

  assert.equal(pod.securityContext.runAsNonRoot, true)
  assert.equal(`${pod.securityContext.runAsUser ?? ''}:${pod.securityContext.runAsGroup ?? ''}`, dockerfile().user)
  assert.equal(container.securityContext?.readOnlyRootFilesystem, true)
  assert.equal(container.securityContext?.allowPrivilegeEscalation, false)
  assert.deepEqual(container.securityContext?.capabilities?.drop, ['ALL'])
  assert.ok(
    container.resources?.requests?.cpu !== undefined && container.resources.requests.memory !== undefined &&
      container.resources.limits?.memory !== undefined)

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
  for (const servicePort of service.spec.ports) {
    assert.ok(port(String(servicePort.targetPort)) !== undefined,
      `Service port ${servicePort.name} targets a container port`)
  }
  const budget = byKind<Budget>(manifests, 'PodDisruptionBudget')
  assert.deepEqual(budget.spec.selector.matchLabels, labels)
  assert.equal(budget.spec.minAvailable, 1)
})

test('Kubernetes: the example Secret is never applied with the folder, and its placeholder is ' +
  'never a working token', () => {
  const example = `${KUBERNETES}/secret.yaml.example`
  assert.deepEqual(applied(),
    ['deployment.yaml', 'migrate-job.yaml', 'pdb.yaml', 'service.yaml'].map((name) => `${KUBERNETES}/${name}`))
  assert.equal(kubernetes().some((manifest) => manifest.kind === 'Secret'), false,
    'apply -f of the folder creates no Secret')
  const [secret, ...others] = documents(example) as Array<{
    kind: string,
    metadata: { name: string },
    stringData: Record<string, string>
  }>
  assert.equal(others.length, 0)
  assert.equal(secret?.kind, 'Secret')
  // The keys the Deployment reads are the ones the example shows; the migrate Job reads only some of them.
  const secretRefs = (container: Container | undefined): Array<{ name: string, key: string }> => container?.env
    .flatMap((variable) => variable.valueFrom?.secretKeyRef === undefined ? [] : [variable.valueFrom.secretKeyRef]) ??
      []
  const refs = secretRefs(byKind<Deployment>(kubernetes(), 'Deployment').spec.template.spec.containers[0])
  for (const ref of refs) assert.equal(ref.name, secret.metadata.name)
  assert.deepEqual(Object.keys(secret.stringData), refs.map((ref) => ref.key).filter((key) => key !== 'redis-url'))
  for (const ref of secretRefs(byKind<Job>(kubernetes(), 'Job').spec.template.spec.containers[0])) {
    assert.equal(ref.name, secret.metadata.name)
    assert.ok(Object.hasOwn(secret.stringData, ref.key), `the Job's ${ref.key} is in the example`)
  }
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
  command?: string[]
  restart?: string
}

const packageVersion = (): string => (JSON.parse(read('package.json')) as { version: string }).version
const composeServices = (): Record<string, ComposeService> =>
  (documents('compose.yaml') as Array<{ services: Record<string, ComposeService> }>)[0]?.services ?? {}

/** Every container of the manifests applied with deploy/kubernetes/, init containers too. */
function containers (manifests: Manifest[]): Container[] {
  return manifests.flatMap((manifest) => {
    const pod = manifest.kind === 'Deployment' || manifest.kind === 'Job'
      ? (manifest as Deployment | Job).spec.template.spec as PodSpec
      : undefined
    return [...pod?.initContainers ?? [], ...pod?.containers ?? []]
  })
}

/** An image reference's tag (`name:tag`, `registry:port/name:tag`, `name:tag@digest`), or undefined without one. */
function imageTag (reference: string): string | undefined {
  const name = reference.split('@')[0] ?? ''
  const colon = name.lastIndexOf(':')
  return colon > name.lastIndexOf('/') ? name.slice(colon + 1) : undefined
}

test('releases: no image in deploy/ or compose.yaml is `latest` or untagged; plant-store\'s is the package ' +
  'version, always pulled', () => {
  const manifests = kubernetes()
  const images = [...containers(manifests).map((container) => container.image),
    ...Object.values(composeServices()).map((service) => service.image)]
  assert.ok(images.length >= 6, images.join(' '))
  for (const image of images) {
    const tag = imageTag(image)
    assert.ok(tag !== undefined && tag !== '' && tag !== 'latest', `${image}: a tag that names a release`)
  }
  assert.equal(imageTag('registry.example:5000/plant-store'), undefined)
  assert.equal(imageTag('registry.example:5000/plant-store:1.2.3@sha256:00'), '1.2.3')

  // The Deployment and the migrate Job run the same release: the one this checkout is.
  const ours = containers(manifests).filter((container) => container.image.split(':')[0] === 'plant-store')
  assert.deepEqual(ours.map((container) => container.name).sort(), ['migrate', 'plant-store'])
  for (const container of ours) {
    assert.equal(container.image, `plant-store:${packageVersion()}`, container.name)
    // A build pushed again under the same tag reaches every node (IfNotPresent keeps a node's cached one).
    assert.equal(container.imagePullPolicy, 'Always', container.name)
  }
})

/** The image's entrypoint ends with the plant-store executable: a container's args are its command line. */
const entrypointIsExecutable = (): void => {
  const final = read('Dockerfile').slice(read('Dockerfile').lastIndexOf('\nFROM '))
  assert.match(final, /^ENTRYPOINT \[.*"dist\/src\/main\/server\.js"\]$/m)
}

/** A container's variables by name, plain values and Secret references alike. */
const envOf = (container: Container): Map<string, EnvVar> => new Map(
  container.env.map((variable) => [variable.name, variable]))

/**
 * Every variable a container or compose service sets is a setting of the service (a typo would be silently ignored).
 */
function assertKnownSettings (where: string, names: string[]): void {
  for (const name of names) {
    assert.ok(Object.hasOwn(EnvSchema.properties, name), `${where}: ${name} is no setting of plant-store`)
  }
}

test('Kubernetes: a Job per release runs plant-store migrate over DATABASE_DIRECT_URL; the ' +
  'Deployment migrates nothing on start', () => {
  entrypointIsExecutable()
  const manifests = kubernetes()
  const job = byKind<Job>(manifests, 'Job')
  // A Job's pod template cannot change: each release's is a Job of its own, named after it.
  assert.equal(job.metadata.name, `plant-store-migrate-${packageVersion().replace(/[^a-z0-9]+/g, '-')}`)
  assert.match(job.metadata.name, /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/, 'a DNS label')
  const pod = job.spec.template.spec
  assert.equal(pod.restartPolicy, 'Never')
  assert.equal(pod.initContainers, undefined)
  const [migrate, ...others] = pod.containers
  assert.ok(migrate !== undefined)
  assert.equal(others.length, 0)
  assert.deepEqual(migrate.args, ['migrate'])
  const jobEnv = envOf(migrate)
  assertKnownSettings('the Job', [...jobEnv.keys()])

  const deployment = byKind<Deployment>(manifests, 'Deployment')
  const [server] = deployment.spec.template.spec.containers
  assert.ok(server !== undefined)
  const serverEnv = envOf(server)
  assertKnownSettings('the Deployment', [...serverEnv.keys()])
  // The database the Deployment serves is the one the Job migrates, reached directly (never through a pooler).
  for (const name of ['DATABASE_URL', 'DATABASE_DIRECT_URL']) {
    assert.ok(jobEnv.get(name)?.valueFrom?.secretKeyRef !== undefined, `the Job's ${name} comes from the Secret`)
    assert.deepEqual(jobEnv.get(name), serverEnv.get(name), name)
  }
  assert.equal(serverEnv.get('DATABASE_DIRECT_URL')?.valueFrom?.secretKeyRef?.key, 'database-direct-url')
  assert.equal(serverEnv.get('MIGRATE_ON_START')?.value, '0')
  assert.equal(jobEnv.has('MIGRATE_ON_START'), false)
  // The service accepts the value (a flag: 0 or 1).
  configFrom({ MIGRATE_ON_START: serverEnv.get('MIGRATE_ON_START')?.value ?? '' })

  // The Job's pod is no server: neither the Service nor the disruption budget may select it.
  const labels = job.spec.template.metadata.labels
  const selects = (selector: Record<string, string>): boolean => Object.entries(selector).every(
    ([key, value]) => labels[key] === value)
  assert.equal(selects(byKind<Service>(manifests, 'Service').spec.selector), false)
  assert.equal(selects(byKind<Budget>(manifests, 'PodDisruptionBudget').spec.selector.matchLabels), false)
  // As locked down as the server.
  assert.equal(pod.automountServiceAccountToken, false)
  assert.equal(pod.securityContext.runAsNonRoot, true)
  assert.equal(`${pod.securityContext.runAsUser ?? ''}:${pod.securityContext.runAsGroup ?? ''}`, dockerfile().user)
  assert.deepEqual(migrate.securityContext, server.securityContext)
})

test('compose.yaml: a one-shot migrate service the server waits for, on the same image and ' +
  'database; the server migrates nothing', () => {
  entrypointIsExecutable()
  const { migrate, 'plant-store': server } = composeServices()
  assert.ok(migrate !== undefined && server !== undefined)
  assert.deepEqual(migrate.command, ['migrate'])
  assert.equal(migrate.image, server.image)
  assert.equal(migrate.build, server.build)
  assert.equal(migrate.restart, 'no')
  assert.equal(migrate.depends_on?.postgres?.condition, 'service_healthy')
  assert.equal(server.depends_on?.migrate?.condition, 'service_completed_successfully')
  assertKnownSettings('compose migrate', Object.keys(migrate.environment ?? {}))
  assertKnownSettings('compose plant-store', Object.keys(server.environment ?? {}))
  const { API_TOKENS: _tokens, ...serverEnv } = server.environment ?? {}
  assert.equal(serverEnv.MIGRATE_ON_START, '0')
  const migrating = configFrom(migrate.environment ?? {})
  const serving = configFrom(serverEnv)
  assert.equal(migrating.databaseUrl, serving.databaseUrl)
  assert.ok(migrating.databaseDirectUrl !== undefined, 'migrations reach PostgreSQL itself')
  assert.equal(migrating.databaseDirectUrl, serving.databaseDirectUrl)
  assert.equal(migrate.read_only, true)
  assert.deepEqual(migrate.cap_drop, ['ALL'])
})

test('the Dockerfile labels the image with the release and commit given, and builds the commit in', () => {
  const text = read('Dockerfile').replace(/\\\n/g, ' ')
  const [build, final] = [text.slice(0, text.lastIndexOf('\nFROM ')), text.slice(text.lastIndexOf('\nFROM '))]
  for (const stage of [build, final]) {
    assert.match(stage, /^ARG PLANT_STORE_VERSION=$/m)
    assert.match(stage, /^ARG PLANT_STORE_COMMIT=$/m)
  }
  const label = /^LABEL (.*)$/m.exec(final)?.[1] ?? ''
  assert.match(label, /\borg\.opencontainers\.image\.version="\$\{PLANT_STORE_VERSION\}"/)
  assert.match(label, /\borg\.opencontainers\.image\.revision="\$\{PLANT_STORE_COMMIT\}"/)
  // The build (npm run build, which runs scripts/build-info.mjs) sees the argument, declared before it.
  assert.ok(build.indexOf('ARG PLANT_STORE_COMMIT=') < build.indexOf('RUN npm run build'))
  assert.match(JSON.parse(read('package.json')).scripts.build as string, /node scripts\/build-info\.mjs dist$/)
  // Every script the image build copies is in its context.
  const ignore = read('.dockerignore').split('\n')
  for (const copied of /^COPY (scripts\/.*) \.\/scripts\/$/m.exec(build)?.[1]?.split(' ') ?? []) {
    assert.ok(ignore.includes(`!${copied}`), `.dockerignore lets ${copied} in`)
  }
  assert.ok(ignore.includes('!scripts/build-info.mjs'))
})

test('docs/deployment.md\'s examples work as written: the build tags the image the Deployment names, ' +
  'and the token is shown', () => {
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
  assert.match(run,
    new RegExp(/^TOKEN="\$\(docker run --rm plant-store token\)"\necho "\$TOKEN" .*\ndocker run -d [^]*?-e /.source +
      /API_TOKENS="\$TOKEN"[^]*?\ncurl -s \S+ -H "Authorization: Bearer \$TOKEN"/.source))
  assert.doesNotMatch(page, /-e API_TOKENS="\$\(/, 'no token the user never sees')
  assert.match(page, /^export API_TOKENS="\$\(docker run --rm plant-store:local token\)"\necho "\$API_TOKENS" /m)
})

test('compose.yaml: the service on PostgreSQL and Redis, its ports and stop grace period agree ' +
  'with its configuration; Prometheus behind a profile', () => {
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
  assert.ok(grace >= config.shutdownDelayMs + config.shutdownGraceMs + SHUTDOWN_EXIT_MARGIN_MS,
    `stop_grace_period ${service.stop_grace_period ?? ''}`)

  assert.deepEqual(prometheus.profiles, ['prometheus'])
  type ScrapeConfig = { scrape_configs: Array<{ static_configs: Array<{ targets: string[] }> }> }
  const [scrape] = documents('deploy/compose/prometheus.yml') as ScrapeConfig[]
  assert.deepEqual(scrape?.scrape_configs[0]?.static_configs[0]?.targets, [`plant-store:${config.metrics?.port ?? ''}`])
})

test('yamllint passes on compose.yaml and deploy/ when it is installed', (t) => {
  const lint = spawnSync('yamllint', ['-c', '.yamllint.yaml', '-f', 'parsable', 'compose.yaml', 'deploy'],
    { cwd: REPO, encoding: 'utf8' })
  if (lint.error !== undefined) {
    t.diagnostic('yamllint not installed (Debian package yamllint): its check was skipped')
    return
  }
  assert.equal(lint.stdout + lint.stderr, '')
  assert.equal(lint.status, 0)
})
