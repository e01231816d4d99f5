// Retries, in one place, for every call the client makes. A request is sent again, unchanged and so
// with the same Idempotency-Key, when refhub did not act on it or acting twice is harmless:
//
// - 408, 429 and 503 answers (refhub turned the request away before doing anything), after the
//   answer's Retry-After when it gives one, else after an exponential backoff with jitter;
// - 409 `idempotency_key_in_use`: the first attempt of this very request is still running;
// - no answer at all (a network error, or an attempt that took longer than `attemptTimeoutMs`), but
//   only for requests that are safe to send twice: reads, the search, and writes that carry an
//   Idempotency-Key (refhub replays the first answer instead of acting again). A PUT, PATCH or DELETE
//   that got no answer is not resent; the caller reads the referral to see whether it changed.
//
// Attempts are bounded, and so is the wait a Retry-After may ask for. Token requests of signed client
// credentials follow the same policy with these helpers (client-credentials.ts), each attempt with a
// new assertion.
import { RefhubNetworkError } from './problems.ts';

export interface RetryPolicy {
  /** Attempts in all, the first included. Default 4. */
  readonly attempts?: number;
  /** First backoff; it doubles per attempt, with jitter. Default 250 ms. */
  readonly baseDelayMs?: number;
  /** Longest backoff, and longest Retry-After honoured (a longer one ends the retries). Default 30 s. */
  readonly maxDelayMs?: number;
  /** How long one attempt may take before it is abandoned. Default 30 s. */
  readonly attemptTimeoutMs?: number;
}

/** What happened to one attempt, for the caller's logs and metrics. Paths only: no query, no body. */
export interface AttemptReport {
  readonly method: string;
  readonly path: string;
  readonly attempt: number;
  /** The answer's status; absent when none came. */
  readonly status?: number;
  /** The answer is a replay of the first request with this Idempotency-Key. */
  readonly replayed: boolean;
  readonly error?: 'timeout' | 'network';
  /** Set when another attempt follows, after this many milliseconds. */
  readonly retryInMs?: number;
}

export type Fetch = (request: Request) => Promise<Response>;

export const RETRY_STATUSES = new Set([408, 429, 503]);

export interface Settings {
  readonly attempts: number;
  readonly baseDelayMs: number;
  readonly maxDelayMs: number;
  readonly attemptTimeoutMs: number;
}

export function settingsOf(policy: RetryPolicy = {}): Settings {
  return {
    attempts: Math.max(1, Math.floor(policy.attempts ?? 4)),
    baseDelayMs: policy.baseDelayMs ?? 250,
    maxDelayMs: policy.maxDelayMs ?? 30_000,
    attemptTimeoutMs: policy.attemptTimeoutMs ?? 30_000,
  };
}

function safeWithoutAnswer(request: Request): boolean {
  if (request.method === 'GET' || request.method === 'HEAD') return true;
  if (request.method !== 'POST') return false;
  return (
    request.headers.has('idempotency-key') || new URL(request.url).pathname.endsWith('/referrals/search')
  );
}

/** Seconds (or an HTTP date) from Retry-After, as milliseconds; undefined when absent or unreadable. */
export function retryAfterMs(response: Response): number | undefined {
  const value = response.headers.get('retry-after');
  if (value === null) return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value) * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}

async function stillRunning(response: Response): Promise<boolean> {
  if (response.status !== 409) return false;
  try {
    const body: unknown = await response.clone().json();
    return (body as { code?: unknown } | null)?.code === 'idempotency_key_in_use';
  } catch {
    return false;
  }
}

export function backoff(settings: Settings, attempt: number): number {
  const ceiling = Math.min(settings.maxDelayMs, settings.baseDelayMs * 2 ** (attempt - 1));
  return Math.round(ceiling / 2 + Math.random() * (ceiling / 2));
}

export function sleep(ms: number, signal: AbortSignal | null): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted === true) {
      reject(signal.reason as Error);
      return;
    }
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason as Error);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** A fetch that retries as described above; `report` hears of every attempt. */
export function retryingFetch(
  base: Fetch,
  policy: RetryPolicy | undefined,
  report: (attempt: AttemptReport) => void,
): Fetch {
  const settings = settingsOf(policy);
  return async (original) => {
    // The body is read once and sent again as it is: a retry is the same request.
    const body = original.body === null ? undefined : await original.arrayBuffer();
    const caller = original.signal;
    const path = new URL(original.url).pathname;
    for (let attempt = 1; ; attempt++) {
      const last = attempt >= settings.attempts;
      const request = new Request(original.url, {
        method: original.method,
        headers: original.headers,
        body,
        redirect: original.redirect,
        signal: AbortSignal.any([caller, AbortSignal.timeout(settings.attemptTimeoutMs)]),
      });
      let response: Response;
      try {
        response = await base(request);
      } catch (error) {
        if (caller.aborted) throw error;
        const reason = (error as { name?: unknown } | null)?.name === 'TimeoutError' ? 'timeout' : 'network';
        if (last || !safeWithoutAnswer(original)) {
          report({ method: original.method, path, attempt, replayed: false, error: reason });
          throw new RefhubNetworkError(reason, attempt, error);
        }
        const delay = backoff(settings, attempt);
        report({ method: original.method, path, attempt, replayed: false, error: reason, retryInMs: delay });
        await sleep(delay, caller);
        continue;
      }
      const replayed = response.headers.get('idempotent-replayed') === 'true';
      const retryable =
        RETRY_STATUSES.has(response.status) ||
        (original.headers.has('idempotency-key') && (await stillRunning(response)));
      const asked = retryable ? retryAfterMs(response) : undefined;
      if (!retryable || last || (asked !== undefined && asked > settings.maxDelayMs)) {
        report({ method: original.method, path, attempt, status: response.status, replayed });
        return response;
      }
      const delay = asked ?? backoff(settings, attempt);
      report({ method: original.method, path, attempt, status: response.status, replayed, retryInMs: delay });
      await response.body?.cancel();
      await sleep(delay, caller);
    }
  };
}
