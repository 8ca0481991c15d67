import { AUTH } from '../helpers/app.js'

/** Which build an instance runs: the pinned previous release, or this tree. */
export type Build = 'previous' | 'current'

/** A running instance as the balancer sees it, with what it answered. */
export interface Instance {
  name: string
  build: Build
  baseUrl: string
  /** Requests sent to it (load and explicit), and the statuses it answered. */
  requests: number
  statuses: Map<number, number>
  inFlight: number
}

/** An acknowledged create (a 201 that was no replay), as first answered. */
export interface Created {
  id: number
  key: string | undefined
  request: { name: string, tag: string }
  by: Instance
  location: string | null
  etag: string | null
  body: string
  /** The builds a replay of its key was answered the same on. */
  replayedOn: Set<Build>
}

interface Answer {
  status: number
  headers: Headers
  body: string
}

/** How long one request may take before it counts as lost: a wedged instance, never a slow one. */
const REQUEST_TIMEOUT_MS = 60_000

/**
 * A load balancer in front of the instances that are "in" it (round robin, as a Service spreads
 * connections), and the write load sent through it. Every answer is checked as it comes: anything but
 * the one expected status, a replay that differs from its first answer, or no answer at all, is a
 * failure. An instance leaves the balancer before it is stopped, and is stopped only once its
 * in-flight requests have had their answers: a request the test itself sends to a stopping instance
 * would be the test's fault, so none is excused.
 */
export class RollingService {
  /** Every instance that ever joined, in order. */
  readonly instances: Instance[] = []
  readonly failures: string[] = []
  /** Acknowledged creates by id, and acknowledged deletes. */
  readonly created = new Map<number, Created>()
  readonly deleted = new Set<number>()
  /** Replays answered the same: by whether the replaying build differs from the creating one. */
  readonly replays = { sameBuild: 0, crossBuild: 0 }
  private active: Instance[] = []
  private turn = 0
  private readonly idle = new Map<Instance, Array<() => void>>()

  join (name: string, build: Build, baseUrl: string): Instance {
    const instance: Instance = { name, build, baseUrl, requests: 0, statuses: new Map(), inFlight: 0 }
    this.instances.push(instance)
    this.active.push(instance)
    return instance
  }

  /** Takes `instance` out of the balancer and resolves once none of its requests is in flight. */
  async leave (instance: Instance): Promise<void> {
    this.active = this.active.filter((other) => other !== instance)
    if (instance.inFlight === 0) return
    await new Promise<void>((resolve) => { this.idle.set(instance, [...this.idle.get(instance) ?? [], resolve]) })
  }

  /** The next instance in the balancer, round robin. */
  pick (): Instance {
    const instance = this.active[this.turn++ % this.active.length]
    if (instance === undefined) throw new Error('no instance in the balancer')
    return instance
  }

  /**
   * Starts `clients` concurrent clients, each one request at a time; `stop` resolves once each has had its last answer.
   */
  startLoad (clients: number): { stop: () => Promise<void> } {
    let stopping = false
    const running = Array.from({ length: clients }, async (_, n) => { await this.client(n, () => stopping) })
    return {
      stop: async () => {
        stopping = true
        await Promise.all(running)
      }
    }
  }

  /** Replays on `on` every key created by the other build that no instance of `on`'s build has answered yet. */
  async replayAcross (on: Instance, concurrency = 4): Promise<number> {
    const pending = [...this.created.values()]
      .filter((created) => created.key !== undefined && created.by.build !== on.build &&
        !created.replayedOn.has(on.build))
    let next = 0
    await Promise.all(Array.from({ length: concurrency }, async () => {
      for (let created = pending[next++]; created !== undefined; created = pending[next++]) {
        await this.replay(on, created)
      }
    }))
    return pending.length
  }

