// An HTTP client for a `refhub api` process, as a clinic system's would be: explicit timeouts, every
// body read to the end, and a network failure reported as an outcome (with its code) rather than
// thrown, because fault tests count failures as much as answers.
import { Agent, request } from 'undici';

const CONNECT_TIMEOUT_MS = 2_000;
const ANSWER_TIMEOUT_MS = 15_000;

export type ApiOutcome =
  | {
      readonly kind: 'answer';
      readonly status: number;
      readonly headers: Readonly<Record<string, string | string[] | undefined>>;
      readonly body: string;
      readonly at: number;
    }
  | { readonly kind: 'network-error'; readonly code: string; readonly at: number };

export interface RefhubClient {
  send(
    base: string,
    method: 'GET' | 'POST',
    path: string,
    options?: { body?: Record<string, unknown>; headers?: Record<string, string> },
  ): Promise<ApiOutcome>;
  close(): Promise<void>;
}

/** The JSON of an answer, or undefined when it is none. */
export function jsonOf(outcome: ApiOutcome): unknown {
  if (outcome.kind !== 'answer') return undefined;
  try {
    return JSON.parse(outcome.body);
  } catch {
    return undefined;
  }
}

function errorCode(error: unknown): string {
  for (let e: unknown = error; typeof e === 'object' && e !== null; e = (e as { cause?: unknown }).cause) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string') return code;
  }
  return 'NETWORK_ERROR';
}

/** A client acting with the API key `apiKey`. */
export function createRefhubClient(apiKey: string): RefhubClient {
  const agent = new Agent({
    connect: { timeout: CONNECT_TIMEOUT_MS },
    headersTimeout: ANSWER_TIMEOUT_MS,
    bodyTimeout: ANSWER_TIMEOUT_MS,
    connections: 32,
  });
  return {
    async send(base, method, path, options = {}) {
      try {
        const response = await request(`${base}${path}`, {
          method,
          dispatcher: agent,
          headers: {
            authorization: `ApiKey ${apiKey}`,
            ...(options.body === undefined ? {} : { 'content-type': 'application/json' }),
            ...options.headers,
          },
          ...(options.body === undefined ? {} : { body: JSON.stringify(options.body) }),
        });
        const body = await response.body.text();
        return {
          kind: 'answer',
          status: response.statusCode,
          headers: response.headers,
          body,
          at: Date.now(),
        };
      } catch (error) {
        return { kind: 'network-error', code: errorCode(error), at: Date.now() };
      }
    },
    close: () => agent.close(),
  };
}
