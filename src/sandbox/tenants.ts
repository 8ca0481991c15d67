import { sandboxBusy, sandboxFull, shuttingDown } from '../lib/errors.js'
import type { Store, StoreLog } from '../store/contract.js'
import type { PoolReporter, PoolStats } from '../store/pool-stats.js'

/** Where tenants live: one store each, and a registry of when each was created and last used. */
export interface TenantBackend extends PoolReporter {
  exists: (key: string) => Promise<boolean>
  /** Records a use at `now`; resolves true when this call created the tenant. */
  touch: (key: string, now: number) => Promise<boolean>
  /** Resolves `created` true when its data is new (to seed): also after a failed creation left a row without data. */
  open: (key: string, created: boolean) => Promise<{ store: Store, created: boolean }>
  count: () => Promise<number>
  /** Rejects while the registry does not answer, or (SQLite) while a new tenant would not fit on the disk. */
  ping: () => Promise<void>
  /** Up to `limit` tenants last used before `before`, least recently used first. */
  leastRecentlyUsed: (before: number, limit: number) => Promise<string[]>
  /** Deletes the tenant with all its data if it was still last used before `before`; true when it did. */
  remove: (key: string, before: number) => Promise<boolean>
  close: () => Promise<void>
}

interface TenantRegistryOptions<T> {
  backend: TenantBackend
  maxTenants: number
  openTenants: number
  ttlMs: number
  /** What requests use, from a tenant's freshly opened store; `created`: a new tenant (seed it). */
  start: (key: string, store: Store, created: boolean) => Promise<T>
  /** Stops what `start` started and closes the store. */
  stop: (tenant: T) => Promise<void>
  now?: () => number
  log?: StoreLog
  /** How long an open waits for a free store (SANDBOX_OPEN_WAIT_MS; OPEN_WAIT_MS by default). */
  openWaitMs?: number
}

export interface TenantLease<T> {
  tenant: T
  /** Once per lease: the tenant may be closed again when no lease holds it. */
  release: () => void
}

interface Entry<T> {
  key: string
  tenant: T
  refs: number
  lastUsed: number
  touchedAt: number
  /** performance.now() when its last request ended. */
  idleSince: number
}

/** An open waiting for a store: served first come, first served. */
interface Waiter {
  deadline: number
  grant: () => void
  refuse: (err: Error) => void
}

/** A store just left idle is kept this long for its tenant: a client's requests in a row then share one open. */
const KEEP_IDLE_MS = 250

/** Expired tenants deleted at once: PostgreSQL drops a schema per transaction. */
const SWEEP_PARALLEL = 4

/** Seconds a caller refused for a full sandbox is asked to wait. */
export const SANDBOX_FULL_RETRY_AFTER_S = 60

/** SANDBOX_OPEN_WAIT_MS's default. */
export const OPEN_WAIT_MS = 30_000

/**
 * The open tenants, least recently used first, closed only when no request holds them; one tenant's opens, closes
 * and deletes run one at a time. Handles close after a quarter of the TTL, so a shared database never deletes a
 * tenant another instance still has open.
 */
export class TenantRegistry<T> {
  readonly #options: TenantRegistryOptions<T>
  readonly #backend: TenantBackend
  readonly #now: () => number
  readonly #open = new Map<string, Entry<T>>()
  readonly #locks = new Map<string, Promise<unknown>>()
  /** Open entries no request holds, longest idle first. */
  readonly #idle = new Map<string, Entry<T>>()
  readonly #queue: Waiter[] = []
  /** Stores being opened: each holds a place under SANDBOX_OPEN_TENANTS. */
  #opening = 0
  #pumpTimer: NodeJS.Timeout | undefined
  #pumpAt = Infinity
  /** How often a use is recorded, and how long a handle stays open unused. */
  readonly touchIntervalMs: number
  readonly sweepIntervalMs: number
  #timer: NodeJS.Timeout | undefined
  #sweeping: Promise<void> | undefined
  #closed = false

  constructor (options: TenantRegistryOptions<T>) {
    this.#options = options
    this.#backend = options.backend
    this.#now = options.now ?? Date.now
    this.touchIntervalMs = Math.max(1, Math.min(60_000, Math.floor(options.ttlMs / 4)))
    this.sweepIntervalMs = this.touchIntervalMs
  }

  get openCount (): number {
    return this.#open.size
  }

  get waiting (): number {
    return this.#queue.length
  }

  async count (): Promise<number> {
    return await this.#backend.count()
  }

