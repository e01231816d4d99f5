// The two ways a call fails. `RefhubProblemError`: refhub (or something in front of it) answered
// with an error; it carries the problem+json document, whose `code` is what to branch on.
// `RefhubNetworkError`: no answer came, after the retries the policy allows.
import type { Problem } from './models.ts';

export class RefhubProblemError extends Error {
  override readonly name = 'RefhubProblemError';
  readonly status: number;
  readonly problem: Problem;
  constructor(problem: Problem) {
    super(`${problem.status} ${problem.code}: ${problem.detail}`);
    this.status = problem.status;
    this.problem = problem;
  }

  /** The stable error code, such as `version_mismatch` or `validation_failed`. */
  get code(): string {
    return this.problem.code;
  }
}

export class RefhubNetworkError extends Error {
  override readonly name = 'RefhubNetworkError';
  /** `timeout` when an attempt took longer than the policy allows, else `network`. */
  readonly reason: 'timeout' | 'network';
  readonly attempts: number;
  constructor(reason: 'timeout' | 'network', attempts: number, cause: unknown) {
    super(`No answer from refhub after ${attempts} attempt${attempts === 1 ? '' : 's'} (${reason})`, {
      cause,
    });
    this.reason = reason;
    this.attempts = attempts;
  }
}

function isProblem(body: unknown): body is Problem {
  if (body === null || typeof body !== 'object') return false;
  const { status, code, title } = body as Record<string, unknown>;
  return typeof status === 'number' && typeof code === 'string' && typeof title === 'string';
}

/**
 * The error for a failed response. A body that is not a problem document (an HTML page from a proxy,
 * say) becomes one with code `http_<status>`, so callers always get the same shape.
 */
export function problemError(response: Response, body: unknown): RefhubProblemError {
  if (isProblem(body)) return new RefhubProblemError(body);
  return new RefhubProblemError({
    type: 'about:blank',
    title: response.statusText || 'HTTP error',
    status: response.status,
    detail: `The server answered ${response.status} without a problem document.`,
    code: `http_${response.status}`,
    requestId: response.headers.get('x-request-id') ?? '',
  });
}

/** What openapi-fetch resolves to: data on success, the parsed error body otherwise. */
export type Outcome<T> =
  | { readonly data: T; readonly error?: never; readonly response: Response }
  | { readonly data?: never; readonly error: unknown; readonly response: Response };

/** The data of a successful call and its response (for headers); a failed one throws its problem. */
export async function answerOf<T>(
  call: Promise<Outcome<T>>,
): Promise<{ data: Exclude<T, undefined>; response: Response }> {
  const outcome = await call;
  const { data } = outcome;
  if (!outcome.response.ok || data === undefined) throw problemError(outcome.response, outcome.error);
  return { data: data as Exclude<T, undefined>, response: outcome.response };
}