  /** GET of every acknowledged create on `on`: as first answered, or 404 once acknowledged deleted. */
  async checkWrites (on: Instance, concurrency = 4): Promise<void> {
    const all = [...this.created.values()]
    let next = 0
    await Promise.all(Array.from({ length: concurrency }, async () => {
      for (let created = all[next++]; created !== undefined; created = all[next++]) {
        const gone = this.deleted.has(created.id)
        const answer = await this.send(on, 'GET', `/plants/${created.id}`)
        if (!this.expect(answer, gone ? 404 : 200, on, `GET /plants/${created.id} afterwards`) || gone) continue
        if (answer?.body !== created.body || answer.headers.get('etag') !== created.etag) {
          this.failures.push(`${on.name} GET /plants/${created.id} afterwards: ${answer?.body ?? ''} ` +
            `(etag ${answer?.headers.get('etag') ?? ''}), created by ${created.by.name} as ${created.body} ` +
              `(etag ${created.etag ?? ''})`)
        }
      }
    }))
    // And nothing else: a replay that created a second plant, say, would be there too.
    const listed = await this.listAll(on)
    const extra = [...listed].filter((id) => !this.created.has(id) || this.deleted.has(id))
    if (extra.length > 0) {
      this.failures.push(`${on.name} GET /plants lists plants no acknowledged create made: ${extra.join(', ')}`)
    }
    const kept = [...this.created.keys()].filter((id) => !this.deleted.has(id) && !listed.has(id))
    if (kept.length > 0) {
      this.failures.push(`${on.name} GET /plants leaves out acknowledged creates: ${kept.join(', ')}`)
    }
  }

  /** Every plant's id, the list read page by page (keyset, 100 at a time). */
  private async listAll (on: Instance): Promise<Set<number>> {
    const ids = new Set<number>()
    for (let after = ''; ;) {
      const answer = await this.send(on, 'GET', `/plants?limit=100${after}`)
      if (!this.expect(answer, 200, on, 'GET /plants afterwards')) return ids
      const page = JSON.parse(answer.body) as Array<{ id: number }>
      for (const { id } of page) ids.add(id)
      if (page.length < 100) return ids
      after = `&after=${page[page.length - 1]?.id ?? ''}`
    }
  }

  private async client (n: number, stopping: () => boolean): Promise<void> {
    const kept: Created[] = []
    const keyed: Created[] = []
    for (let i = 0; !stopping(); i++) {
      const step = i % 10
      if (step < 5 || kept.length === 0) {
        // One create in five without a key: both kinds of create, side by side.
        const created = await this.create(this.pick(), n, i, step !== 4)
        if (created !== undefined) kept.push(created)
        if (created?.key !== undefined) keyed.push(created)
      } else if (step < 7) {
        await this.remove(this.pick(), kept.shift() as Created)
      } else if (step === 7 && keyed.length > 0) {
        await this.replay(this.pick(), keyed[(i * 7919) % keyed.length] as Created)
      } else {
        await this.read(this.pick(), kept[(i * 31) % kept.length] as Created)
      }
    }
  }

  private async create (instance: Instance, n: number, i: number, withKey: boolean): Promise<Created | undefined> {
    const request = { name: `plant ${n}-${i}`, tag: `client-${n}` }
    const key = withKey ? `rolling-${n}-${i}` : undefined
    const answer = await this.send(instance, 'POST', '/plants', request,
      key === undefined ? {} : { 'idempotency-key': key })
    if (answer === undefined || !this.expect(answer, 201, instance, `POST /plants (${key ?? 'no key'})`)) {
      return undefined
    }
    const { id } = JSON.parse(answer.body) as { id: number }
    const created: Created = {
      id,
      key,
      request,
      by: instance,
      location: answer.headers.get('location'),
      etag: answer.headers.get('etag'),
      body: answer.body,
      replayedOn: new Set()
    }
    if (created.location !== `/plants/${id}` || answer.headers.has('idempotent-replayed')) {
      this.failures.push(`${instance.name} POST /plants (${key ?? 'no key'}): Location ${created.location ?? ''}, ` +
        `Idempotent-Replayed ${answer.headers.get('idempotent-replayed') ?? ''} for a first create`)
    }
    if (this.created.has(id)) this.failures.push(`${instance.name}: id ${id} issued twice`)
    this.created.set(id, created)
    return created
  }

