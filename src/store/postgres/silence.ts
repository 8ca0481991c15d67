import type { Socket } from 'node:net'
import type pg from 'pg'

/**
 * Gives up on a checked-out connection the server has sent nothing on for `boundMs`, with node-postgres' own
 * 'Query read timeout': the statement fails, the pool drops the connection; an idle one is never judged. A sweep
 * per pool every 100 ms, not the driver's `query_timeout`, whose timer and closures per statement kept each
 * request's objects alive past young collections (docs/performance.md). `heardAt`: the last data, or the check-out.
 */
export function giveUpOnSilence (pool: pg.Pool, boundMs: number): void {
  const watched = new Map<pg.PoolClient, { stream: Socket, busy: boolean, heardAt: number, bytesRead: number }>()
  pool.on('connect', (client) => {
    watched.set(client, { stream: client.connection.stream as Socket, busy: false, heardAt: 0, bytesRead: 0 })
  })
  pool.on('acquire', (client) => {
    const state = watched.get(client)
    if (state === undefined) return
    state.busy = true
    state.heardAt = Date.now()
    state.bytesRead = state.stream.bytesRead
  })
  pool.on('release', (_err, client) => { const state = watched.get(client); if (state) state.busy = false })
  pool.on('remove', (client) => { watched.delete(client) })
  const sweep = setInterval(() => {
    const now = Date.now()
    for (const state of watched.values()) {
      if (!state.busy) continue
      if (state.stream.bytesRead !== state.bytesRead) {
        state.bytesRead = state.stream.bytesRead
        state.heardAt = now
      } else if (now - state.heardAt >= boundMs) {
        state.busy = false
        // The driver fails the statement with it and marks the client unusable: the pool drops it.
        state.stream.destroy(new Error('Query read timeout'))
      }
    }
    if (pool.ending && watched.size === 0) clearInterval(sweep)
  }, 100).unref()
}
