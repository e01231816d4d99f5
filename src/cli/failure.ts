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

export function fail(message: string): never {
  process.stderr.write(`refhub: ${message}\n`);
  process.exit(1);
}

/** Ends the process for an error a command threw: with `fail` when it is the operator's to fix. */
export function failFor(error: unknown): never {
  if (
    error instanceof ConfigError ||
    error instanceof KeyRingError ||
    error instanceof DataDirLockedError ||
    error instanceof QueuePrefixTakenError ||
    error instanceof StoreUnavailableError ||
    error instanceof SchemaBehindError ||
    (error instanceof MigrationFailedError && error.byDatabase) ||
    error instanceof InvalidArgumentError ||
    error instanceof AuditExportError
  ) {
    fail(error.message);
  }
  const { code, syscall } = (error ?? {}) as { code?: unknown; syscall?: unknown };
  if (syscall === 'listen' && (code === 'EADDRINUSE' || code === 'EACCES' || code === 'EADDRNOTAVAIL')) {
    const { address, port } = error as { address?: string; port?: number };
    fail(`cannot listen on ${address ?? 'HOST'}:${port ?? 'PORT'} (${code}); set PORT or HOST`);
  }
  if (code === QUEUE_UNAVAILABLE) {
    fail(
      'Redis cannot be reached, so the queues are unavailable: start Redis, or correct REDIS_URL, then run the command again',
    );
  }
  if (error instanceof AppError) {
    const problems = error.errors?.map((e) => `\n  ${e.path}: ${e.message}`).join('') ?? '';
    fail(problems === '' ? error.message : `${error.title}:${problems}`);
  }
  throw error;
}
