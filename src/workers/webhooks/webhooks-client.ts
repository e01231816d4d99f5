// The one way refhub sends webhook deliveries: a dedicated undici Agent with explicit connect, header
// and body timeouts, one overall deadline per attempt, no redirects (undici follows none unless told
// to), and a small cap in bytes and time on what it reads of the answer. Only the status matters: a
// short body that comes with it is drained and dropped, so the socket is reused; anything longer or
// slower is cut off and its connection closed, so a receiver that answers and then trickles its body
// cannot hold the attempt, and a delivery slot, until the deadline. It never throws for an answer a
// receiver gave.
//
// Every address a receiver's host resolves to is checked again as the socket connects, and the socket
// connects to the addresses checked, so a host that passed the check when the subscription was made
// cannot later be pointed at a private address (DNS rebinding). Public addresses pass, loopback ones
// too outside production, and any address (or host) named in WEBHOOK_ALLOWED_ADDRESSES.
import { Agent, request } from 'undici';
import { ipFamily } from '../../domain/network-address.ts';
import { addressPasses, publicOnlyLookup } from '../../services/outbound-address.ts';
import { VERSION } from '../../version.ts';

export interface WebhookClientOptions {
  /** The whole attempt, from connecting to the last byte read of the answer. */
  readonly attemptTimeoutMs: number;
  /** Loopback addresses pass as well as public ones (outside production). */
  readonly loopback: boolean;
  /** Hosts and addresses that pass whatever their scope. */
  readonly allowed: ReadonlySet<string>;
  /** What is read of an answer's body after its status, in bytes and in time, before it is cut off. */
  readonly maxResponseBytes?: number;
  readonly maxResponseMs?: number;
}

export interface WebhookPost {
  readonly url: string;
  readonly body: string;
  readonly headers: Readonly<Record<string, string>>;
}

export type WebhookAnswer =
  | { readonly kind: 'response'; readonly status: number }
  | { readonly kind: 'network-error'; readonly code: string };

export interface WebhookClient {
  post(message: WebhookPost): Promise<WebhookAnswer>;
  close(): Promise<void>;
}

/** The error code of an attempt that reached its overall deadline. */
export const WEBHOOK_TIMEOUT = 'WEBHOOK_ATTEMPT_TIMEOUT';
/** The error code of a connection refused because the receiver's address is not public. */
export const NON_PUBLIC_ADDRESS = 'WEBHOOK_ADDRESS_NOT_PUBLIC';

/** Who is calling, for a receiver's logs and filters: refhub and its version. */
export const WEBHOOK_USER_AGENT = `refhub/${VERSION} (webhooks)`;

const notPublic = () =>
  Object.assign(new Error('the receiver’s address is not public'), { code: NON_PUBLIC_ADDRESS });

export function createWebhookClient(options: WebhookClientOptions): WebhookClient {
  const timeoutMs = options.attemptTimeoutMs;
  const maxResponseBytes = options.maxResponseBytes ?? 1024;
  const maxResponseMs = Math.min(options.maxResponseMs ?? 500, timeoutMs);
  const agent = new Agent({
    connect: {
      timeout: Math.min(timeoutMs, 10_000),
      lookup: publicOnlyLookup(options.allowed, notPublic, { loopback: options.loopback }),
    },
    headersTimeout: timeoutMs,
    bodyTimeout: timeoutMs,
    keepAliveTimeout: 10_000,
  });

  return {
    async post(message) {
      // An IP literal is connected to without a lookup: check it here.
      const host = new URL(message.url).hostname.replace(/^\[(.*)\]$/, '$1').toLowerCase();
      if (ipFamily(host) !== 0 && !options.allowed.has(host) && !addressPasses(host, options)) {
        return { kind: 'network-error', code: NON_PUBLIC_ADDRESS };
      }
      const deadline = AbortSignal.timeout(timeoutMs);
      try {
        const response = await request(message.url, {
          method: 'POST',
          dispatcher: agent,
          signal: deadline,
          body: message.body,
          headers: {
            'content-type': 'application/json',
            'user-agent': WEBHOOK_USER_AGENT,
            ...message.headers,
          },
        });
        try {
          await response.body.dump({
            limit: maxResponseBytes,
            signal: AbortSignal.any([deadline, AbortSignal.timeout(maxResponseMs)]),
          });
        } catch {
          // The status is the answer; a body cut off or too long does not change it.
        }
        return { kind: 'response', status: response.statusCode };
      } catch (error) {
        return { kind: 'network-error', code: deadline.aborted ? WEBHOOK_TIMEOUT : errorCode(error) };
      }
    },
    close: () => agent.close(),
  };
}

/** A stable code: undici's (UND_ERR_…), the system's (ECONNREFUSED, …), or ours. */
function errorCode(error: unknown): string {
  for (let e: unknown = error; typeof e === 'object' && e !== null; e = (e as { cause?: unknown }).cause) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && /^[A-Z0-9_]{2,64}$/.test(code)) return code;
  }
  return 'NETWORK_ERROR';
}
