import type { Socket } from 'node:net'
import type pg from 'pg'

/** How often the checked-out connections are looked at: a silent one is given up at most this late. */
const SILENCE_CHECK_MS = 100

/** node-postgres' own words for a statement it gave up on, which the store and its logs already know. */
const READ_TIMEOUT_MESSAGE = 'Query read timeout'

interface Watched {
  stream: Socket
  busy: boolean
  /** When the server last sent something, or when the connection was checked out. */
  heardAt: number
  bytesRead: number
}

/**
 * Gives up on a checked-out connection the server has sent nothing on for `boundMs`: its statement fails with
 * 'Query read timeout' and the pool drops it. A network that goes silent would otherwise hold a caller until TCP
 * gives up. One sweep per pool instead of the driver's `query_timeout`, whose timer and closures per statement kept
 * each request's objects alive past young collections (docs/performance.md). An idle connection is never judged.
 */
export function giveUpOnSilence (pool: pg.Pool, boundMs: number, now: () => number = Date.now): void {
  const watched = new Map<pg.PoolClient, Watched>()
  pool.on('connect', (client) => {
    // A socket (TLS or not): pg is never given a stream of another kind here.
    const stream = client.connection.stream as Socket
    watched.set(client, { stream, busy: false, heardAt: 0, bytesRead: stream.bytesRead })
  })
  pool.on('acquire', (client) => {
    const state = watched.get(client)
    if (state === undefined) return
    state.busy = true
    state.heardAt = now()
    state.bytesRead = state.stream.bytesRead
  })
  pool.on('release', (_err, client) => {
    const state = watched.get(client)
    if (state !== undefined) state.busy = false
  })
  pool.on('remove', (client) => { watched.delete(client) })

  const sweep = setInterval(() => {
    const at = now()
    for (const state of watched.values()) {
      if (!state.busy) continue
      const read = state.stream.bytesRead
      if (read !== state.bytesRead) {
        state.bytesRead = read
        state.heardAt = at
      } else if (at - state.heardAt >= boundMs) {
        state.busy = false
        // The driver fails the statement with this error and marks the client unusable; the pool drops it.
        state.stream.destroy(new Error(READ_TIMEOUT_MESSAGE))
      }
    }
    if (pool.ending && watched.size === 0) clearInterval(sweep)
  }, SILENCE_CHECK_MS)
  // Never what keeps a stopping process alive.
  sweep.unref()
}
