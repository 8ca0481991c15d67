import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { isServiceError } from '../../../src/lib/errors.js'
import {
  checkWebhookUrl, nonPublicRange, parseWebhookUrl, pinnedLookup, resolveWebhookTarget, type AddressPolicy,
  type ResolvedAddress
} from '../../../src/webhooks/url-policy.js'

// Nothing here opens a connection: addresses are literals, and host names go to a fake resolver.

/** A resolver answering from a table, counting its calls; unknown names fail like getaddrinfo does. */
function fakeResolver (
  answers: Record<string, string[] | (() => string[])>
): AddressPolicy['resolve'] & { calls: string[] } {
  const calls: string[] = []
  const resolve = async (hostname: string): Promise<ResolvedAddress[]> => {
    calls.push(hostname)
    const answer = answers[hostname]
    if (answer === undefined) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' })
    return (typeof answer === 'function' ? answer() : answer).map(
      (address) => ({ address, family: address.includes(':') ? 6 : 4 }))
  }
  return Object.assign(resolve, { calls })
}

/** The lookup time limit of the creation-time check (none of these lookups takes time). */
const LOOKUP = { timeoutMs: 2000 }

const policy = (resolve: AddressPolicy['resolve'], allowPrivate = false): AddressPolicy => ({ allowPrivate, resolve })

async function rejectsWithCode (promise: Promise<unknown>, code: string, message?: RegExp): Promise<void> {
  await assert.rejects(promise, (err: unknown) => {
    assert.ok(isServiceError(err), `expected a ServiceError, got ${String(err)}`)
    assert.equal(err.code, code, err.message)
    if (message !== undefined) assert.match(err.message, message)
    return true
  })
}

describe('webhook URLs', () => {
  test('absolute http and https URLs are accepted', () => {
    for (const url of ['https://hooks.example.com/plants?x=1', 'http://example.com',
      'https://example.com:8443/a/b#frag', 'https://[2606:4700::1111]/']) {
      assert.equal(parseWebhookUrl(url).href.length > 0, true, url)
    }
  })

  test('anything else is invalid-url', () => {
    for (const url of [
      '/relative', 'example.com/hook', 'ftp://example.com/', 'javascript:alert(1)', 'file:///etc/passwd',
      'data:text/plain,x',
      'https://user:pass@example.com/', 'https://user@example.com/', 'https://:pass@example.com/',
      ' https://example.com/',
      'https://exa\nmple.com/', 'https://example.com/\t', 'https://example.com/a b', 'https://example.com:0/',
      'http://example.com:000/', `https://example.com/${'a'.repeat(2049 - 20)}`, 'http://'
    ]) {
      assert.throws(() => parseWebhookUrl(url), (err: unknown) => isServiceError(err, 'invalid-url'),
        JSON.stringify(url))
    }
    assert.equal(parseWebhookUrl(`https://example.com/${'a'.repeat(2048 - 20)}`).protocol, 'https:',
      '2048 characters are fine')
  })
})

