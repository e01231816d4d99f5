// The second line of defence for "IDs only" on the queue dashboard. Job payloads already carry IDs
// only (queue/registry.ts), but bull-board also shows what workers leave on a job: the error message
// (`failedReason`), the stack trace, the return value, progress and job logs. A message thrown by a
// driver can quote a stored value, so every bull-board API response passes through here before it is
// sent, and only what is known to be an ID, a number or one of our own enum words gets through.
// Anything else is replaced by a visible marker, so an unexpected field shows up as a question for
// the developers instead of as data.
import { containsUuid, isUuid } from '../../domain/ids.ts';
import type { FireResult, SettledForward, SettledScan, SettledWebhook } from '../../queue/registry.ts';

/** What replaces a value that is not known to be safe. */
export const NOT_SHOWN = '[not shown]';
export const REASON_NOT_SHOWN = '[not shown: not an error code; see the service log for this job]';

// The words workers return. `satisfies` makes the type check fail when a worker gains a result this
// list does not know, so the list cannot silently fall behind (the new word would show as NOT_SHOWN).
const RESULT_WORDS: ReadonlySet<string> = new Set(
  Object.keys({
    delivered: true,
    'nothing-to-send': true,
    withdrawn: true,
    sent: true,
    'already-sent': true,
    done: true,
    'unknown-referral': true,
    'subscription-deleted': true,
    'subscription-disabled': true,
    'event-expired': true,
    'not-subscribed': true,
    available: true,
    rejected: true,
    'already-scanned': true,
    gone: true,
  } satisfies Record<SettledForward | FireResult['kind'] | SettledWebhook | SettledScan, true>),
);

// Error codes as the workers throw them: `HTTP_503`, `UND_ERR_SOCKET`, `ECONNRESET`, `not_self_contained`.
// Digits only after an underscore: an identity number such as S1234567D is uppercase too.
const UPPER_CODE = /^[A-Z]{2,32}(?:_[A-Z0-9]{1,32}){0,4}$/;
const SNAKE_CODE = /^[a-z]{2,32}(?:_[a-z0-9]{1,32}){0,4}$/;
// RetryableForwardError's message wraps the code (workers/forwarding/forward-policy.ts).
const RETRYABLE = /^EHR forward failed \(([A-Z]{2,32}(?:_[A-Z0-9]{1,32}){0,4})\); it will be retried$/;
// Keys of return values and options are our own camelCase names; a key that is not one (a person's
// name, an identity number, a date) is counted under NOT_SHOWN instead of being shown.
const SAFE_KEY = /^[a-z][A-Za-z0-9]{0,63}$/;
// Failures BullMQ records on its own, word for word.
const BULLMQ_REASONS: ReadonlySet<string> = new Set([
  'job stalled more than allowable limit',
  'Connection is closed.',
]);

type Json = unknown;

function isPlainObject(value: Json): value is Record<string, Json> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isCount(value: Json): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value >= 0;
}

/** A string made by our own code: an enum word (`ehr`, `exponential`) or a token around a UUID (a job ID). */
export function isSafeToken(value: string): boolean {
  if (/^[a-z][a-z-]{0,63}$/.test(value)) return true;
  return value.length <= 200 && containsUuid(value) && /^[A-Za-z0-9._:{}-]+$/.test(value);
}

/** A job's `failedReason`: an error code, or one of the few messages known to quote nothing. */
export function redactReason(reason: Json): Json {
  if (typeof reason !== 'string' || reason === '') return reason;
  if (UPPER_CODE.test(reason) || SNAKE_CODE.test(reason)) return reason;
  if (RETRYABLE.test(reason) || BULLMQ_REASONS.has(reason)) return reason;
  return REASON_NOT_SHOWN;
}

/** Fields that were left out, counted under a key that cannot be mistaken for one of them. */
function withHidden(out: Record<string, Json>, hidden: number): Record<string, Json> {
  return hidden === 0 ? out : { ...out, [NOT_SHOWN]: hidden };
}

/** Maps an object's safely named fields; the others are counted, never named. */
function mapSafeKeys(value: Record<string, Json>, map: (inner: Json) => Json): Record<string, Json> {
  const out: Record<string, Json> = {};
  let hidden = 0;
  for (const [key, inner] of Object.entries(value)) {
    if (SAFE_KEY.test(key)) out[key] = map(inner);
    else hidden += 1;
  }
  return withHidden(out, hidden);
}

