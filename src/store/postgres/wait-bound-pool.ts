import pg from 'pg'

type Done = (release?: unknown) => void
type ConnectCallback = (err: Error | undefined, client: pg.PoolClient | undefined, done: Done) => void

/** A checkout not yet answered; `callback` is cleared once it is, by the pool or by the deadline. */
interface Waiter {
  /** On the monotonic clock: a step of the wall clock would fail every waiter, or hold them all. */
  readonly deadline: number
  callback: ConnectCallback | undefined
}

/** pg-pool's own words for a checkout that waited too long: isConnectionError knows them. */
export const waitedTooLong = (): Error => new Error('timeout exceeded when trying to connect')

/**
 * A pg.Pool whose `connectionTimeoutMillis` bounds each checkout, the wait for a busy pool's connection included,
 * with one timer per pool rather than one per checkout. pg-pool arms and clears a timer for every checkout while that
 * option is set, an idle connection's too: on a busy server that was a measurable share of a read
 * (docs/performance.md). Waiters are kept in call order; as all share one bound, the first is always the next due.
 * A new connection still gives up at the same bound: each client gets the option itself.
 */
export class WaitBoundPool extends pg.Pool {
  readonly #waitMs: number
  readonly #waiters: Waiter[] = []
  #timer: NodeJS.Timeout | undefined

  constructor (config: pg.PoolConfig) {
    const waitMs = config.connectionTimeoutMillis ?? 0
    super({ ...config, connectionTimeoutMillis: 0, Client: clientGivingUpAfter(waitMs) })
    this.#waitMs = waitMs
  }

  override connect (): Promise<pg.PoolClient>
  override connect (callback: ConnectCallback): void
  override connect (callback?: ConnectCallback): Promise<pg.PoolClient> | undefined {
    if (this.#waitMs === 0) {
      if (callback === undefined) return super.connect()
      super.connect(callback)
      return undefined
    }
    if (callback === undefined) {
      return new Promise((resolve, reject) => {
        this.connect((err, client) => { if (client === undefined) reject(err); else resolve(client) })
      })
    }
    const waiter: Waiter = { deadline: performance.now() + this.#waitMs, callback }
    this.#waiters.push(waiter)
    this.#timer ??= setTimeout(() => { this.#expire() }, this.#waitMs).unref()
    super.connect((err, client, done) => {
      const answer = waiter.callback
      if (answer === undefined) {
        // Answered already, by the deadline: the connection goes back unused.
        if (client !== undefined) done()
        return
      }
      waiter.callback = undefined
      this.#forgetAnswered()
      answer(err, client, done)
    })
    return undefined
  }

  /** Answers every waiter past its deadline (deadlines grow in call order), then waits for the next one's. */
  #expire (): void {
    this.#timer = undefined
    const now = performance.now()
    for (let first = this.#waiters[0]; first !== undefined && first.deadline <= now; first = this.#waiters[0]) {
      this.#waiters.shift()
      const answer = first.callback
      first.callback = undefined
      answer?.(waitedTooLong(), undefined, () => {})
    }
    this.#forgetAnswered()
    const next = this.#waiters[0]
    if (next !== undefined) this.#timer = setTimeout(() => { this.#expire() }, next.deadline - now).unref()
  }

  /** Answered waiters leave from the front: the pool answers in call order, so the queue stays as short as the wait. */
  #forgetAnswered (): void {
    while (this.#waiters.length > 0 && this.#waiters[0]?.callback === undefined) this.#waiters.shift()
  }
}

/**
 * A client "class" that gives up connecting after `ms` (0: never), whatever the pool's own setting. Its constructor
 * returns a plain pg.Client: a subclass's instances would give the driver's hot methods a second shape to handle.
 */
function clientGivingUpAfter (ms: number): new () => pg.Client {
  class GivingUp {
    constructor (config?: pg.ClientConfig) {
      return new pg.Client({ ...config, connectionTimeoutMillis: ms })
    }
  }
  return GivingUp as new () => pg.Client
}
