// Which addresses refhub may send to. Forms and events leave for addresses that operators and
// institutions configure; those must be public, so that a mistyped or hostile URL cannot point
// refhub's requests at itself, the cloud metadata service or the private network it runs in. A
// national EHR or a receiver may sit on a private link, so an operator can allow one address (or host
// name) by naming it.
//
// One classifier for every caller, built from IANA's two special-purpose address registries (IPv4 and
// IPv6) and the deprecated blocks they dropped (site-local, IPv4-compatible, SIIT). An IPv6 address that
// carries an IPv4 address (mapped, NAT64 64:ff9b::/96, 6to4 2002::/16) reaches that IPv4 address, so it
// is judged by it: otherwise `[64:ff9b::a9fe:a9fe]` would be a public way to the metadata service.
// Every other special-purpose block is refused, even where the registry calls it globally reachable
// (anycast for PCP, TURN, AMT, AS112; ORCHID and DRIP identifiers): none of them is a place a form or
// an event is meant to go.
//
// Only the classification of an address is here, as pure code: node:net's `BlockList` and `isIP`
// parse addresses and open no socket. Resolving a host to its addresses is I/O and lives with the code
// that sends (services/outbound-address.ts).
import { BlockList, isIP } from 'node:net';

export type AddressScope =
  'public' | 'loopback' | 'private' | 'link-local' | 'unspecified' | 'multicast' | 'reserved';

type Refused = Exclude<AddressScope, 'public'>;

function ranges(list: readonly (readonly [string, number])[]): BlockList {
  const block = new BlockList();
  for (const [network, prefix] of list)
    block.addSubnet(network, prefix, isIP(network) === 6 ? 'ipv6' : 'ipv4');
  return block;
}

// IANA IPv4 Special-Purpose Address Registry, and multicast, grouped by why refhub refuses them.
const IPV4: readonly (readonly [Refused, BlockList])[] = [
  ['unspecified', ranges([['0.0.0.0', 8]])], // "this network"
  ['loopback', ranges([['127.0.0.0', 8]])],
  [
    'private',
    ranges([
      ['10.0.0.0', 8],
      ['172.16.0.0', 12],
      ['192.168.0.0', 16],
      ['100.64.0.0', 10], // shared address space (carrier-grade NAT)
    ]),
  ],
  ['link-local', ranges([['169.254.0.0', 16]])], // among them the cloud metadata service
  ['multicast', ranges([['224.0.0.0', 4]])],
  [
    'reserved',
    ranges([
      ['192.0.0.0', 24], // IETF protocol assignments (DS-Lite, PCP and TURN anycast, NAT64 discovery)
      ['192.0.2.0', 24], // documentation
      ['192.31.196.0', 24], // AS112-v4
      ['192.52.193.0', 24], // AMT
      ['192.88.99.0', 24], // deprecated 6to4 relay anycast
      ['192.175.48.0', 24], // direct delegation AS112 service
      ['198.18.0.0', 15], // benchmarking
      ['198.51.100.0', 24], // documentation
      ['203.0.113.0', 24], // documentation
      ['240.0.0.0', 4], // future use, and the limited broadcast address
    ]),
  ],
];

// IANA IPv6 Special-Purpose Address Registry and the blocks of the IPv6 address space that are not
// global unicast. The forms that carry an IPv4 address are judged before these (see `carriedIpv4`).
const IPV6: readonly (readonly [Refused, BlockList])[] = [
  ['unspecified', ranges([['::', 128]])],
  ['loopback', ranges([['::1', 128]])],
  [
    'private',
    ranges([
      ['fc00::', 7], // unique local
      ['fec0::', 10], // site-local, deprecated (RFC 3879) but still routed inside some networks
    ]),
  ],
  ['link-local', ranges([['fe80::', 10]])],
  ['multicast', ranges([['ff00::', 8]])],
  [
    'reserved',
    ranges([
      ['64:ff9b:1::', 48], // local-use IPv4/IPv6 translation: where the IPv4 sits is the network's choice
      ['100::', 64], // discard-only
      ['100:0:0:1::', 64], // dummy IPv6 prefix
      ['2001::', 23], // IETF protocol assignments: Teredo, PCP/TURN/DNS-SD anycast, AMT, AS112, ORCHID, DRIP
      ['2001:db8::', 32], // documentation
      ['2620:4f:8000::', 48], // direct delegation AS112 service
      ['3fff::', 20], // documentation
      ['5f00::', 16], // segment routing (SRv6) SIDs
    ]),
  ],
];

/** Global unicast: every public IPv6 address is in it; the rest of the space is unassigned or special. */
const GLOBAL_UNICAST = ranges([['2000::', 3]]);

