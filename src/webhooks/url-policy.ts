import { lookup } from 'node:dns/promises'
import { isIP, type LookupFunction } from 'node:net'
import ipaddr from 'ipaddr.js'
import { ServiceError } from '../lib/errors.js'

export const MAX_WEBHOOK_URL_LENGTH = 2048

export interface ResolvedAddress {
  address: string
  family: 4 | 6
}

export type Resolver = (hostname: string) => Promise<readonly ResolvedAddress[]>

/** What `http.request` itself would use (getaddrinfo: /etc/hosts, then DNS). */
const systemResolver: Resolver = async (hostname) => {
  const addresses = await lookup(hostname, { all: true, verbatim: true })
  return addresses.map(({ address, family }) => ({ address, family: family === 6 ? 6 : 4 }))
}

export interface AddressPolicy {
  /** WEBHOOK_ALLOW_PRIVATE_URLS=1: for development or tests only. */
  allowPrivate: boolean
  resolve: Resolver
}

export const defaultAddressPolicy = (allowPrivate = false): AddressPolicy => ({ allowPrivate, resolve: systemResolver })

// Control characters and spaces, which the URL parser would silently drop or trim.
// eslint-disable-next-line no-control-regex -- control characters are exactly what this refuses
const INVISIBLE = /[\u0000-\u0020\u007f]/

/** No credentials: they would be sent in the clear and shown back in every listing. */
export function parseWebhookUrl (raw: string): URL {
  const invalid = (why: string): ServiceError => new ServiceError('invalid-url', `The webhook URL ${why}`)
  if (raw.length > MAX_WEBHOOK_URL_LENGTH) throw invalid(`is longer than ${MAX_WEBHOOK_URL_LENGTH} characters`)
  if (INVISIBLE.test(raw)) throw invalid('contains white space or control characters')
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    throw invalid('is not an absolute URL')
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw invalid('must use http or https')
  if (url.username !== '' || url.password !== '') throw invalid('must not contain credentials')
  if (url.hostname === '') throw invalid('has no host')
  // Nothing listens on port 0: a connection to it fails, or reaches whatever the OS picks.
  if (url.port === '0') throw invalid('has port 0')
  return url
}

export const urlHost = (url: URL): string => url.hostname.replace(/^\[(.*)\]$/, '$1')

/** ipaddr.js reads `::8.8.8.8` as IPv4-mapped, a different address: hex notation leaves it nothing to misread. */
function canonicalIPv6 (address: string): string | undefined {
  try {
    return new URL(`http://[${address}]/`).hostname.slice(1, -1)
  } catch {
    return undefined
  }
}

/** Everything outside global unicast (IPv4-compatible, NAT64, ULA, ...) is not public. */
const GLOBAL_UNICAST_V6 = ipaddr.IPv6.parseCIDR('2000::/3')

/** IPv4-mapped IPv6 addresses are judged as the IPv4 address they stand for. */
export function nonPublicRange (address: string): string | undefined {
  // Only canonical literals: getaddrinfo-style shorthands (127.1, 0x7f.1) never reach a socket here.
  const family = isIP(address)
  if (family === 0) return 'invalid'
  const canonical = family === 6 ? canonicalIPv6(address) : address
  if (canonical === undefined) return 'invalid'
  const ip = ipaddr.process(canonical)
  const range = ip.range()
  if (range !== 'unicast') return range
  if (ip.kind() === 'ipv6' && !ip.match(GLOBAL_UNICAST_V6)) return 'reserved'
  return undefined
}

/** The host's addresses; why a name does not resolve stays in the cause, for the log only. */
async function resolveHost (
  host: string, resolve: Resolver, signal?: AbortSignal
): Promise<readonly ResolvedAddress[]> {
  const family = isIP(host)
  if (family !== 0) return [{ address: host, family: family === 6 ? 6 : 4 }]
  const unresolvable = (cause?: unknown): ServiceError =>
    new ServiceError('url-unresolvable', `The webhook host ${host} does not resolve`, { cause })
  let addresses: readonly ResolvedAddress[]
  try {
    addresses = await (signal === undefined ? resolve(host) : untilAborted(resolve(host), signal))
  } catch (err) {
    throw unresolvable(err)
  }
  if (addresses.length === 0) throw unresolvable()
  return addresses
}

/**
 * Every address must pass, and the caller connects to exactly the one returned (pinnedLookup): DNS rebinding changes
 * nothing. A refused name is never told what it resolves to: any token holder could map internal names.
 */
export async function resolveWebhookTarget (
  url: URL, policy: AddressPolicy, signal?: AbortSignal
): Promise<ResolvedAddress> {
  signal?.throwIfAborted()
  const host = urlHost(url)
  const addresses = await resolveHost(host, policy.resolve, signal)
  for (const { address } of addresses) {
    const range = policy.allowPrivate ? (isIP(address) === 0 ? 'invalid' : undefined) : nonPublicRange(address)
    if (range === undefined) continue
    throw new ServiceError('url-not-allowed', address === host
      ? `The webhook host ${host} is a non-public (${range}) address; only public addresses are allowed`
      : `The webhook host ${host} is not allowed: it must resolve to public addresses only`)
  }
  return addresses[0] as ResolvedAddress
}

/** getaddrinfo cannot be cancelled: stop waiting for it instead (resolveWebhookTarget saw `signal` not aborted). */
async function untilAborted<T> (work: Promise<T>, signal: AbortSignal): Promise<T> {
  let onAbort = (): void => {}
  const aborted = new Promise<never>((_resolve, reject) => {
    onAbort = () => { reject(signal.reason) }
    signal.addEventListener('abort', onAbort, { once: true })
  })
  try {
    return await Promise.race([work, aborted])
  } finally {
    signal.removeEventListener('abort', onAbort)
  }
}

/** The check at creation or a URL change; a lookup slower than `timeoutMs` counts as unresolvable. */
export async function checkWebhookUrl (raw: string, policy: AddressPolicy, { timeoutMs }: { timeoutMs: number }) {
  const url = parseWebhookUrl(raw)
  const timeout = new AbortController()
  const timer = setTimeout(() => {
    timeout.abort(Object.assign(new Error(`no answer within ${timeoutMs} ms`), { code: 'ETIMEOUT' }))
  }, timeoutMs)
  try {
    await resolveWebhookTarget(url, policy, timeout.signal)
  } finally {
    clearTimeout(timer)
  }
}

/** The socket connects where the policy looked; Host and TLS server name stay the URL's host. */
export function pinnedLookup ({ address, family }: ResolvedAddress): LookupFunction {
  return (_hostname, options, callback) => {
    // Happy eyeballs (autoSelectFamily) asks for every address at once.
    if (options.all === true) callback(null, [{ address, family }])
    else callback(null, address, family)
  }
}
