// pino, JSON in production and pretty only on a TTY. Request and job IDs ride on child loggers.
// Nothing logs request or response bodies; the redaction list is a second line of defence for
// secrets and patient fields that a careless log call might pass.
import pino, { type Logger } from 'pino';
import type { Config } from './config.ts';

export type { Logger };

/** Fields that hold patient data, wherever a careless log call might pass them. */
const PATIENT_FIELDS = [
  'patient',
  'patientUin',
  'patientName',
  'patientPhoneNumber',
  'patientGender',
  'dob',
  'nationality',
  'residentialStatus',
  'clinicalInfo',
  'referrerName',
  'referrerEmail',
  'referrerContactNumber',
  'cancelNote',
  'reason',
  'content',
  'notesItem',
];

export const REDACT_PATHS = [
  'authorization',
  '*.authorization',
  'headers.authorization',
  'req.headers.authorization',
  'cookie',
  '*.cookie',
  'req.headers.cookie',
  'res.headers["set-cookie"]',
  '*.headers["set-cookie"]',
  'key',
  'apiKey',
  'token',
  '*.token',
  'password',
  '*.password',
  'body',
  '*.body',
  // A Postgres error's detail quotes the row it was about.
  'detail',
  '*.detail',
  ...PATIENT_FIELDS.flatMap((field) => [field, `*.${field}`]),
];

/** `destination` is for tests that read what was logged; by default logs go to stdout. */
export function createLogger(
  config: Pick<Config, 'logLevel' | 'env'>,
  destination?: pino.DestinationStream,
): Logger {
  const options: pino.LoggerOptions = {
    level: config.logLevel,
    base: { service: 'refhub' },
    redact: { paths: REDACT_PATHS, censor: '[redacted]' },
    timestamp: pino.stdTimeFunctions.isoTime,
  };
  if (destination !== undefined) return pino(options, destination);
  if (config.env !== 'production' && process.stdout.isTTY) {
    return pino({
      ...options,
      transport: { target: 'pino-pretty', options: { translateTime: 'SYS:standard' } },
    });
  }
  return pino(options, pino.destination(1));
}

/** What a log line says of an error nobody expected: see `errorKind`. */
export interface ErrorKind {
  readonly type: string;
  readonly code: string | undefined;
  readonly stack?: string | undefined;
}

/**
 * An unexpected error as a log line may carry it: its kind (the class name, and the code a driver or
 * Node gave it) and, with `withStack`, the frames it was thrown from; never its message, because
 * database drivers quote stored values (patient data among them) in their messages.
 */
export function errorKind(error: Error, options: { readonly withStack?: boolean } = {}): ErrorKind {
  const code = (error as { code?: unknown }).code;
  const kind = { type: error.name, code: typeof code === 'string' ? code : undefined };
  if (options.withStack !== true) return kind;
  return { ...kind, stack: error.stack?.split('\n').slice(1, 8).join('\n') };
}

/** What a log line says of a failed run of refhub's own periodic work: see `failureReport`. */
export interface FailureReport extends ErrorKind {
  readonly message?: string;
  /** Where the message is left out, why. */
  readonly withheld?: string;
  readonly cause?: FailureReport;
}

/**
 * A failure of work refhub runs by itself (the reconciler's pass, say), as its log line carries it
 * (under `failure`: pino would take an `err` with a message for an Error and rewrite it): the
 * kind, the code and the message, which is what an operator needs to act, and the same of its cause.
 * Two kinds of message may quote data, and are left out: a database's (an error with an SQLSTATE
 * code: PostgreSQL and PGlite quote a statement's values, as in `invalid input syntax for type
 * uuid: "…"`), whose code says what failed; and a parser's (a SyntaxError quotes its input).
 */
export function failureReport(error: unknown, depth = 0): FailureReport {
  if (!(error instanceof Error)) return { type: typeof error, code: undefined };
  const kind = errorKind(error);
  const fromDatabase = kind.code !== undefined && /^[0-9A-Z]{5}$/.test(kind.code) && 'severity' in error;
  const quoting = fromDatabase || error instanceof SyntaxError;
  const cause = error.cause !== undefined && depth < 3 ? failureReport(error.cause, depth + 1) : undefined;
  return {
    ...kind,
    ...(quoting
      ? { withheld: fromDatabase ? 'a database error quotes values' : 'a parser quotes its input' }
      : { message: error.message }),
    ...(cause === undefined ? {} : { cause }),
  };
}

// One log line when a dependency goes away, one when it is back, and a count of what failed in
// between: an outage of Redis or PostgreSQL otherwise writes the same warning once per request or job
// (dozens of identical lines a second), which buries everything else and tells an operator nothing
// more than the first line did.

export interface OutageLog {
  /** A call failed because the dependency is away: logged if it is the first since it was last up. */
  failed(fields?: Readonly<Record<string, unknown>>): void;
  /** The dependency answered again: logs the end of an outage, with how many calls failed. */
  recovered(): void;
  readonly ongoing: boolean;
}

export interface OutageWording {
  /** What the log's `outage` field names: `database`, `redis`, `queues` (in the database). */
  readonly dependency: string;
  readonly down: string;
  readonly up: string;
}

export function createOutageLog(logger: Logger, wording: OutageWording, now = () => Date.now()): OutageLog {
  let outage: { since: number; failures: number } | undefined;
  return {
    failed(fields = {}) {
      if (outage !== undefined) {
        outage.failures++;
        return;
      }
      outage = { since: now(), failures: 1 };
      logger.warn({ ...fields, outage: wording.dependency }, wording.down);
    },
    recovered() {
      if (outage === undefined) return;
      const { since, failures } = outage;
      outage = undefined;
      logger.info(
        { outage: wording.dependency, failures, seconds: Math.round((now() - since) / 100) / 10 },
        wording.up,
      );
    },
    get ongoing() {
      return outage !== undefined;
    },
  };
}
