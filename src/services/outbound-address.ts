// Where refhub may send, checked against what a host resolves to. Which addresses are public is a
// pure rule (domain/network-address.ts); this module does the DNS lookups that feed it: the check of
// EHR_URL before the first form is sent, the check of a webhook URL when a subscription is made or
// changed, and the lookup a webhook delivery's socket connects through, which checks again each time
// (a host that was public when it was checked may later resolve to a private address: DNS rebinding).
// The socket connects to the addresses that lookup checked, never to a second answer from DNS.
//
// Webhooks outside production also take loopback addresses, so a developer's receiver on their own
// machine works without configuration; private, link-local (the metadata service) and every other
// non-public address need an operator's allowance in every mode, or any API key could make refhub
// probe the network it runs in.
import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns';
import { lookup as dnsLookupAll } from 'node:dns/promises';
import { ConfigError, type Config } from '../config.ts';
import { addressScope, ipFamily, isOwnLoopback, type AddressScope } from '../domain/network-address.ts';

/** Every address a host resolves to. A seam: tests name the addresses instead of asking DNS. */
export type HostLookup = (host: string) => Promise<readonly string[]>;

/** The system's resolver, every address in the order it gives them. */
export const systemLookup: HostLookup = async (host) =>
  (await dnsLookupAll(host, { all: true, order: 'verbatim' })).map((entry) => entry.address);

/** A URL's host without the brackets of an IPv6 literal. */
function hostOf(url: URL): string {
  return url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
}

export interface AddressLeeway {
  /** Loopback addresses pass too (webhooks outside production). */
  readonly loopback?: boolean;
  /** A host that does not resolve passes (outside production: the connection checks it again). */
  readonly unresolved?: boolean;
}

/** Whether an address may be sent to without an operator's allowance. */
export function addressPasses(address: string, leeway: Pick<AddressLeeway, 'loopback'>): boolean {
  return scopePasses(addressScope(address), address, leeway);
}

function scopePasses(scope: AddressScope, address: string, leeway: Pick<AddressLeeway, 'loopback'>) {
  return scope === 'public' || (leeway.loopback === true && isOwnLoopback(address));
}

/**
 * Why a URL must not be sent to, or null when it may: every address its host resolves to is public
 * (or loopback, with that leeway), or the host (or that address) is named in `allowed`. The reason
 * names the address and its scope, never anything else of the URL.
 */
export async function nonPublicAddressReason(
  url: URL,
  allowed: ReadonlySet<string>,
  lookup: HostLookup = systemLookup,
  leeway: AddressLeeway = {},
): Promise<string | null> {
  const host = hostOf(url).toLowerCase();
  if (allowed.has(host)) return null;
  let addresses: readonly string[];
  if (ipFamily(host) !== 0) addresses = [host];
  else {
    try {
      addresses = await lookup(host);
    } catch {
      return leeway.unresolved === true ? null : `its host ${host} does not resolve`;
    }
  }
  for (const address of addresses) {
    const scope = addressScope(address);
    if (!scopePasses(scope, address, leeway) && !allowed.has(address.toLowerCase())) {
      return address === host
        ? `${address} is a ${scope} address`
        : `its host ${host} resolves to ${address}, a ${scope} address`;
    }
  }
  return null;
}

/**
 * In production, refuses an EHR_URL whose host is, or resolves to, a loopback, private, link-local or
 * otherwise non-public address, unless EHR_ALLOWED_ADDRESSES names it: a typo or a hostile setting
 * must not send patients' forms to refhub itself or into the network it runs in. Run where forms are
 * sent, before the first one. (Not in config.ts, which only reads the environment: this asks DNS.)
 */
export async function checkEhrAddress(config: Config, lookup?: HostLookup): Promise<void> {
  if (config.env !== 'production' || config.ehrUrl === undefined) return;
  const reason = await nonPublicAddressReason(new URL(config.ehrUrl), config.ehrAllowedAddresses, lookup);
  if (reason !== null) {
    throw new ConfigError(
      'EHR_URL',
      `must reach a public address in production: ${reason}. If the EHR really sits there, name ` +
        'that host or address in EHR_ALLOWED_ADDRESSES',
    );
  }
}

type LookupCallback = (
  error: NodeJS.ErrnoException | null,
  address: string | LookupAddress[],
  family?: number,
) => void;

/**
 * dns.lookup for a socket to connect through, refusing with `refused()` any host that resolves to an
 * address that is not public (or loopback, with that leeway), unless the host or that address is in
 * `allowed`. The socket connects to the addresses this hands back, which are the ones it checked.
 */
export function publicOnlyLookup(
  allowed: ReadonlySet<string>,
  refused: () => Error,
  leeway: Pick<AddressLeeway, 'loopback'> = {},
) {
  return (hostname: string, options: LookupOptions, callback: LookupCallback) => {
    dnsLookup(hostname, { ...options, all: true }, (error, addresses) => {
      if (error) {
        callback(error, []);
        return;
      }
      const hostAllowed = allowed.has(hostname.toLowerCase());
      const refuse = addresses.some(
        (a) => !hostAllowed && !addressPasses(a.address, leeway) && !allowed.has(a.address.toLowerCase()),
      );
      const first = addresses[0];
      if (refuse || first === undefined) {
        callback(refused(), []);
        return;
      }
      if (options.all === true) callback(null, addresses);
      else callback(null, first.address, first.family);
    });
  };
}