/** The eight 16-bit groups of an IPv6 address that `isIP` accepted (a zone index is dropped). */
function groups(ip: string): number[] {
  let text = ip.replace(/%.*$/, '');
  const dotted = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (dotted) {
    const [a, b, c, d] = dotted.slice(1).map(Number) as [number, number, number, number];
    text = `${text.slice(0, dotted.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head = '', tail] = text.split('::');
  const parse = (part: string) => (part === '' ? [] : part.split(':').map((g) => parseInt(g, 16)));
  const first = parse(head);
  const last = tail === undefined ? [] : parse(tail);
  return [...first, ...Array<number>(8 - first.length - last.length).fill(0), ...last];
}

function ipv4Of(high: number, low: number): string {
  return [high >> 8, high & 0xff, low >> 8, low & 0xff].join('.');
}

/**
 * The IPv4 address an IPv6 address carries, and whether reaching the IPv6 address reaches it (mapped,
 * NAT64's well-known prefix, 6to4: judged by the IPv4 address) or the form is obsolete (IPv4-compatible,
 * SIIT, Teredo: refused, and named by the IPv4 address's scope when that is not public).
 */
function carriedIpv4(g: readonly number[]): { readonly ipv4: string; readonly reaches: boolean } | null {
  const [g0, g1, g2, g3, g4, g5, g6 = 0, g7 = 0] = g;
  const zeroTo = (n: number) => g.slice(0, n).every((x) => x === 0);
  if (zeroTo(5) && g5 === 0xffff) return { ipv4: ipv4Of(g6, g7), reaches: true }; // ::ffff:0:0/96
  if (g0 === 0x64 && g1 === 0xff9b && g2 === 0 && g3 === 0 && g4 === 0 && g5 === 0)
    return { ipv4: ipv4Of(g6, g7), reaches: true }; // 64:ff9b::/96
  if (g0 === 0x2002) return { ipv4: ipv4Of(g1 ?? 0, g2 ?? 0), reaches: true }; // 2002::/16
  if (zeroTo(4) && g4 === 0xffff && g5 === 0) return { ipv4: ipv4Of(g6, g7), reaches: false }; // SIIT
  if (zeroTo(6) && (g6 !== 0 || g7 > 1)) return { ipv4: ipv4Of(g6, g7), reaches: false }; // ::/96
  if (g0 === 0x2001 && g1 === 0) {
    // Teredo 2001::/32: the server's IPv4 address, then the client's, stored inverted.
    const server = ipv4Scope(ipv4Of(g2 ?? 0, g3 ?? 0));
    const client = ipv4Of(~g6 & 0xffff, ~g7 & 0xffff);
    return { ipv4: server === 'public' ? client : ipv4Of(g2 ?? 0, g3 ?? 0), reaches: false };
  }
  return null;
}

function ipv4Scope(ip: string): AddressScope {
  for (const [scope, block] of IPV4) if (block.check(ip, 'ipv4')) return scope;
  return 'public';
}

function ipv6Scope(ip: string): AddressScope {
  const address = ip.replace(/%.*$/, '');
  const carried = carriedIpv4(groups(address));
  if (carried !== null) {
    const scope = ipv4Scope(carried.ipv4);
    return carried.reaches || scope !== 'public' ? scope : 'reserved';
  }
  for (const [scope, block] of IPV6) if (block.check(address, 'ipv6')) return scope;
  return GLOBAL_UNICAST.check(address, 'ipv6') ? 'public' : 'reserved';
}

/**
 * The scope of one IP address, IPv4 or IPv6. An IPv6 address that carries an IPv4 address is judged
 * by that address where reaching one reaches the other, and is otherwise refused.
 */
export function addressScope(ip: string): AddressScope {
  const family = isIP(ip);
  if (family === 0) throw new TypeError('not an IP address');
  return family === 4 ? ipv4Scope(ip) : ipv6Scope(ip);
}

/**
 * Whether an address is this machine's own loopback: 127.0.0.0/8, ::1, or 127.0.0.0/8 mapped into
 * IPv6. A loopback address carried by NAT64, 6to4 or an obsolete form is not: it leaves the machine
 * for a gateway, whose own loopback it would reach.
 */
export function isOwnLoopback(ip: string): boolean {
  const family = isIP(ip);
  if (family === 0) throw new TypeError('not an IP address');
  if (family === 4) return ipv4Scope(ip) === 'loopback';
  const g = groups(ip);
  const zeroTo = (n: number) => g.slice(0, n).every((x) => x === 0);
  if (zeroTo(5) && g[5] === 0xffff) return ipv4Scope(ipv4Of(g[6] ?? 0, g[7] ?? 0)) === 'loopback';
  return zeroTo(7) && g[7] === 1;
}

/** 4 for an IPv4 address, 6 for an IPv6 one, 0 for anything else. */
export function ipFamily(text: string): 0 | 4 | 6 {
  return isIP(text) as 0 | 4 | 6;
}
