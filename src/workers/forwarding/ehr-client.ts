// The one way refhub talks to the EHR: a dedicated undici Agent with explicit connect, header and
// body timeouts, one overall deadline per attempt, a cap on the response size, and no redirects (undici follows none unless told to; a
// 3xx is answered like any other 4xx-class refusal). The caller hands over the exact request bytes;
// this module adds the headers of contract §7 and reports what happened, never throwing for an
// answer the EHR gave. Response bodies are always read to the end (or the cap), so sockets are reused.
//
// The per-phase timeouts restart with every byte, so an EHR that trickles its answer could hold an
// attempt (and a worker slot) indefinitely. The overall deadline ends the attempt, whatever phase it
// is in, as a timeout: the forwarder retries it like any other, and the EHR deduplicates the retry on
// its message ID. An answer whose body is cut off or over the cap is still judged by its status.
import { Agent, request } from 'undici';
import { contentDigest } from '../../domain/forwarding/content-digest.ts';

export interface EhrClientOptions {
  readonly url: string;
  readonly token: string | undefined;
  readonly connectTimeoutMs?: number;
  readonly headersTimeoutMs?: number;
  readonly bodyTimeoutMs?: number;
  readonly maxResponseBytes?: number;
  /** The whole attempt, from connecting to the last byte of the answer. */
  readonly attemptTimeoutMs?: number;
}

export type EhrAnswer =
  | {
      readonly kind: 'response';
      readonly status: number;
      /** The EHR's reference for the delivery, from a 2xx JSON answer. */
      readonly reference: string | null;
      /** From Retry-After, in milliseconds. */
      readonly retryAfterMs: number | undefined;
    }
  | { readonly kind: 'network-error'; readonly code: string };

export interface EhrClient {
  readonly url: string;
  /** POSTs `body` (JSON bytes) with `Idempotency-Key: messageId` and a Content-Digest over it. */
  send(body: Uint8Array, messageId: string): Promise<EhrAnswer>;
  close(): Promise<void>;
}

export const EHR_TIMEOUTS = {
  connectTimeoutMs: 5_000,
  headersTimeoutMs: 30_000,
  bodyTimeoutMs: 30_000,
  maxResponseBytes: 64 * 1024,
  attemptTimeoutMs: 30_000,
} as const;

/** The network error code of an attempt that reached its overall deadline. */
export const ATTEMPT_TIMEOUT = 'EHR_ATTEMPT_TIMEOUT';

export function createEhrClient(options: EhrClientOptions): EhrClient {
  const limits = { ...EHR_TIMEOUTS, ...definedOnly(options) };
  const agent = new Agent({
    connect: { timeout: limits.connectTimeoutMs },
    headersTimeout: limits.headersTimeoutMs,
    bodyTimeout: limits.bodyTimeoutMs,
    maxResponseSize: limits.maxResponseBytes,
    keepAliveTimeout: 10_000,
  });

  return {
    url: options.url,

    async send(body, messageId) {
      const deadline = AbortSignal.timeout(limits.attemptTimeoutMs);
      try {
        const response = await request(options.url, {
          method: 'POST',
          dispatcher: agent,
          signal: deadline,
          body,
          headers: {
            'content-type': 'application/json',
            accept: 'application/json',
            'idempotency-key': messageId,
            'content-digest': contentDigest(body),
            ...(options.token === undefined ? {} : { authorization: `Bearer ${options.token}` }),
          },
        });
        // The status is the answer; the body only carries the reference. One over the cap, or cut
        // off, does not turn an accepted delivery into a failure.
        let text = '';
        try {
          text = await response.body.text();
        } catch {
          if (deadline.aborted) return { kind: 'network-error', code: ATTEMPT_TIMEOUT };
          text = '';
        }
        return {
          kind: 'response',
          status: response.statusCode,
          reference: response.statusCode < 300 ? referenceIn(text) : null,
          retryAfterMs: retryAfterMs(response.headers['retry-after'], Date.now()),
        };
      } catch (error) {
        return { kind: 'network-error', code: deadline.aborted ? ATTEMPT_TIMEOUT : errorCode(error) };
      }
    },

    close: () => agent.close(),
  };
}

function definedOnly(options: EhrClientOptions): Partial<typeof EHR_TIMEOUTS> {
  return Object.fromEntries(Object.entries(options).filter(([k, v]) => k in EHR_TIMEOUTS && v !== undefined));
}

function referenceIn(text: string): string | null {
  try {
    const parsed: unknown = JSON.parse(text);
    if (typeof parsed === 'object' && parsed !== null && 'reference' in parsed) {
      const ref = parsed.reference;
      if (typeof ref === 'string' && /^[\x21-\x7e]{1,200}$/.test(ref)) return ref;
    }
  } catch {
    // A 2xx without a JSON body is still an accepted delivery.
  }
  return null;
}

/** Retry-After as delay-seconds or an HTTP date (RFC 9110 §10.2.3); anything else is ignored. */
export function retryAfterMs(header: string | string[] | undefined, now: number): number | undefined {
  const value = Array.isArray(header) ? header[0] : header;
  if (value === undefined) return undefined;
  if (/^\s*\d+\s*$/.test(value)) return Number(value.trim()) * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

/** A stable code for the ledger: undici's (UND_ERR_…), or the system's (ECONNREFUSED, …). */
function errorCode(error: unknown): string {
  for (let e: unknown = error; typeof e === 'object' && e !== null; e = (e as { cause?: unknown }).cause) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && /^[A-Z0-9_]{2,64}$/.test(code)) return code;
  }
  return 'NETWORK_ERROR';
}
