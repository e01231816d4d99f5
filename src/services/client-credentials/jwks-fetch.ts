// Fetches a client's JWKS from the URL it registered, with the outbound rules of webhooks: `https`
// (plain `http` only outside production), a host whose every address is public (loopback too outside
// production, and whatever WEBHOOK_ALLOWED_ADDRESSES names), checked again as the socket connects,
// no redirects, a deadline, and a cap on the answer's size. The keys are public; what this guards is
// refhub's own network, which a registered URL must not be able to probe.
import { Agent, request } from 'undici';
import { ipFamily } from '../../domain/network-address.ts';
import { addressPasses, publicOnlyLookup } from '../outbound-address.ts';
import type { JwksFetcher } from './client-credentials.service.ts';

export interface JwksFetchOptions {
  readonly production: boolean;
  readonly allowed: ReadonlySet<string>;
  readonly timeoutMs?: number;
  readonly maxBytes?: number;
}

const notPublic = () => new Error('its address is not public');

export function createJwksFetcher(options: JwksFetchOptions): JwksFetcher & { close(): Promise<void> } {
  const timeoutMs = options.timeoutMs ?? 5_000;
  const maxBytes = options.maxBytes ?? 64 * 1024;
  const leeway = { loopback: !options.production };
  const agent = new Agent({
    connect: { timeout: timeoutMs, lookup: publicOnlyLookup(options.allowed, notPublic, leeway) },
    headersTimeout: timeoutMs,
    bodyTimeout: timeoutMs,
  });
  const fetchJwks = async (raw: string): Promise<unknown> => {
    const url = new URL(raw);
    if (url.protocol !== 'https:' && (options.production || url.protocol !== 'http:'))
      throw new Error(`the JWKS URL must use https`);
    // An IP literal is connected to without a lookup: check it here.
    const host = url.hostname.replace(/^\[(.*)\]$/, '$1').toLowerCase();
    if (ipFamily(host) !== 0 && !options.allowed.has(host) && !addressPasses(host, leeway)) throw notPublic();
    const response = await request(url, {
      method: 'GET',
      dispatcher: agent,
      signal: AbortSignal.timeout(timeoutMs),
      headers: { accept: 'application/json, application/jwk-set+json' },
    });
    if (response.statusCode !== 200) {
      await response.body.dump();
      throw new Error(`the JWKS URL answered ${response.statusCode}`);
    }
    const pieces: Buffer[] = [];
    let size = 0;
    for await (const piece of response.body) {
      size += (piece as Buffer).length;
      if (size > maxBytes) {
        response.body.destroy();
        throw new Error(`the JWKS is larger than ${maxBytes} bytes`);
      }
      pieces.push(piece as Buffer);
    }
    try {
      return JSON.parse(Buffer.concat(pieces).toString('utf8')) as unknown;
    } catch {
      throw new Error('the JWKS URL did not answer JSON');
    }
  };
  return Object.assign(fetchJwks, { close: () => agent.close() });
}
