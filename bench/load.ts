// HTTP load with autocannon, measured the same way for refhub and for its baseline: a fixed number of
// connections for a fixed time, the server's RSS sampled throughout. A response that is not 2xx
// counts as an error, so a run that got its numbers by failing fast is visible in the table.
import autocannon from 'autocannon';
import type { Measurement } from './stats.ts';
import { sampleRss, type Service } from './processes.ts';

export interface HttpLoad {
  readonly service: Service;
  readonly connections: number;
  readonly seconds: number;
  /** Sent with every request (the API key, the content type). */
  readonly headers?: Readonly<Record<string, string>>;
  /** The sequence each connection repeats; see autocannon's `requests`. */
  readonly requests: autocannon.Request[];
}

/** Runs the load and returns what it measured; latencies in ms, rate in requests per second. */
export async function measureHttp(load: HttpLoad): Promise<Measurement> {
  const rss = sampleRss(load.service);
  const result = await autocannon({
    url: load.service.address,
    connections: load.connections,
    duration: load.seconds,
    headers: { ...load.headers },
    requests: load.requests,
    // A request that takes this long is an error in the table, not a hang of the whole run.
    timeout: 30,
  });
  return {
    rate: result.requests.average,
    p50: result.latency.p50,
    tail: result.latency.p99,
    rssMiB: rss.stop(),
    errors: result.non2xx + result.errors + result.timeouts,
    errorStatuses: {
      ...Object.fromEntries(
        Object.entries(result.statusCodeStats as Record<string, { count: number }>)
          .filter(([status]) => !status.startsWith('2'))
          .map(([status, { count }]) => [status, count]),
      ),
      ...(result.errors > 0 ? { 'connection error': result.errors } : {}),
      ...(result.timeouts > 0 ? { timeout: result.timeouts } : {}),
    },
  };
}

/** Per-connection state of a request sequence (autocannon hands each connection its own object). */
export type ConnectionContext = Record<string, unknown>;

/** A GET of whatever path `next` gives, a new one for every request. */
export function getEach(next: () => string): autocannon.Request {
  return { method: 'GET', setupRequest: (request) => ({ ...request, path: next() }) };
}

export function jsonHeaders(key?: string): Record<string, string> {
  return {
    'content-type': 'application/json',
    ...(key === undefined ? {} : { authorization: `ApiKey ${key}` }),
  };
}
