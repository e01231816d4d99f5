// Failed authentication (a wrong API key, an unknown one-time link token, a failed ops sign-in),
// counted per client address in a fixed window. Past the limit, a client's failed attempts are
// answered 429 and are no longer audited, so a guessing script cannot flood the audit trail or the
// store. Valid credentials still get in: keys and tokens carry 256 random bits, so guessing is
// hopeless anyway, and behind a load balancer many people share one address, which a hard lockout
// would shut out together. Counts live in this process's memory; each API process keeps its own.
import type { Clock } from '../domain/clock.ts';

/** The limit on failed authentication from one address: API keys, link tokens and ops sign-ins. */
export const FAILED_AUTHENTICATION = { max: 10, windowMs: 10 * 60_000 } as const;

export interface FailureLimiter {
  /** Records a failed attempt; returns the seconds until the client may fail again unnoticed, or undefined while it is under the limit. */
  fail(client: string): number | undefined;
}

export interface FailureLimiterOptions {
  readonly clock: Clock;
  /** Failed attempts a client may make per window before it is limited. */
  readonly max: number;
  readonly windowMs: number;
  /** Clients tracked at most; the oldest windows are dropped first. */
  readonly maxClients?: number;
}

interface Window {
  readonly startedAt: number;
  count: number;
}

export function createFailureLimiter(options: FailureLimiterOptions): FailureLimiter {
  const windows = new Map<string, Window>();
  const maxClients = options.maxClients ?? 10_000;

  const makeRoom = (now: number) => {
    for (const [client, window] of windows) {
      if (now - window.startedAt >= options.windowMs) windows.delete(client);
    }
    // Maps iterate in insertion order: what is left first is the oldest window.
    for (const client of windows.keys()) {
      if (windows.size < maxClients) break;
      windows.delete(client);
    }
  };

  return {
    fail(client) {
      const now = options.clock.now().getTime();
      let window = windows.get(client);
      if (window === undefined || now - window.startedAt >= options.windowMs) {
        windows.delete(client);
        if (windows.size >= maxClients) makeRoom(now);
        window = { startedAt: now, count: 0 };
        windows.set(client, window);
      }
      window.count += 1;
      if (window.count <= options.max) return undefined;
      return Math.max(1, Math.ceil((window.startedAt + options.windowMs - now) / 1000));
    },
  };
}