describe('address ranges', () => {
  test('loopback, private, link-local, CGNAT, unspecified, multicast, reserved: refused', () => {
    const refused: Record<string, string> = {
      '127.0.0.1': 'loopback',
      '127.255.255.254': 'loopback',
      '10.1.2.3': 'private',
      '172.16.0.1': 'private',
      '172.31.255.255': 'private',
      '192.168.1.1': 'private',
      '169.254.169.254': 'linkLocal',
      '100.64.0.1': 'carrierGradeNat',
      '100.127.255.255': 'carrierGradeNat',
      '0.0.0.0': 'unspecified',
      '0.1.2.3': 'unspecified',
      '224.0.0.1': 'multicast',
      '239.255.255.250': 'multicast',
      '255.255.255.255': 'broadcast',
      '240.0.0.1': 'reserved',
      '192.0.0.1': 'reserved',
      '192.0.2.1': 'reserved',
      '198.18.0.1': 'reserved',
      '203.0.113.1': 'reserved',
      '::1': 'loopback',
      '::': 'unspecified',
      'fe80::1': 'linkLocal',
      'fc00::1': 'uniqueLocal',
      'fd12:3456::1': 'uniqueLocal',
      'ff02::1': 'multicast',
      // IPv4-mapped IPv6 is judged as the IPv4 address it stands for, in either notation.
      '::ffff:127.0.0.1': 'loopback',
      '::ffff:7f00:1': 'loopback',
      '::ffff:10.0.0.1': 'private',
      '::ffff:169.254.169.254': 'linkLocal',
      '::ffff:0.0.0.0': 'unspecified',
      // Outside global unicast (2000::/3), or special within it: never a public receiver.
      '::127.0.0.1': 'reserved',
      '::8.8.8.8': 'reserved',
      '::7f00:1': 'reserved',
      'fe80::1%eth0': 'invalid',
      '64:ff9b::7f00:1': 'rfc6052',
      '::ffff:0:7f00:1': 'rfc6145',
      '100::1': 'discard',
      'fec0::1': 'deprecatedSiteLocal',
      '2001:db8::1': 'reserved',
      '2002:7f00:1::1': '6to4',
      '2001::1': 'teredo',
      // Not a canonical literal: never handed to a socket.
      127.1: 'invalid',
      '0x7f.0.0.1': 'invalid',
      localhost: 'invalid',
      '': 'invalid'
    }
    for (const [address, range] of Object.entries(refused)) assert.equal(nonPublicRange(address), range, address)
  })

  test('public addresses pass', () => {
    for (const address of ['93.184.216.34', '8.8.8.8', '1.1.1.1', '100.63.255.255', '100.128.0.0', '172.15.255.255',
      '172.32.0.0',
      '192.169.0.1', '169.253.255.255', '2606:4700:4700::1111', '2a00:1450:4001:81b::200e', '::ffff:8.8.8.8']) {
      assert.equal(nonPublicRange(address), undefined, address)
    }
  })
})

