import { describe, expect, it } from 'vitest';
import { addressScope } from '../../src/domain/network-address.ts';
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
