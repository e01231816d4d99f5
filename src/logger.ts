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