  /** The pools the tenants' stores share (PostgreSQL), as metrics read them. */
  poolStats (): PoolStats[] {
    return this.#backend.poolStats?.() ?? []
  }

  /** For /health: rejects (storage-full, unavailable) while new tenants cannot be made. */
  async ping (): Promise<void> {
    await this.#backend.ping()
  }

  start (): void {
    this.#timer = setInterval(() => {
      this.sweep().catch((err: unknown) => {
        this.#options.log?.error({ err }, 'sandbox: the sweep failed; it runs again')
      })
    }, this.sweepIntervalMs)
    this.#timer.unref()
  }

  async acquire (key: string): Promise<TenantLease<T>> {
    if (this.#closed) throw shuttingDown()
    let entry = this.#open.get(key)
    while (entry === undefined) {
      await this.#withKey(key, async () => {
        if (this.#open.has(key)) return
        await this.#waitForRoom()
        try {
          await this.#openEntry(key)
        } finally {
          this.#opening--
          this.#pump()
        }
      })
      entry = this.#open.get(key)
    }
    const now = this.#now()
    entry.refs++
    this.#idle.delete(key)
    entry.lastUsed = Math.max(entry.lastUsed, now)
    this.#open.delete(key)
    this.#open.set(key, entry)
    if (now - entry.touchedAt >= this.touchIntervalMs) this.#touch(entry)
    let released = false
    const held = entry
    return {
      tenant: entry.tenant,
      release: () => {
        if (released) return
        released = true
        held.refs--
        if (held.refs === 0 && this.#open.get(held.key) === held) {
          held.idleSince = performance.now()
          this.#idle.set(held.key, held)
          this.#pump()
        }
      }
    }
  }

  /** Deletes expired tenants, closes idle handles, records uses, keeps the tenant cap. */
  async sweep (now = this.#now()): Promise<void> {
    const run = async (): Promise<void> => {
      for (const entry of [...this.#open.values()]) {
        if (entry.lastUsed > entry.touchedAt) this.#touch(entry)
        if (entry.refs === 0 && now - entry.lastUsed >= this.touchIntervalMs) {
          await this.#withKey(entry.key, async () => { if (entry.refs === 0) await this.#close(entry) })
        }
      }
      const cutoff = now - this.#options.ttlMs
      for (;;) {
        const expired = await this.#backend.leastRecentlyUsed(cutoff, 100)
        let removed = 0
        const next = expired.values()
        await Promise.all(Array.from({ length: SWEEP_PARALLEL }, async () => {
          for (const key of next) if (await this.#remove(key, cutoff)) removed++
        }))
        if (removed === 0) break
      }
      const excess = await this.#backend.count() - this.#options.maxTenants
      if (excess > 0) await this.#evict(excess, now)
    }
    this.#sweeping ??= run().finally(() => { this.#sweeping = undefined })
    await this.#sweeping
  }

  async close (): Promise<void> {
    this.#closed = true
    clearInterval(this.#timer)
    clearTimeout(this.#pumpTimer)
    for (const waiter of this.#queue.splice(0)) waiter.refuse(shuttingDown())
    await this.#sweeping?.catch(() => {})
    await Promise.all([...this.#locks.values()].map(async (lock) => { await lock.catch(() => {}) }))
    for (const entry of [...this.#open.values()]) await this.#close(entry)
    await this.#backend.close()
  }

  async #openEntry (key: string): Promise<void> {
    const now = this.#now()
    if (!await this.#backend.exists(key)) {
      const excess = await this.#backend.count() + 1 - this.#options.maxTenants
      if (excess > 0 && await this.#evict(excess, now) < excess) throw sandboxFull()
    }
    const created = await this.#backend.touch(key, now)
    let tenant: T
    try {
      const { store, created: fresh } = await this.#backend.open(key, created)
      try {
        tenant = await this.#options.start(key, store, fresh)
      } catch (err) {
        await store.close()
        throw err
      }
    } catch (err) {
      // A tenant made by this open but not ready (a full disk, say) is undone: the next request makes it whole.
      if (created) await this.#backend.remove(key, Number.MAX_SAFE_INTEGER).catch(() => false)
      throw err
    }
    const entry = { key, tenant, refs: 0, lastUsed: now, touchedAt: now, idleSince: performance.now() }
    this.#open.set(key, entry)
    this.#idle.set(key, entry)
  }

  /** Deletes up to `count` LRU tenants unused for a touch interval, by which the registry may lag a use. */
  async #evict (count: number, now: number): Promise<number> {
    const before = now - this.touchIntervalMs
    const candidates = await this.#backend.leastRecentlyUsed(before, count + this.#open.size)
    let evicted = 0
    for (const key of candidates) {
      if (evicted >= count) break
      if ((this.#open.get(key)?.refs ?? 0) > 0) continue
      if (await this.#remove(key, before)) evicted++
    }
    return evicted
  }

  async #remove (key: string, before: number): Promise<boolean> {
    return await this.#withKey(key, async () => {
      const entry = this.#open.get(key)
      if (entry !== undefined) {
        if (entry.refs > 0 || entry.lastUsed >= before) return false
        await this.#close(entry, false)
      }
      const removed = await this.#backend.remove(key, before)
      if (removed) this.#options.log?.info({ tenant: key.slice(0, 12) }, 'sandbox: tenant deleted')
      return removed
    })
  }

  /** Takes a place under SANDBOX_OPEN_TENANTS (`#opening`), in turn; past SANDBOX_OPEN_WAIT_MS a 503 sandbox-busy. */
  async #waitForRoom (): Promise<void> {
    if (this.#queue.length === 0 && this.#room()) {
      this.#opening++
      return
    }
    await new Promise<void>((resolve, reject) => {
      const deadline = performance.now() + (this.#options.openWaitMs ?? OPEN_WAIT_MS)
      this.#queue.push({ deadline, grant: resolve, refuse: reject })
      this.#pump()
    })
  }

  #room (): boolean {
    return this.#open.size + this.#opening < this.#options.openTenants
  }

  /** Gives waiters a free place or the longest idle store's, unless it is within KEEP_IDLE_MS and none is late. */
  #pump (): void {
    const clock = performance.now()
    while (this.#queue.length > 0) {
      const first = this.#queue[0] as Waiter
      const late = clock >= first.deadline
      if (!this.#room()) {
        const [idle] = this.#idle.values()
        if (idle === undefined || (!late && idle.idleSince + KEEP_IDLE_MS > clock)) {
          if (late) {
            this.#queue.shift()
            first.refuse(sandboxBusy())
            continue
          }
          const next = idle === undefined ? first.deadline : Math.min(first.deadline, idle.idleSince + KEEP_IDLE_MS)
          this.#pumpIn(next - clock)
          return
        }
        this.#detach(idle)
        void this.#withKey(idle.key, async () => { await this.#stop(idle) }).catch((err: unknown) => {
          this.#options.log?.error({ err }, 'sandbox: a tenant could not be closed')
        })
      }
      this.#queue.shift()
      this.#opening++
      first.grant()
    }
  }

  /** One timer for the next moment the queue can move without a release. */
  #pumpIn (ms: number): void {
    const at = performance.now() + ms
    if (this.#pumpTimer !== undefined && this.#pumpAt <= at) return
    clearTimeout(this.#pumpTimer)
    this.#pumpAt = at
    this.#pumpTimer = setTimeout(() => {
      this.#pumpTimer = undefined
      this.#pumpAt = Infinity
      this.#pump()
    }, Math.max(1, Math.ceil(ms)))
  }

  async #close (entry: Entry<T>, record = true): Promise<void> {
    if (this.#open.get(entry.key) !== entry) return
    this.#detach(entry)
    this.#pump()
    await this.#stop(entry, record)
  }

  #detach (entry: Entry<T>): void {
    this.#open.delete(entry.key)
    this.#idle.delete(entry.key)
  }

  async #stop (entry: Entry<T>, record = true): Promise<void> {
    if (record && entry.lastUsed > entry.touchedAt) {
      await this.#backend.touch(entry.key, entry.lastUsed).catch(() => false)
    }
    await this.#options.stop(entry.tenant)
  }

  #touch (entry: Entry<T>): void {
    entry.touchedAt = entry.lastUsed
    this.#backend.touch(entry.key, entry.lastUsed).catch((err: unknown) => {
      this.#options.log?.error({ err }, 'sandbox: a tenant\'s use could not be recorded')
    })
  }

  async #withKey<R> (key: string, work: () => Promise<R>): Promise<R> {
    const previous = this.#locks.get(key) ?? Promise.resolve()
    const next = previous.catch(() => {}).then(work)
    const settled = next.catch(() => {})
    this.#locks.set(key, settled)
    try {
      return await next
    } finally {
      if (this.#locks.get(key) === settled) this.#locks.delete(key)
    }
  }
}
