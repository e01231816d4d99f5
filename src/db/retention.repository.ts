// The month partitions of the growing tables (migration 0027): which exist, making the months ahead
// (and moving into a new month the rows the DEFAULT partition caught for it), reading a partition's
// rows in order for its archive, whether a partition still holds work that has not ended, and
// detaching and dropping one once its archive holds, recorded in `retention_archives`; and the runs
// themselves (`retention_runs`, migration 0033), one at a time.
//
// Partitions are named `<table>_p<YYYY>_<MM>` and hold one UTC month; `<table>_default` holds rows
// of a month that has no partition (never lost, never refused). Detaching takes a brief ACCESS
// EXCLUSIVE lock on the table: PostgreSQL refuses `DETACH PARTITION … CONCURRENTLY` on a table with a
// DEFAULT partition, so the lock is asked for with a short `lock_timeout` and a run that does not get
// it tries again at the next (docs/operations.md, "Retention").
import { sql } from 'kysely';
import {
  monthBounds,
  PARTITIONED,
  partitionName,
  type MonthPartition,
  type PartitionedTable,
} from '../domain/retention.ts';
import type { Executor } from './executor.ts';

export type { MonthPartition, PartitionedTable };

const PARTITION_NAME = /_p(\d{4})_(\d{2})$/;

/** How long a detach waits for its lock before the run gives up on it until the next. */
const LOCK_TIMEOUT = '5s';

/** Rows of a partition, in key order, as the database gives them. */
export type PartitionRow = Record<string, unknown>;

/** One month archived and dropped, as `retention_archives` records it. */
export interface ArchivedMonth {
  readonly table: string;
  readonly month: string;
  readonly archive: string;
  readonly manifestSha256: string;
  readonly rows: number;
  readonly droppedAt: Date;
}

/** A partition that holds other rows than its archive: it changed after it was archived. */
export class PartitionChangedError extends Error {
  override readonly name = 'PartitionChangedError';
  constructor(partition: string, held: number, archived: number) {
    super(`${partition} holds ${held} rows, and its archive ${archived}: it changed after it was archived`);
  }
}

/** A retention run that has not finished: the one that holds retention while it runs. */
export interface RunningRetention {
  readonly id: string;
  readonly startedBy: string;
  readonly startedAt: Date;
  readonly heartbeatAt: Date;
}

/** How a run ended, and what it did (counts and words). */
export interface RetentionRunEnd {
  readonly outcome: 'succeeded' | 'failed';
  readonly summary: Record<string, number | string>;
}