describe('resolving a webhook target', () => {
  test('an IP literal is judged as it is, without asking the resolver, in every notation the URL ' +
    'parser accepts', async () => {
    const resolve = fakeResolver({})
    assert.deepEqual(await resolveWebhookTarget(new URL('https://93.184.216.34:8443/x'), policy(resolve)),
      { address: '93.184.216.34', family: 4 })
    assert.deepEqual(await resolveWebhookTarget(new URL('https://[2606:4700::1111]/'), policy(resolve)),
      { address: '2606:4700::1111', family: 6 })
    for (const url of ['http://127.0.0.1/', 'http://2130706433/', 'http://0x7f.1/', 'http://017700000001/',
      'http://127.1/',
      'http://[::1]/', 'http://[::ffff:127.0.0.1]/', 'http://[::ffff:a9fe:a9fe]/',
      'http://169.254.169.254/latest/meta-data/',
      'http://0.0.0.0:3000/', 'http://[fd00::1]/', 'http://100.100.100.200/', 'http://[ff02::1]/',
      'http://224.0.0.251/']) {
      await rejectsWithCode(resolveWebhookTarget(new URL(url), policy(resolve)), 'url-not-allowed',
        /only public addresses/)
    }
    assert.deepEqual(resolve.calls, [])
  })

  test('a host name must resolve to allowed addresses only: every one of them is checked', async () => {
    const resolve = fakeResolver({
      'hooks.example.com': ['93.184.216.34', '2606:2800:220:1:248:1893:25c8:1946'],
      'metadata.example.com': ['169.254.169.254'],
      'mixed.example.com': ['93.184.216.34', '10.0.0.7'],
      'mapped.example.com': ['::ffff:192.168.0.1'],
      'bogus.example.com': ['127.1'],
      'empty.example.com': []
    })
    assert.deepEqual(await resolveWebhookTarget(new URL('https://hooks.example.com/'), policy(resolve)),
      { address: '93.184.216.34', family: 4 })
    // Refused names are never told what they resolve to: neither the address nor its range.
    const refused = (host: string): RegExp => new RegExp(
      `^The webhook host ${host.replaceAll('.', '\\.')} is not allowed: it must resolve to public addresses only$`)
    for (const host of ['metadata.example.com', 'mixed.example.com', 'mapped.example.com']) {
      await rejectsWithCode(resolveWebhookTarget(new URL(`https://${host}/`), policy(resolve)), 'url-not-allowed',
        refused(host))
    }
    await rejectsWithCode(resolveWebhookTarget(new URL('https://bogus.example.com/'), policy(resolve, true)),
      'url-not-allowed', refused('bogus.example.com'))
    await rejectsWithCode(resolveWebhookTarget(new URL('https://empty.example.com/'), policy(resolve)),
      'url-unresolvable',
      /^The webhook host empty\.example\.com does not resolve$/)
    // Why it does not resolve is kept for the log (the cause), not told.
    await assert.rejects(resolveWebhookTarget(new URL('https://nowhere.example.com/'),
      policy(resolve)), (err: unknown) => {
      assert.ok(isServiceError(err, 'url-unresolvable'))
      assert.equal(err.message, 'The webhook host nowhere.example.com does not resolve')
      assert.equal((err.cause as { code?: string }).code, 'ENOTFOUND')
      return true
    })
  })

  test('allowPrivate lets non-public addresses through (development), still only as IP literals', async () => {
    const resolve = fakeResolver({ 'receiver.test': ['127.0.0.1'] })
    assert.deepEqual(await resolveWebhookTarget(new URL('http://receiver.test:8080/'), policy(resolve, true)),
      { address: '127.0.0.1', family: 4 })
    assert.deepEqual(await resolveWebhookTarget(new URL('http://[::1]:8080/'), policy(resolve, true)),
      { address: '::1', family: 6 })
  })

  test('checkWebhookUrl: the creation-time check, with the same codes', async () => {
    const resolve = fakeResolver({ 'hooks.example.com': ['93.184.216.34'], 'internal.example.com': ['10.0.0.1'] })
    await checkWebhookUrl('https://hooks.example.com/plants', policy(resolve), LOOKUP)
    await rejectsWithCode(checkWebhookUrl('https://internal.example.com/', policy(resolve), LOOKUP), 'url-not-allowed')
    await rejectsWithCode(checkWebhookUrl('https://user:secret@hooks.example.com/', policy(resolve), LOOKUP),
      'invalid-url')
    await rejectsWithCode(checkWebhookUrl('ftp://hooks.example.com/', policy(resolve), LOOKUP), 'invalid-url')
    assert.deepEqual(resolve.calls, ['hooks.example.com', 'internal.example.com'],
      'an invalid URL is refused before any resolving')
  })

  test('checkWebhookUrl waits for a lookup at most timeoutMs: one that takes longer is a host ' +
    'that does not resolve', async () => {
    let late: (addresses: ResolvedAddress[]) => void = () => {}
    const table = fakeResolver({ 'hooks.example.com': ['93.184.216.34'] })
    const slow: AddressPolicy['resolve'] = async (hostname) => hostname === 'hooks.example.com'
      ? await table(hostname)
      : await new Promise<ResolvedAddress[]>((resolve) => { late = resolve })
    await rejectsWithCode(checkWebhookUrl('https://slow.example.com/', policy(slow), { timeoutMs: 20 }),
      'url-unresolvable',
      /^The webhook host slow\.example\.com does not resolve$/)
    // The answer coming after the time is up changes nothing; one in time is judged as usual.
    late([{ address: '93.184.216.34', family: 4 }])
    await checkWebhookUrl('https://hooks.example.com/', policy(slow), { timeoutMs: 20 })
    await checkWebhookUrl('https://93.184.216.34/', policy(slow), { timeoutMs: 20 })
  })

  test('the pinned lookup answers with the checked address, whatever name it is asked for, in both forms', () => {
    const lookup = pinnedLookup({ address: '93.184.216.34', family: 4 })
    const answers: unknown[] = []
    lookup('elsewhere.example.com', {}, (err, address, family) => { answers.push([err, address, family]) })
    lookup('elsewhere.example.com', { all: true }, (err, address) => { answers.push([err, address]) })
    assert.deepEqual(answers, [[null, '93.184.216.34', 4], [null, [{ address: '93.184.216.34', family: 4 }]]])
  })
})
