import { createServer, type AddressInfo } from 'node:net'

/** A port free a moment ago on 127.0.0.1, for a process or setting that needs a fixed one. */
export async function freePort (): Promise<number> {
  const probe = createServer()
  await new Promise<void>((resolve, reject) => {
    probe.once('error', reject)
    probe.listen(0, '127.0.0.1', () => resolve())
  })
  const { port } = probe.address() as AddressInfo
  await new Promise<void>((resolve) => probe.close(() => resolve()))
  return port
}