  private async remove (instance: Instance, created: Created): Promise<void> {
    const answer = await this.send(instance, 'DELETE', `/plants/${created.id}`)
    if (this.expect(answer, 204, instance, `DELETE /plants/${created.id}`)) this.deleted.add(created.id)
  }

  private async read (instance: Instance, created: Created): Promise<void> {
    const answer = await this.send(instance, 'GET', `/plants/${created.id}`)
    if (this.expect(answer, 200, instance, `GET /plants/${created.id}`) && answer?.body !== created.body) {
      this.failures.push(
        `${instance.name} GET /plants/${created.id}: ${answer?.body ?? ''}, created as ${created.body}`)
    }
  }

  /** The key's create again, with the same body: the first answer again, marked as a replay. */
  private async replay (instance: Instance, created: Created): Promise<void> {
    const key = created.key as string
    const answer = await this.send(instance, 'POST', '/plants', created.request, { 'idempotency-key': key })
    if (answer === undefined ||
      !this.expect(answer, 201, instance, `replay of ${key} (created by ${created.by.name})`)) return
    const seen = [answer.headers.get('location'), answer.headers.get('etag'), answer.body,
      answer.headers.get('idempotent-replayed')]
    const first = [created.location, created.etag, created.body, 'true']
    if (seen.some((value, n) => value !== first[n])) {
      this.failures.push(`${instance.name} replay of ${key}: Location, ETag, body, ` +
        `Idempotent-Replayed ${JSON.stringify(seen)}; ` +
        `${created.by.name} first answered ${JSON.stringify(first)}`)
      return
    }
    created.replayedOn.add(instance.build)
    if (instance.build === created.by.build) this.replays.sameBuild++
    else this.replays.crossBuild++
  }

  /** Records an answer other than `status` as a failure; false then (and when there was no answer). */
  private expect (answer: Answer | undefined, status: number, instance: Instance, what: string): answer is Answer {
    if (answer === undefined) return false
    if (answer.status === status) return true
    this.failures.push(`${instance.name} ${what}: ${answer.status} ${answer.body}`)
    return false
  }

  /** One request to one instance; no answer at all (a refused or cut connection, a timeout) is a failure. */
  private async send (
    instance: Instance, method: string, path: string, body?: unknown, headers: Record<string, string> = {}
  ): Promise<Answer | undefined> {
    instance.requests++
    instance.inFlight++
    try {
      const res = await fetch(`${instance.baseUrl}${path}`, {
        method,
        headers: { ...AUTH, ...(body !== undefined && { 'content-type': 'application/json' }), ...headers },
        ...(body !== undefined && { body: JSON.stringify(body) }),
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS)
      })
      const answer = { status: res.status, headers: res.headers, body: await res.text() }
      instance.statuses.set(res.status, (instance.statuses.get(res.status) ?? 0) + 1)
      return answer
    } catch (err) {
      const cause = (err as { cause?: { message?: string, code?: string } }).cause
      this.failures.push(`${instance.name} ${method} ${path}: no answer (${(err as Error).message}` +
        `${cause === undefined ? '' : `: ${cause.code ?? ''} ${cause.message ?? ''}`})`)
      return undefined
    } finally {
      if (--instance.inFlight === 0) for (const wake of this.idle.get(instance)?.splice(0) ?? []) wake()
    }
  }
}

/** Answers of 500 and above an instance gave. */
export const serverErrors = (instance: Instance): number =>
  [...instance.statuses].reduce((sum, [status, count]) => sum + (status >= 500 ? count : 0), 0)
