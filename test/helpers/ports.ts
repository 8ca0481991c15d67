import { createServer, type AddressInfo } from 'node:net'

/** Listens on `port` of 127.0.0.1 (0: any free one), then closes; the port it had. Rejects when the port is taken. */
export async function listenAndClose (port: number): Promise<number> {
  const probe = createServer()
  await new Promise<void>((resolve, reject) => {
    probe.once('error', reject)
    probe.listen(port, '127.0.0.1', () => resolve())
  })
  const bound = (probe.address() as AddressInfo).port
  await new Promise<void>((resolve) => probe.close(() => resolve()))
  return bound
}

/** A port free a moment ago on 127.0.0.1, for a process or setting that needs a fixed one. */
export async function freePort (): Promise<number> {
  return await listenAndClose(0)
}
