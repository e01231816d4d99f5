// How a `refhub` command stops on a problem the operator can fix: one line on stderr, `refhub: …`,
// and exit status 1, never a stack trace. Anything else is a defect and is thrown on, so that Node
// prints it in full.
import { InvalidArgumentError } from 'commander';
import { ConfigError } from '../config.ts';
import { KeyRingError } from '../domain/key-ring.ts';
import { DataDirLockedError } from '../db/data-dir-lock.ts';
import { MigrationFailedError, SchemaBehindError, StoreUnavailableError } from '../db/store-failure.ts';
import { AppError } from '../errors.ts';
import { QUEUE_UNAVAILABLE } from '../queue/connections.ts';
import { QueuePrefixTakenError } from '../queue/prefix-claim.ts';
import { AuditExportError } from '../services/audit/export.ts';
import { ArchiveError } from '../services/retention/archive.ts';
import { RetentionBusyError, RetentionLostError } from '../services/retention/runs.ts';
import { ControlCommandRefused } from './control-client.ts';

export function fail(message: string): never {
  process.stderr.write(`refhub: ${message}\n`);
  process.exit(1);
}

/**
 * What to tell the operator of an error a command threw, when it is theirs to fix (a setting, an
 * argument, a lock, the state of the database or the queues); undefined for anything else, which is a
 * defect.
 */
export function operatorMessage(error: unknown): string | undefined {
  if (
    error instanceof ConfigError ||
    error instanceof KeyRingError ||
    error instanceof DataDirLockedError ||
    error instanceof QueuePrefixTakenError ||
    error instanceof StoreUnavailableError ||
    error instanceof SchemaBehindError ||
    (error instanceof MigrationFailedError && error.byDatabase) ||
    error instanceof InvalidArgumentError ||
    error instanceof AuditExportError ||
    error instanceof ArchiveError ||
    error instanceof RetentionBusyError ||
    error instanceof RetentionLostError ||
    error instanceof ControlCommandRefused
  ) {
    return error.message;
  }
  const { code, syscall } = (error ?? {}) as { code?: unknown; syscall?: unknown };
  if (syscall === 'listen' && (code === 'EADDRINUSE' || code === 'EACCES' || code === 'EADDRNOTAVAIL')) {
    const { address, port } = error as { address?: string; port?: number };
    return `cannot listen on ${address ?? 'HOST'}:${port ?? 'PORT'} (${code}); set PORT or HOST`;
  }
  if (code === QUEUE_UNAVAILABLE) {
    return 'Redis cannot be reached, so the queues are unavailable: start Redis, or correct REDIS_URL, then run the command again';
  }
  if (error instanceof AppError) {
    const problems = error.errors?.map((e) => `\n  ${e.path}: ${e.message}`).join('') ?? '';
    return problems === '' ? error.message : `${error.title}:${problems}`;
  }
  return undefined;
}

/** Ends the process for an error a command threw: with `fail` when it is the operator's to fix. */
export function failFor(error: unknown): never {
  const message = operatorMessage(error);
  if (message !== undefined) fail(message);
  throw error;
}
