// The ways a call fails. `RefhubProblemError`: refhub (or something in front of it) answered
// with an error; it carries the problem+json document, whose `code` is what to branch on.
// `RefhubNetworkError`: no answer came, after the retries the policy allows. `RefhubTokenError`: a
// client with signed credentials was refused an access token; it carries RFC 6749's `error`.
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

/**
 * The token endpoint refused to issue an access token, as RFC 6749 §5.2 says: `error` is what to
 * branch on (`invalid_client`: the client is unknown or revoked, or its assertion did not verify;
 * `invalid_scope`; `invalid_request`). An answer that is not an RFC 6749 error (a proxy's page) gets
 * the error `http_<status>`.
 */
export class RefhubTokenError extends Error {
  override readonly name = 'RefhubTokenError';
  readonly status: number;
  /** RFC 6749's error code, such as `invalid_client`. */
  readonly error: string;
  /** refhub's sentence for the client's developer (`error_description`), when it gave one. */
  readonly description: string | undefined;
  /** Seconds the token endpoint asked to wait (Retry-After), when it asked. */
  readonly retryAfterSeconds: number | undefined;
  constructor(status: number, error: string, description?: string, retryAfterSeconds?: number) {
    super(`${status} ${error}${description === undefined ? '' : `: ${description}`}`);
    this.status = status;
    this.error = error;
    this.description = description;
    this.retryAfterSeconds = retryAfterSeconds;
  }
}

/** The error for a refused token request, from its answer's body (read here). */
export async function tokenError(response: Response): Promise<RefhubTokenError> {
  const seconds = response.headers.get('retry-after');
  const retryAfter = seconds !== null && /^\d+$/.test(seconds.trim()) ? Number(seconds) : undefined;
  let body: unknown;
  try {
    body = await response.json();
  } catch {
    body = undefined;
  }
  const { error, error_description: description } = (body ?? {}) as Record<string, unknown>;
  if (typeof error !== 'string') {
    return new RefhubTokenError(
      response.status,
      `http_${response.status}`,
      `The token endpoint answered ${response.status} without an OAuth error.`,
      retryAfter,
    );
  }
  return new RefhubTokenError(
    response.status,
    error,
    typeof description === 'string' ? description : undefined,
    retryAfter,
  );
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
