import { isIP } from 'node:net'
import ipaddr from 'ipaddr.js'
import { ConfigError } from '../lib/errors.js'

const PROXY_RANGE_NAMES = new Set(['loopback', 'linklocal', 'uniquelocal'])

/** `true` (trust anyone who sends the header) is refused: any client could pick its address and escape its limit. */
export function parseTrustProxy (text: string): false | number | string[] {
  const value = text.trim()
  if (value === '' || value === '0' || value === 'false') return false
  if (/^\d+$/.test(value)) {
    const hops = Number(value)
    if (!Number.isSafeInteger(hops) || hops > 100) {
      throw new ConfigError('invalid configuration: TRUST_PROXY hop count must be at most 100')
    }
    return hops
  }
  const entries = value.split(',').map((entry) => entry.trim()).filter((entry) => entry !== '')
  for (const entry of entries) {
    if (!PROXY_RANGE_NAMES.has(entry) && !isAddressOrCidr(entry)) {
      throw new ConfigError(
        'invalid configuration: TRUST_PROXY must be a hop count or a comma-separated list of IP addresses or CIDRs ' +
        `(not ${JSON.stringify(entry)})`
      )
    }
  }
  const everyone = trustsEveryone(entries.filter((entry) => !PROXY_RANGE_NAMES.has(entry)))
  if (everyone !== undefined) {
    throw new ConfigError(
      `invalid configuration: TRUST_PROXY ${JSON.stringify(value)} trusts every ${everyone} address, as \`true\` ` +
      'would: list only the proxies\' addresses'
    )
  }
  return entries
}

/** A prefix of 0 (or a netmask) is refused as Fastify's proxy-addr refuses it, so `check` and `serve` agree. */
function isAddressOrCidr (entry: string): boolean {
  const [address = '', prefix, extra] = entry.split('/')
  const family = isIP(address)
  if (family === 0 || extra !== undefined) return false
  if (prefix === undefined) return true
  if (!/^\d{1,3}$/.test(prefix)) return false
  const bits = Number(prefix)
  return bits >= 1 && bits <= (family === 4 ? 32 : 128)
}

/** `::ffff:0:0/96`, where proxy-addr matches IPv4 clients against IPv6 ranges (and IPv4 ranges land). */
const IPV4_MAPPED_FIRST = 0xffffn << 32n
const IPV4_MAPPED_LAST = IPV4_MAPPED_FIRST + 0xffffffffn
const IPV6_LAST = (1n << 128n) - 1n

/**
 * Whether the ranges together trust every IPv4 or IPv6 client (`0.0.0.0/1,128.0.0.0/1`). Each is placed in the IPv6
 * space (IPv4 as IPv4-mapped, as proxy-addr compares them), merged, and the two spaces checked.
 */
function trustsEveryone (ranges: readonly string[]): 'IPv4' | 'IPv6' | undefined {
  const spans = ranges.map((range): [bigint, bigint] => {
    const [address, bits] = range.includes('/') ? ipaddr.parseCIDR(range) : [ipaddr.parse(range), -1]
    const v6 = address.kind() === 'ipv4' ? (address as ipaddr.IPv4).toIPv4MappedAddress() : address as ipaddr.IPv6
    const prefix = bits < 0 ? 128 : address.kind() === 'ipv4' ? 96 + bits : bits
    const size = 1n << BigInt(128 - prefix)
    const first = v6.toByteArray().reduce((n, byte) => (n << 8n) | BigInt(byte), 0n) & ~(size - 1n) & IPV6_LAST
    return [first, first + size - 1n]
  }).sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))
  const covers = (from: bigint, to: bigint): boolean => {
    let next = from
    for (const [first, last] of spans) {
      if (first > next) break
      if (last >= next) next = last + 1n
      if (next > to) return true
    }
    return false
  }
  if (covers(0n, IPV6_LAST)) return 'IPv6'
  if (covers(IPV4_MAPPED_FIRST, IPV4_MAPPED_LAST)) return 'IPv4'
  return undefined
}