export function retentionRepository(db: Executor) {
  const ident = (name: string) => sql.id(name);
  return {
    /** The month partitions of `table`, oldest first. */
    async partitions(table: PartitionedTable): Promise<MonthPartition[]> {
      const { rows } = await sql<{ name: string }>`
        select c.relname as name from pg_inherits i
          join pg_class c on c.oid = i.inhrelid
         where i.inhparent = ${table}::regclass`.execute(db);
      return rows
        .map((r) => ({ name: r.name, match: PARTITION_NAME.exec(r.name) }))
        .filter((r) => r.match !== null && r.name === partitionName(table, `${r.match[1]}-${r.match[2]}`))
        .map((r) => ({ table, name: r.name, month: `${r.match?.[1]}-${r.match?.[2]}` }))
        .sort((a, b) => (a.month < b.month ? -1 : a.month > b.month ? 1 : 0));
    },

    /** The months (`YYYY-MM`) the DEFAULT partition of `table` holds rows of, oldest first. */
    async monthsInDefault(table: PartitionedTable): Promise<string[]> {
      const column = PARTITIONED[table].column;
      const { rows } = await sql<{ month: string }>`
        select distinct to_char(${ident(column)} at time zone 'UTC', 'YYYY-MM') as month
          from ${ident(`${table}_default`)} order by 1`.execute(db);
      return rows.map((r) => r.month);
    },

    /**
     * Makes the partition of `month` for `table`. Where the DEFAULT partition holds rows of that month
     * (inserted while it had none), they move into it: the DEFAULT partition is detached, the month
     * made, its rows copied and deleted from the DEFAULT partition, which is attached again. Run it in
     * a transaction: meanwhile the table is locked, and writers wait rather than fail. Whether it made one.
     */
    async makeMonth(table: PartitionedTable, month: string): Promise<boolean> {
      const name = partitionName(table, month);
      const exists = await sql<{ found: boolean }>`select to_regclass(${name}) is not null as found`.execute(
        db,
      );
      if (exists.rows[0]?.found === true) return false;
      const { column } = PARTITIONED[table];
      const { from, to } = monthBounds(month);
      const fallback = `${table}_default`;
      const caught = await sql<{ found: boolean }>`
        select exists (select 1 from ${ident(fallback)}
                        where ${ident(column)} >= ${from} and ${ident(column)} < ${to}) as found`.execute(db);
      const bounds = sql.raw(`FROM ('${from.toISOString()}') TO ('${to.toISOString()}')`);
      if (caught.rows[0]?.found !== true) {
        await sql`create table ${ident(name)} partition of ${ident(table)} for values ${bounds}`.execute(db);
        return true;
      }
      const identity = table === 'audit_events' || table === 'referral_events';
      await sql`alter table ${ident(table)} detach partition ${ident(fallback)}`.execute(db);
      await sql`create table ${ident(name)} partition of ${ident(table)} for values ${bounds}`.execute(db);
      await sql`
        insert into ${ident(table)} ${identity ? sql`overriding system value` : sql``}
        select * from ${ident(fallback)} where ${ident(column)} >= ${from} and ${ident(column)} < ${to}`.execute(
        db,
      );
      await sql`
        delete from ${ident(fallback)} where ${ident(column)} >= ${from} and ${ident(column)} < ${to}`.execute(
        db,
      );
      await sql`alter table ${ident(table)} attach partition ${ident(fallback)} default`.execute(db);
      return true;
    },

    /** How many rows the partition `name` holds. */
    async count(name: string): Promise<number> {
      const { rows } = await sql<{ n: string }>`select count(*) as n from ${ident(name)}`.execute(db);
      return Number(rows[0]?.n ?? 0);
    },

    /** Up to `limit` rows of the partition after the key `after`, in the order of its table's key. */
    async rows(partition: MonthPartition, after: string | undefined, limit: number): Promise<PartitionRow[]> {
      const key = PARTITIONED[partition.table].key;
      const { rows } = await sql<PartitionRow>`
        select * from ${ident(partition.name)}
         ${after === undefined ? sql`` : sql`where ${ident(key)} > ${after}`}
         order by ${ident(key)} limit ${limit}`.execute(db);
      return rows;
    },

    /**
     * Whether the partition holds work that has not ended, and must wait: an audit row the sealer has
     * not chained; a webhook delivery whose attempts so far are all `retrying` on a subscription still
     * enabled; a forward to the EHR whose attempts so far are all `retrying` while its referral's
     * forward is still queued. The event feed's rows have no end to wait for.
     */
    async holdsUnended(partition: MonthPartition): Promise<boolean> {
      const p = ident(partition.name);
      const query = {
        audit_events: sql<{ found: boolean }>`
          select exists (select 1 from ${p} where sealed_at is null) as found`,
        referral_events: sql<{ found: boolean }>`select false as found`,
        webhook_attempts: sql<{ found: boolean }>`
          select exists (
            select 1 from ${p} a join webhook_subscriptions s on s.id = a.subscription_id
             where a.outcome = 'retrying' and s.disabled_at is null
               and not exists (select 1 from webhook_attempts e
                                where e.subscription_id = a.subscription_id and e.event_id = a.event_id
                                  and e.outcome <> 'retrying')) as found`,
        ehr_submissions: sql<{ found: boolean }>`
          select exists (
            select 1 from ${p} a join referrals r on r.id = a.referral_id
             where a.outcome = 'retrying' and r.ehr_state = 'queued'
               and not exists (select 1 from ehr_submissions e
                                where e.referral_id = a.referral_id and e.version = a.version
                                  and e.outcome <> 'retrying')) as found`,
      }[partition.table];
      const { rows } = await query.execute(db);
      return rows[0]?.found === true;
    },

    /**
     * Detaches and drops the partition, after checking it still holds `rows` rows (the number its
     * archive holds), and records the archive: in one transaction (run it in one), under a lock asked
     * for with a short timeout. When they are not as many, PartitionChangedError: the transaction
     * rolls back, and nothing is detached or dropped.
     */
    async dropArchived(
      partition: MonthPartition,
      archived: Omit<ArchivedMonth, 'table' | 'month'>,
    ): Promise<void> {
      await sql`select set_config('lock_timeout', ${LOCK_TIMEOUT}, true)`.execute(db);
      await sql`alter table ${ident(partition.table)} detach partition ${ident(partition.name)}`.execute(db);
      const { rows } = await sql<{ n: string }>`select count(*) as n from ${ident(partition.name)}`.execute(
        db,
      );
      const held = Number(rows[0]?.n ?? -1);
      if (held !== archived.rows) throw new PartitionChangedError(partition.name, held, archived.rows);
      await sql`drop table ${ident(partition.name)}`.execute(db);
      await db
        .insertInto('retention_archives')
        .values({
          table_name: partition.table,
          month: partition.month,
          archive: archived.archive,
          manifest_sha256: archived.manifestSha256,
          rows: String(archived.rows),
          dropped_at: archived.droppedAt,
        })
        .execute();
    },

    /**
     * Starts run `id` unless another is running: one not heard from since `staleBefore` is ended as
     * `abandoned` first. Returns undefined when it started, or the run that holds retention. Run it
     * in a transaction.
     */
    async startRun(
      run: { readonly id: string; readonly startedBy: string; readonly now: Date },
      staleBefore: Date,
    ): Promise<RunningRetention | undefined> {
      await db
        .updateTable('retention_runs')
        .set({ finished_at: run.now, outcome: 'abandoned' })
        .where('finished_at', 'is', null)
        .where('heartbeat_at', '<', staleBefore)
        .execute();
      const started = await db
        .insertInto('retention_runs')
        .values({ id: run.id, started_by: run.startedBy, started_at: run.now, heartbeat_at: run.now })
        .onConflict((oc) => oc.doNothing())
        .returning('id')
        .executeTakeFirst();
      if (started !== undefined) return undefined;
      const holder = await db
        .selectFrom('retention_runs')
        .select(['id', 'started_by', 'started_at', 'heartbeat_at'])
        .where('finished_at', 'is', null)
        .executeTakeFirstOrThrow();
      return {
        id: holder.id,
        startedBy: holder.started_by,
        startedAt: holder.started_at,
        heartbeatAt: holder.heartbeat_at,
      };
    },

    /** Run `id` is alive at `now`; false when it no longer holds retention (it was ended as abandoned). */
    async heartbeat(id: string, now: Date): Promise<boolean> {
      const result = await db
        .updateTable('retention_runs')
        .set({ heartbeat_at: now })
        .where('id', '=', id)
        .where('finished_at', 'is', null)
        .executeTakeFirst();
      return result.numUpdatedRows > 0n;
    },

    /** Ends run `id` (if it still holds retention). */
    async finishRun(id: string, now: Date, end: RetentionRunEnd): Promise<void> {
      await db
        .updateTable('retention_runs')
        .set({ finished_at: now, outcome: end.outcome, summary: JSON.stringify(end.summary) })
        .where('id', '=', id)
        .where('finished_at', 'is', null)
        .execute();
    },

    /** The run that finished last, and how it ended; undefined before the first has finished. */
    async lastFinishedRun(): Promise<
      { readonly outcome: string; readonly startedBy: string; readonly finishedAt: Date } | undefined
    > {
      const row = await db
        .selectFrom('retention_runs')
        .select(['outcome', 'started_by', 'finished_at'])
        .where('finished_at', 'is not', null)
        .orderBy('finished_at', 'desc')
        .limit(1)
        .executeTakeFirst();
      if (row?.outcome == null || row.finished_at === null) return undefined;
      return { outcome: row.outcome, startedBy: row.started_by, finishedAt: row.finished_at };
    },

    /** The months archived and dropped, of `table` or of every table. */
    async archived(table?: PartitionedTable): Promise<ArchivedMonth[]> {
      let query = db.selectFrom('retention_archives').selectAll();
      if (table !== undefined) query = query.where('table_name', '=', table);
      const rows = await query.orderBy('table_name').orderBy('month').execute();
      return rows.map((r) => ({
        table: r.table_name,
        month: r.month,
        archive: r.archive,
        manifestSha256: r.manifest_sha256,
        rows: Number(r.rows),
        droppedAt: r.dropped_at,
      }));
    },
  };
}

export type RetentionRepository = ReturnType<typeof retentionRepository>;
