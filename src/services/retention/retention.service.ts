// Retention of the growing tables (db/retention.repository.ts, migration 0027): a run is a list of
// steps, each one line in `steps` below. The first keeps the month partitions made ahead (this month
// and the next RETENTION_MONTHS_AHEAD, moving out of the DEFAULT partition the rows it caught for a
// month now made); then, for each table, every month older than its setting is archived
// (archive.ts: NDJSON files and a manifest of their SHA-256s, and for the audit trail the checkpoints
// that cover it), the archive read back and checked against the partition, and the partition
// detached and dropped: no row is deleted one by one. A month that still holds work that has not
// ended (an audit row not yet sealed, a delivery or forward still being retried) waits for a later
// run. Each month dropped leaves an audit row, written with the drop, whose request ID names the
// table, the month, the rows and the manifest's SHA-256 (no patient data); `retention_archives`
// keeps the archive's path. Between the partitions made and the months retired, the referrals that
// ended long ago are archived (referrals-archive.ts). The scheduled job (queue/retention.queue.ts) and
// `refhub retention run` both run it; one run at a time (`retention_runs`, migration 0033), so that
// a run from the CLI and the scheduled one never write the same archive or purge the same referral.
import { createHash, randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { auditEventOf, systemActor } from '../../domain/audit.ts';
import type { Clock } from '../../domain/clock.ts';
import {
  monthBounds,
  monthOf,
  PARTITIONED,
  PARTITIONED_TABLES,
  type MonthPartition,
  type PartitionedTable,
} from '../../domain/retention.ts';
import type { Stores } from '../../db/stores.ts';
import type { Metrics } from '../../observability/metrics.ts';
import { checkpointHashOf } from '../audit/audit-chain-check.ts';
import type { AuditChain } from '../audit/audit-chain.service.ts';
import { checkpointLine, rowLine } from '../audit/export.ts';
import type { ArchiveStaleReferralsOptions, ReferralsArchiveProgress } from './referrals-archive.ts';
import {
  RETENTION_HEARTBEAT_MS,
  RETENTION_RUN_STALE_MS,
  RetentionBusyError,
  RetentionLostError,
} from './runs.ts';
import {
  ArchiveError,
  AUDIT_ARCHIVE_KIND,
  AUDIT_CHECKPOINTS_FILE,
  AUDIT_ROWS_FILE,
  createArchive,
  hasManifest,
  MANIFEST_FILE,
  monthArchiveName,
  verifyArchive,
  type AuditCheckpointRef,
} from './archive.ts';

/** Months made ahead of the current one: a partition is ready long before its first row. */
export const RETENTION_MONTHS_AHEAD = 3;

/** Rows read from a partition at a time. */
const PAGE = 1_000;

/** Archiving the referrals that ended long ago (referrals-archive.ts, `archiveStaleReferrals`). */
export type ArchiveReferrals = (
  options: ArchiveStaleReferralsOptions,
) => Promise<{ archived: number; archive: string | undefined }>;

export interface RetentionSettings {
  /** How many whole months each table keeps before a month is archived and dropped. */
  readonly months: Readonly<Record<PartitionedTable, number>>;
  /** RETENTION_ARCHIVE_DIR: where archives are written. */
  readonly archiveDir: string;
  /** Months made ahead of the current one. */
  readonly monthsAhead: number;
}

export interface RetentionDeps {
  readonly stores: Pick<Stores, 'retention' | 'transaction'>;
  readonly archiveReferrals: ArchiveReferrals;
  readonly auditChain: Pick<AuditChain, 'exportTrail' | 'publicKeys'>;
  readonly clock: Clock;
  readonly metrics: Pick<Metrics, 'retentionRun' | 'retentionPartitionDropped'>;
  readonly settings: RetentionSettings;
}

/** A month archived and dropped. */
export interface ArchivedPartition {
  readonly table: PartitionedTable;
  readonly month: string;
  readonly archive: string;
  readonly rows: number;
  readonly manifestSha256: string;
}

/** A month past its setting that was kept, and why. */
export interface WaitingPartition {
  readonly table: PartitionedTable;
  readonly month: string;
  readonly reason: string;
}

/** What a run did. Words and counts only: the queue keeps it on the job. */
export interface RetentionRun {
  readonly partitionsMade: number;
  /** Referrals archived and purged, and the archive that holds them (undefined when none was due). */
  readonly referralsArchived: number;
  readonly referralsArchive: string | undefined;
  readonly archived: readonly ArchivedPartition[];
  readonly waiting: readonly WaitingPartition[];
}

/** How far a run is: partitions done of those found so far. */
export type RetentionProgress = (done: number, total: number) => void;

/** What a step is handed: the run's time and ID, and where it leaves what it did. */
export interface RetentionStepContext {
  readonly now: Date;
  readonly requestId: string;
  readonly made: (count: number) => void;
  readonly referrals: (archived: number, archive: string | undefined) => void;
  readonly archived: (partition: ArchivedPartition) => void;
  readonly waiting: (partition: WaitingPartition) => void;
  readonly found: (count: number) => void;
  readonly done: () => void;
}

/** One step of a run, by name. */
export interface RetentionStep {
  readonly name: string;
  run(context: RetentionStepContext): Promise<void>;
}

function lastDayOf(month: string): string {
  return new Date(monthBounds(month).to.getTime() - 86_400_000).toISOString().slice(0, 10);
}

export function createRetention(deps: RetentionDeps) {
  const { stores, settings } = deps;

  /** This month and the months ahead, and every earlier month the DEFAULT partition caught rows of. */
  async function makePartitions(context: Pick<RetentionStepContext, 'now' | 'made'>): Promise<void> {
    const latest = monthOf(context.now, settings.monthsAhead);
    for (const table of PARTITIONED_TABLES) {
      const wanted = new Set<string>();
      for (let ahead = 0; ahead <= settings.monthsAhead; ahead++) wanted.add(monthOf(context.now, ahead));
      for (const month of await stores.retention.monthsInDefault(table))
        if (month <= latest) wanted.add(month);
      for (const month of [...wanted].sort()) {
        const made = await stores.transaction((tx) => tx.retention.makeMonth(table, month));
        if (made) context.made(1);
      }
    }
  }

  /** Writes the archive of an audit month: its rows and the checkpoints that cover them. */
  async function writeAuditArchive(partition: MonthPartition, dir: string, now: Date) {
    const archive = await createArchive(dir, monthArchiveName(partition.table, partition.month));
    const rows = await archive.file(AUDIT_ROWS_FILE);
    const checkpoints = await archive.file(AUDIT_CHECKPOINTS_FILE);
    const days = { from: `${partition.month}-01`, to: lastDayOf(partition.month) };
    let last: AuditCheckpointRef | null = null;
    await deps.auditChain.exportTrail(days.from, days.to, async (item) => {
      if (item.type === 'row') return rows.write(rowLine(item.row));
      const c = item.checkpoint;
      last = {
        seq: c.seq,
        createdAt: c.createdAt.toISOString(),
        hash: checkpointHashOf(c),
        signature: c.signature,
        keyId: c.keyId,
        days,
      };
      return checkpoints.write(checkpointLine(c));
    });
    for (const jwk of deps.auditChain.publicKeys)
      await checkpoints.write(JSON.stringify({ type: 'key', jwk }));
    const rowsFile = await rows.close();
    await checkpoints.close();
    const { from, to } = monthBounds(partition.month);
    const finished = await archive.finish({
      kind: AUDIT_ARCHIVE_KIND,
      createdAt: now,
      range: { from: from.toISOString(), to: to.toISOString() },
      auditCheckpoint: last,
    });
    return { ...finished, rows: rowsFile.rows };
  }

  /** Writes the archive of a month of a table other than the audit trail: its rows, in key order. */
  async function writeTableArchive(partition: MonthPartition, dir: string, now: Date) {
    const archive = await createArchive(dir, monthArchiveName(partition.table, partition.month));
    const file = await archive.file(`${partition.table}.ndjson`);
    const key = PARTITIONED[partition.table].key;
    let after: string | undefined;
    for (;;) {
      const page = await stores.retention.rows(partition, after, PAGE);
      for (const row of page) await file.write(row);
      const lastRow = page.at(-1);
      if (lastRow === undefined || page.length < PAGE) break;
      after = String(lastRow[key]);
    }
    const written = await file.close();
    const { from, to } = monthBounds(partition.month);
    const finished = await archive.finish({
      kind: partition.table,
      createdAt: now,
      range: { from: from.toISOString(), to: to.toISOString() },
      auditCheckpoint: null,
    });
    return { ...finished, rows: written.rows };
  }

  /** The rows of the partition's own data file in a verified archive (not the checkpoints'). */
  function dataRows(table: PartitionedTable, files: readonly { name: string; rows: number }[]): number {
    const name = table === AUDIT_ARCHIVE_KIND ? AUDIT_ROWS_FILE : `${table}.ndjson`;
    return files.find((f) => f.name === name)?.rows ?? -1;
  }

  /** Archives, verifies and drops one month; or says why it waits. */
  async function retire(partition: MonthPartition, context: RetentionStepContext): Promise<void> {
    if (await stores.retention.holdsUnended(partition)) {
      context.waiting({
        table: partition.table,
        month: partition.month,
        reason:
          partition.table === 'audit_events'
            ? 'it holds audit rows not yet sealed'
            : 'it holds a delivery that has not ended',
      });
      return;
    }
    const root = settings.archiveDir;
    const dir = path.join(root, monthArchiveName(partition.table, partition.month));
    // A run that archived the month and stopped before the drop left a whole archive: it is checked, not written again.
    if (!(await hasManifest(dir))) {
      if (partition.table === 'audit_events') await writeAuditArchive(partition, root, context.now);
      else await writeTableArchive(partition, root, context.now);
    }
    const verified = await verifyArchive(dir);
    const held = await stores.retention.count(partition.name);
    const archivedRows = dataRows(partition.table, verified.manifest.files);
    if (archivedRows !== held)
      throw new ArchiveError(
        `${dir}: it holds ${archivedRows} rows of ${partition.name}, which holds ${held}; the partition is kept`,
      );
    const manifestSha256 = await manifestHash(dir);
    const requestId = `retention.${partition.table}.${partition.month}.rows-${held}.manifest-sha256-${manifestSha256}`;
    await stores.transaction(async (tx) => {
      await tx.retention.dropArchived(partition, {
        archive: dir,
        manifestSha256,
        rows: held,
        droppedAt: context.now,
      });
      await tx.audit.record(
        auditEventOf(systemActor(requestId), 'retention.partition-dropped', [], context.now),
      );
    });
    deps.metrics.retentionPartitionDropped(partition.table);
    context.archived({
      table: partition.table,
      month: partition.month,
      archive: dir,
      rows: held,
      manifestSha256,
    });
  }

  /** Every month of `table` past its setting, oldest first. */
  async function retireAged(table: PartitionedTable, context: RetentionStepContext): Promise<void> {
    const cutoff = monthOf(context.now, -settings.months[table]);
    const aged = (await stores.retention.partitions(table)).filter((p) => p.month < cutoff);
    context.found(aged.length);
    for (const partition of aged) {
      await retire(partition, context);
      context.done();
    }
  }

  /** The referrals due for archiving, each counted as it is purged. */
  async function archiveReferrals(context: RetentionStepContext): Promise<void> {
    let phase: ReferralsArchiveProgress['phase'] | undefined;
    const result = await deps.archiveReferrals({
      now: context.now,
      requestId: context.requestId,
      onProgress: (p) => {
        if (p.phase !== phase && p.phase === 'writing') context.found(p.total);
        phase = p.phase;
        if (p.phase === 'purging') context.done();
      },
    });
    context.referrals(result.archived, result.archive);
  }

  /** The steps of a run, in order; adding one is one line. */
  const steps: readonly RetentionStep[] = [
    { name: 'partitions', run: (context) => makePartitions(context) },
    { name: 'referrals', run: (context) => archiveReferrals(context) },
    ...PARTITIONED_TABLES.map((table) => ({
      name: table,
      run: (context: RetentionStepContext) => retireAged(table, context),
    })),
  ];

  /**
   * Runs `work` holding retention (`retention_runs`): RetentionBusyError when another run holds it.
   * While it runs it says it is alive every RETENTION_HEARTBEAT_MS; `alive` throws RetentionLostError
   * once another run has taken over, which a run not heard from for RETENTION_RUN_STALE_MS allows.
   */
  async function exclusive<T>(
    startedBy: string,
    work: (alive: () => void) => Promise<T>,
    summaryOf: (result: T) => Record<string, number | string>,
  ): Promise<T> {
    const id = randomUUID();
    const started = deps.clock.now();
    const running = await stores.transaction((tx) =>
      tx.retention.startRun(
        { id, startedBy, now: started },
        new Date(started.getTime() - RETENTION_RUN_STALE_MS),
      ),
    );
    if (running !== undefined) throw new RetentionBusyError(running);
    let lost = false;
    const beat = setInterval(() => {
      stores.retention.heartbeat(id, deps.clock.now()).then(
        (held) => {
          if (!held) lost = true;
        },
        () => undefined, // the store did not answer: the next beat tries again
      );
    }, RETENTION_HEARTBEAT_MS);
    beat.unref();
    const alive = () => {
      if (lost) throw new RetentionLostError();
    };
    try {
      const result = await work(alive);
      await stores.retention.finishRun(id, deps.clock.now(), {
        outcome: 'succeeded',
        summary: summaryOf(result),
      });
      return result;
    } catch (error) {
      await stores.retention
        .finishRun(id, deps.clock.now(), {
          outcome: 'failed',
          summary: { error: error instanceof Error ? error.name : 'Error' },
        })
        .catch(() => undefined); // a store that does not answer: the run is ended as abandoned later
      throw error;
    } finally {
      clearInterval(beat);
    }
  }

  return {
    steps,

    /** Makes the months ahead (and moves what the DEFAULT partitions caught); how many it made. */
    async makePartitions(): Promise<number> {
      let made = 0;
      await makePartitions({ now: deps.clock.now(), made: (n) => (made += n) });
      return made;
    },

    /**
     * Runs every step, in order. A step that fails ends the run (counted `failed`) and is thrown on;
     * what the steps before it did stays done.
     */
    async run(requestId: string, progress: RetentionProgress = () => undefined): Promise<RetentionRun> {
      return exclusive(
        requestId,
        (alive) => runSteps(requestId, progress, alive),
        (run) => ({
          partitionsMade: run.partitionsMade,
          referralsArchived: run.referralsArchived,
          partitionsDropped: run.archived.length,
          partitionsWaiting: run.waiting.length,
        }),
      );
    },

    /**
     * Archives the referrals due now, holding retention as a run does (`refhub retention referrals`);
     * RetentionBusyError when a run holds it.
     */
    async archiveReferrals(
      requestId: string,
      onProgress?: (progress: ReferralsArchiveProgress) => void,
    ): Promise<{ archived: number; archive: string | undefined }> {
      return exclusive(
        requestId,
        () =>
          deps.archiveReferrals({
            now: deps.clock.now(),
            requestId,
            ...(onProgress === undefined ? {} : { onProgress }),
          }),
        (result) => ({
          referralsArchived: result.archived,
          ...(result.archive === undefined ? {} : { archive: result.archive }),
        }),
      );
    },
  };

  /** Every step, in order, while `alive` says this run still holds retention. */
  async function runSteps(
    requestId: string,
    progress: RetentionProgress,
    alive: () => void,
  ): Promise<RetentionRun> {
    const now = deps.clock.now();
    let partitionsMade = 0;
    let referralsArchived = 0;
    let referralsArchive: string | undefined;
    const archived: ArchivedPartition[] = [];
    const waiting: WaitingPartition[] = [];
    let found = 0;
    let done = 0;
    const context: RetentionStepContext = {
      now,
      requestId,
      made: (count) => (partitionsMade += count),
      referrals: (count, archive) => {
        referralsArchived = count;
        referralsArchive = archive;
      },
      archived: (p) => archived.push(p),
      waiting: (p) => waiting.push(p),
      found: (count) => {
        found += count;
        progress(done, found);
      },
      done: () => {
        alive();
        done++;
        progress(done, found);
      },
    };
    try {
      for (const step of steps) {
        alive();
        await step.run(context);
      }
    } catch (error) {
      deps.metrics.retentionRun('failed', deps.clock.now());
      throw error;
    }
    deps.metrics.retentionRun('succeeded', deps.clock.now());
    return { partitionsMade, referralsArchived, referralsArchive, archived, waiting };
  }
}

/** The SHA-256 of an archive's manifest, as `retention_archives` and the audit row name it. */
async function manifestHash(dir: string): Promise<string> {
  return createHash('sha256')
    .update(await readFile(path.join(dir, MANIFEST_FILE)))
    .digest('hex');
}

export type Retention = ReturnType<typeof createRetention>;
