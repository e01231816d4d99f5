// The forward's policy, in one place: which answers of the EHR are worth another try, how long to
// wait before it and how many attempts a forward gets. The worker (the backoff) and the processing
// function (judging an answer) read this module; what the queue job is told of it (its attempts and
// backoff type) is the queue registry's `forwardJobOptions`. Pure: no I/O.
import type { EhrAnswer } from './ehr-client.ts';

export interface ForwardPolicy {
  /** Attempts per forward before it is recorded as failed (EHR_MAX_ATTEMPTS). */
  readonly maxAttempts: number;
  /** The first retry waits about this long; each later one doubles it (EHR_BACKOFF_BASE_MS). */
  readonly backoffBaseMs: number;
}

const MAX_BACKOFF_MS = 15 * 60_000;
const MAX_RETRY_AFTER_MS = 60 * 60_000;

/** 408, 429 and 5xx are the EHR's "not now"; any other answer outside 2xx is final. */
export function isRetryableStatus(status: number): boolean {
  return status === 408 || status === 429 || status >= 500;
}

export type AttemptVerdict = 'delivered' | 'retrying' | 'failed';

export interface Judgement {
  readonly outcome: AttemptVerdict;
  /** For a failure: why, in words for the timeline ("the EHR answered HTTP 422, which is final"). */
  readonly reason?: string;
}

/** What one attempt's answer means, given how many attempts the forward has had. */
export function judge(answer: EhrAnswer, attempt: number, maxAttempts: number): Judgement {
  if (answer.kind === 'response' && answer.status >= 200 && answer.status < 300) {
    return { outcome: 'delivered' };
  }
  const retryable = answer.kind === 'network-error' || isRetryableStatus(answer.status);
  if (retryable && attempt < maxAttempts) return { outcome: 'retrying' };
  const what =
    answer.kind === 'network-error'
      ? `the EHR could not be reached (${answer.code})`
      : `the EHR answered HTTP ${answer.status}`;
  return {
    outcome: 'failed',
    reason: retryable ? `${what}, and ${attempt} attempts were made` : `${what}, which is final`,
  };
}

/** Whether an answer shows the EHR is there and answering (so the circuit may close). */
export function ehrAnswered(answer: EhrAnswer): boolean {
  return answer.kind === 'response' && !isRetryableStatus(answer.status);
}

/** A failure worth another try; `retryAfterMs` is the EHR's own wish (Retry-After). */
export class RetryableForwardError extends Error {
  override readonly name = 'RetryableForwardError';
  readonly code: string;
  readonly retryAfterMs: number | undefined;
  constructor(code: string, retryAfterMs: number | undefined) {
    super(`EHR forward failed (${code}); it will be retried`);
    this.code = code;
    this.retryAfterMs = retryAfterMs;
  }
}

/**
 * The delay before attempt `attemptsMade + 1`: the EHR's Retry-After when it sent one (capped at an
 * hour), else exponential from `baseMs` with full jitter in its upper half, capped at 15 minutes.
 */
export function forwardBackoff(baseMs: number, random: () => number = Math.random) {
  return (attemptsMade: number, _type?: string, error?: Error): number => {
    if (error instanceof RetryableForwardError && error.retryAfterMs !== undefined) {
      return Math.min(error.retryAfterMs, MAX_RETRY_AFTER_MS);
    }
    const ceiling = Math.min(baseMs * 2 ** Math.max(0, attemptsMade - 1), MAX_BACKOFF_MS);
    return Math.round(ceiling / 2 + (random() * ceiling) / 2);
  };
}
