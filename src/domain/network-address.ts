// Which addresses a production refhub may send to. Forms and events leave for addresses that
// operators and institutions configure; in production those must be public, so that a mistyped or
// hostile URL cannot point refhub's requests at itself, the cloud metadata service or the private
// network it runs in. A national EHR may sit on a private link, so an operator can allow one address
// (or host name) by naming it.
//
// Only the classification of an address is here, as pure code: node:net's `BlockList` and `isIP`
// parse addresses and open no socket. Resolving a host to its addresses is I/O and lives with the code
// that sends (services/outbound-address.ts).
import { BlockList, isIP } from 'node:net';

export type AddressScope =
  'public' | 'loopback' | 'private' | 'link-local' | 'unspecified' | 'multicast' | 'reserved';

function ranges(list: readonly (readonly [string, number])[]): BlockList {
  const block = new BlockList();
  for (const [network, prefix] of list)
    block.addSubnet(network, prefix, isIP(network) === 6 ? 'ipv6' : 'ipv4');
  return block;
}

// IANA's special-purpose registries (RFC 6890 and successors), grouped by why refhub refuses them.
const SCOPES: readonly (readonly [Exclude<AddressScope, 'public'>, BlockList])[] = [
  [
    'unspecified',
    ranges([
      ['0.0.0.0', 8],
      ['::', 128],
    ]),
  ],
  [
    'loopback',
    ranges([
      ['127.0.0.0', 8],
      ['::1', 128],
    ]),
  ],
  [
    'private',
    ranges([
      ['10.0.0.0', 8],
      ['172.16.0.0', 12],
      ['192.168.0.0', 16],
      ['100.64.0.0', 10], // shared address space (carrier-grade NAT)
      ['fc00::', 7], // unique local
    ]),
  ],
  [
    'link-local',
    ranges([
      ['169.254.0.0', 16],
      ['fe80::', 10],
    ]),
  ],
  [
    'multicast',
    ranges([
      ['224.0.0.0', 4],
      ['ff00::', 8],
    ]),
  ],
  [
    'reserved',
    ranges([
      ['192.0.0.0', 24], // IETF protocol assignments
      ['192.0.2.0', 24], // documentation
      ['198.18.0.0', 15], // benchmarking
      ['198.51.100.0', 24], // documentation
      ['203.0.113.0', 24], // documentation
      ['240.0.0.0', 4], // future use, and the broadcast address
      ['64:ff9b:1::', 48], // local-use IPv4/IPv6 translation
      ['100::', 64], // discard
      ['2001:db8::', 32], // documentation
    ]),
  ],
];

const MAPPED_V4 = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i;

/** The scope of one IP address (IPv4, IPv6, or IPv4 mapped into IPv6). */
export function addressScope(ip: string): AddressScope {
  const mapped = MAPPED_V4.exec(ip)?.[1];
  const address = mapped ?? ip;
  const family = isIP(address);
  if (family === 0) throw new TypeError('not an IP address');
  const type = family === 6 ? 'ipv6' : 'ipv4';
  for (const [scope, block] of SCOPES) if (block.check(address, type)) return scope;
  return 'public';
}

/** 4 for an IPv4 address, 6 for an IPv6 one, 0 for anything else. */
export function ipFamily(text: string): 0 | 4 | 6 {
  return isIP(text) as 0 | 4 | 6;
}
