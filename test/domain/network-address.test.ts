import { describe, expect, it } from 'vitest';
import { addressScope, isOwnLoopback } from '../../src/domain/network-address.ts';
import { nonPublicAddressReason, type HostLookup } from '../../src/services/outbound-address.ts';

describe('addressScope', () => {
  it.each([
    ['8.8.8.8', 'public'],
    ['2001:4860:4860::8888', 'public'],
    ['127.0.0.1', 'loopback'],
    ['127.255.0.9', 'loopback'],
    ['::1', 'loopback'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['0.0.0.0', 'unspecified'],
    ['::', 'unspecified'],
    ['10.1.2.3', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.254', 'private'],
    ['172.32.0.1', 'public'],
    ['192.168.0.10', 'private'],
    ['100.64.0.1', 'private'],
    ['fd12:3456::1', 'private'],
    ['::ffff:10.0.0.1', 'private'],
    ['169.254.169.254', 'link-local'],
    ['fe80::1', 'link-local'],
    ['224.0.0.1', 'multicast'],
    ['ff02::1', 'multicast'],
    ['192.0.2.7', 'reserved'],
    ['255.255.255.255', 'reserved'],
    ['2001:db8::1', 'reserved'],
  ] as const)('%s is %s', (ip, scope) => {
    expect(addressScope(ip)).toBe(scope);
  });

  it('refuses what is not an IP address', () => {
    expect(() => addressScope('ehr.example.org')).toThrow(TypeError);
  });
});

describe('nonPublicAddressReason', () => {
  const lookup =
    (table: Record<string, readonly string[]>): HostLookup =>
    (host) => {
      const found = table[host];
      return found === undefined
        ? Promise.reject(Object.assign(new Error('not found'), { code: 'ENOTFOUND' }))
        : Promise.resolve(found);
    };
  const none = new Set<string>();

  it('lets a host through when every address it resolves to is public', async () => {
    const dns = lookup({ 'ehr.example.org': ['203.0.114.5', '2606:4700::1'] });
    expect(await nonPublicAddressReason(new URL('https://ehr.example.org/x'), none, dns)).toBeNull();
  });

  it('names the address and its scope for an IP literal', async () => {
    expect(await nonPublicAddressReason(new URL('https://127.0.0.1:9/'), none)).toBe(
      '127.0.0.1 is a loopback address',
    );
    expect(await nonPublicAddressReason(new URL('https://[::1]/'), none)).toBe('::1 is a loopback address');
  });

  it('refuses a host when any one of its addresses is not public', async () => {
    const dns = lookup({ 'ehr.internal': ['203.0.114.5', '10.0.0.5'] });
    expect(await nonPublicAddressReason(new URL('https://ehr.internal/'), none, dns)).toBe(
      'its host ehr.internal resolves to 10.0.0.5, a private address',
    );
  });

  it('refuses a host that does not resolve', async () => {
    expect(await nonPublicAddressReason(new URL('https://nowhere.invalid/'), none, lookup({}))).toBe(
      'its host nowhere.invalid does not resolve',
    );
  });

  it('allows exactly the hosts and addresses named', async () => {
    const dns = lookup({ 'ehr.internal': ['10.0.0.5'], 'other.internal': ['10.0.0.6'] });
    expect(
      await nonPublicAddressReason(new URL('https://EHR.internal/'), new Set(['ehr.internal']), dns),
    ).toBeNull();
    expect(
      await nonPublicAddressReason(new URL('https://other.internal/'), new Set(['10.0.0.6']), dns),
    ).toBeNull();
    expect(
      await nonPublicAddressReason(new URL('https://other.internal/'), new Set(['10.0.0.5']), dns),
    ).toMatch(/10\.0\.0\.6, a private address/);
    expect(await nonPublicAddressReason(new URL('https://[::1]:8443/'), new Set(['::1']))).toBeNull();
  });
});

// Every entry of IANA's IPv4 and IPv6 Special-Purpose Address Registries (and the blocks of the
// address space beside them that are not public), with an address inside each, and the forms of IPv6
// that carry an IPv4 address: those are judged by the IPv4 address they reach, or refused when obsolete.
describe('addressScope over the IANA special-purpose registries', () => {
  it.each([
    // IPv4 Special-Purpose Address Registry
    ['0.0.0.0/8 this network', '0.1.2.3', 'unspecified'],
    ['10.0.0.0/8 private-use', '10.255.255.255', 'private'],
    ['100.64.0.0/10 shared address space', '100.127.255.254', 'private'],
    ['127.0.0.0/8 loopback', '127.0.0.2', 'loopback'],
    ['169.254.0.0/16 link local', '169.254.0.1', 'link-local'],
    ['172.16.0.0/12 private-use', '172.20.1.1', 'private'],
    ['192.0.0.0/24 IETF protocol assignments', '192.0.0.1', 'reserved'],
    ['192.0.0.0/29 DS-Lite', '192.0.0.2', 'reserved'],
    ['192.0.0.8/32 IPv4 dummy address', '192.0.0.8', 'reserved'],
    ['192.0.0.9/32 PCP anycast', '192.0.0.9', 'reserved'],
    ['192.0.0.10/32 TURN anycast', '192.0.0.10', 'reserved'],
    ['192.0.0.170/32 NAT64/DNS64 discovery', '192.0.0.170', 'reserved'],
    ['192.0.2.0/24 documentation (TEST-NET-1)', '192.0.2.200', 'reserved'],
    ['192.31.196.0/24 AS112-v4', '192.31.196.1', 'reserved'],
    ['192.52.193.0/24 AMT', '192.52.193.1', 'reserved'],
    ['192.88.99.0/24 deprecated 6to4 relay anycast', '192.88.99.1', 'reserved'],
    ['192.168.0.0/16 private-use', '192.168.255.1', 'private'],
    ['192.175.48.0/24 direct delegation AS112', '192.175.48.1', 'reserved'],
    ['198.18.0.0/15 benchmarking', '198.19.255.1', 'reserved'],
    ['198.51.100.0/24 documentation (TEST-NET-2)', '198.51.100.1', 'reserved'],
    ['203.0.113.0/24 documentation (TEST-NET-3)', '203.0.113.1', 'reserved'],
    ['240.0.0.0/4 reserved', '250.1.2.3', 'reserved'],
    ['255.255.255.255/32 limited broadcast', '255.255.255.255', 'reserved'],
    ['224.0.0.0/4 multicast', '239.1.2.3', 'multicast'],
    ['just outside 100.64.0.0/10', '100.128.0.1', 'public'],
    ['just outside 198.18.0.0/15', '198.20.0.1', 'public'],
    // IPv6 Special-Purpose Address Registry
    ['::1/128 loopback', '0:0:0:0:0:0:0:1', 'loopback'],
    ['::/128 unspecified', '0::0', 'unspecified'],
    ['::ffff:0:0/96 IPv4-mapped, loopback', '::ffff:7f00:1', 'loopback'],
    ['::ffff:0:0/96 IPv4-mapped, metadata', '::ffff:a9fe:a9fe', 'link-local'],
    ['::ffff:0:0/96 IPv4-mapped, public', '::ffff:8.8.8.8', 'public'],
    ['64:ff9b::/96 NAT64, metadata', '64:ff9b::a9fe:a9fe', 'link-local'],
    ['64:ff9b::/96 NAT64, loopback', '64:ff9b::7f00:1', 'loopback'],
    ['64:ff9b::/96 NAT64, private', '64:ff9b::10.0.0.1', 'private'],
    ['64:ff9b::/96 NAT64, public', '64:ff9b::808:808', 'public'],
    ['64:ff9b:1::/48 local-use translation', '64:ff9b:1::808:808', 'reserved'],
    ['100::/64 discard-only', '100::1', 'reserved'],
    ['100:0:0:1::/64 dummy prefix', '100:0:0:1::1', 'reserved'],
    ['2001::/23 IETF protocol assignments', '2001:100::1', 'reserved'],
    ['2001::/32 Teredo, public server and client', '2001:0:4136:e378:8000:63bf:f7f7:f7f7', 'reserved'],
    ['2001::/32 Teredo, loopback client', '2001:0:4136:e378:8000:63bf:80ff:fffe', 'loopback'],
    ['2001::/32 Teredo, metadata server', '2001:0:a9fe:a9fe::1', 'link-local'],
    ['2001:1::1/128 PCP anycast', '2001:1::1', 'reserved'],
    ['2001:1::2/128 TURN anycast', '2001:1::2', 'reserved'],
    ['2001:1::3/128 DNS-SD SRP anycast', '2001:1::3', 'reserved'],
    ['2001:2::/48 benchmarking', '2001:2::1', 'reserved'],
    ['2001:3::/32 AMT', '2001:3::1', 'reserved'],
    ['2001:4:112::/48 AS112-v6', '2001:4:112::1', 'reserved'],
    ['2001:10::/28 deprecated ORCHID', '2001:10::1', 'reserved'],
    ['2001:20::/28 ORCHIDv2', '2001:20::1', 'reserved'],
    ['2001:30::/28 DRIP DETs', '2001:30::1', 'reserved'],
    ['2001:db8::/32 documentation', '2001:db8:ffff::1', 'reserved'],
    ['2002::/16 6to4, metadata', '2002:a9fe:a9fe::', 'link-local'],
    ['2002::/16 6to4, loopback', '2002:7f00:1::1', 'loopback'],
    ['2002::/16 6to4, private', '2002:c0a8:101::1', 'private'],
    ['2002::/16 6to4, public', '2002:808:808::1', 'public'],
    ['2620:4f:8000::/48 direct delegation AS112', '2620:4f:8000::1', 'reserved'],
    ['3fff::/20 documentation', '3fff:fff::1', 'reserved'],
    ['5f00::/16 SRv6 SIDs', '5f00::1', 'reserved'],
    ['fc00::/7 unique-local', 'fc00::1', 'private'],
    ['fe80::/10 link-local unicast', 'febf::1', 'link-local'],
    // Deprecated blocks the registry no longer lists, and the rest of the space
    ['fec0::/10 site-local', 'fec0::1', 'private'],
    ['::/96 IPv4-compatible, loopback', '::7f00:1', 'loopback'],
    ['::/96 IPv4-compatible, private', '::10.0.0.1', 'private'],
    ['::/96 IPv4-compatible, public', '::808:808', 'reserved'],
    ['::ffff:0:0:0/96 SIIT, loopback', '::ffff:0:7f00:1', 'loopback'],
    ['::ffff:0:0:0/96 SIIT, public', '::ffff:0:808:808', 'reserved'],
    ['ff00::/8 multicast', 'ff05::2', 'multicast'],
    ['outside 2000::/3, unassigned', '4000::1', 'reserved'],
    ['2000::/3 global unicast', '2606:4700:4700::1111', 'public'],
  ] as const)('%s: %s is %s', (_entry, ip, scope) => {
    expect(addressScope(ip)).toBe(scope);
  });

  it.each([
    // The webhook URLs the security review got accepted in production.
    'https://[64:ff9b::a9fe:a9fe]/',
    'https://[64:ff9b::7f00:1]/',
    'https://[2002:a9fe:a9fe::]/',
    'https://[::7f00:1]/',
    'https://[::ffff:0:7f00:1]/',
    'https://[fec0::1]/',
    'https://[::ffff:127.0.0.1]/',
  ])('refuses %s', async (url) => {
    expect(await nonPublicAddressReason(new URL(url), new Set())).toMatch(/ is a [a-z-]+ address$/);
  });
});

describe('isOwnLoopback', () => {
  it.each([
    ['127.0.0.1', true],
    ['127.9.9.9', true],
    ['::1', true],
    ['::ffff:127.0.0.1', true],
    ['64:ff9b::7f00:1', false],
    ['2002:7f00:1::', false],
    ['::7f00:1', false],
    ['::ffff:0:7f00:1', false],
    ['10.0.0.1', false],
    ['::', false],
  ] as const)('%s: %s', (ip, own) => {
    expect(isOwnLoopback(ip)).toBe(own);
  });
});