/** Job data: the fields of queue/registry.ts's payloads, each checked for its shape. */
export function redactData(data: Json): Json {
  if (data === undefined || data === null) return data;
  if (!isPlainObject(data)) return NOT_SHOWN;
  const out: Record<string, Json> = {};
  let hidden = 0;
  for (const [key, value] of Object.entries(data)) {
    switch (key) {
      case 'referralId':
      case 'requestId':
      case 'eventId':
      case 'subscriptionId':
      case 'replayOf':
        // A client may choose its own X-Request-Id; only a UUID is certain to be nothing else.
        out[key] = typeof value === 'string' && isUuid(value) ? value : NOT_SHOWN;
        break;
      case 'version':
        out[key] = isCount(value) ? value : NOT_SHOWN;
        break;
      case 'trigger':
        // What asked for a wait-times run (queue/wait-times.queue.ts): one of its words.
        out[key] = value === 'schedule' || value === 'start' ? value : NOT_SHOWN;
        break;
      default:
        hidden += 1;
    }
  }
  return withHidden(out, hidden);
}

function resultValue(value: Json): Json {
  if (value === null || typeof value === 'number' || typeof value === 'boolean') return value;
  if (typeof value === 'string' && RESULT_WORDS.has(value)) return value;
  return NOT_SHOWN;
}

/** A return value: one of the workers' result words, or a flat object of them and numbers. */
export function redactResult(result: Json): Json {
  if (result === undefined) return result;
  if (!isPlainObject(result)) return resultValue(result);
  return mapSafeKeys(result, resultValue);
}

/** Job options are ours (producer.ts), but are checked all the same: numbers, flags and tokens only. */
export function redactOpts(value: Json): Json {
  if (value === undefined || value === null) return value;
  if (typeof value === 'number' || typeof value === 'boolean') return value;
  if (typeof value === 'string') return isSafeToken(value) ? value : NOT_SHOWN;
  if (Array.isArray(value)) return value.map(redactOpts);
  if (isPlainObject(value)) return mapSafeKeys(value, redactOpts);
  return NOT_SHOWN;
}

function redactProgress(progress: Json): Json {
  return typeof progress === 'number' || typeof progress === 'boolean' ? progress : 0;
}

function isJobLike(value: Record<string, Json>): boolean {
  return 'stacktrace' in value || 'failedReason' in value || 'returnValue' in value;
}

function redactJob(job: Record<string, Json>): Record<string, Json> {
  const out: Record<string, Json> = {};
  for (const [key, value] of Object.entries(job)) {
    switch (key) {
      case 'data':
        out[key] = redactData(value);
        break;
      case 'returnValue':
        out[key] = redactResult(value);
        break;
      case 'failedReason':
      case 'deferredFailure':
        out[key] = redactReason(value);
        break;
      case 'stacktrace':
        // Frames name files, not data, but a thrown message is their first line: never shown.
        out[key] = [];
        break;
      case 'progress':
        out[key] = redactProgress(value);
        break;
      case 'opts':
        out[key] = redactOpts(value);
        break;
      case 'deduplicationId':
        out[key] = typeof value === 'string' && isSafeToken(value) ? value : NOT_SHOWN;
        break;
      default:
        out[key] = redactBody(value);
    }
  }
  return out;
}

/**
 * Redacts any bull-board response body: jobs wherever they appear (queue listings, one job, a
 * scheduler's next run), scheduler templates, and flow nodes. Numbers, flags and structure pass.
 */
export function redactBody(body: Json): Json {
  if (Array.isArray(body)) return body.map(redactBody);
  if (!isPlainObject(body)) return body;
  if (isJobLike(body)) return redactJob(body);
  const out: Record<string, Json> = {};
  for (const [key, value] of Object.entries(body)) {
    if (key === 'template' && isPlainObject(value)) {
      // A job scheduler's template: the data and options every run of it will get.
      out[key] = { ...value, data: redactData(value.data), opts: redactOpts(value.opts) };
    } else if (key === 'ignoredChildFailureReasons') {
      out[key] = {};
    } else if (key === 'progress') {
      out[key] = redactProgress(value);
    } else {
      out[key] = redactBody(value);
    }
  }
  return out;
}

/** Job logs: workers never write any, and a log line could say anything. */
export const JOB_LOGS_ROUTE = '/api/queues/:queueName/:jobId/logs';

/** bull-board's `after` hook: the body of every API answer, redacted before it is serialized. */
export function redactBoardBody(route: string, status: number | undefined, body: Json): Json {
  if (route === JOB_LOGS_ROUTE && (status ?? 200) < 400) return [];
  return redactBody(body);
}
