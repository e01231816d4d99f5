// The EHR's circuit, one row shared by every worker (workers/forwarding/ehr-circuit.ts decides; this module
// only reads and changes the row). Every change is a single conditional UPDATE, so two workers that
// race to open, probe or close it cannot both win.
import { sql } from 'kysely';
import type { Executor } from '../executor.ts';

const NAME = 'ehr';

export interface CircuitRow {
  readonly state: 'closed' | 'open';
  readonly failures: number;
  readonly openedAt: Date | null;
  readonly probeAt: Date | null;
  readonly probeIntervalMs: number | null;
  readonly probingUntil: Date | null;
}

export function ehrCircuitRepository(db: Executor) {
  return {
    async read(): Promise<CircuitRow> {
      const row = await db
        .selectFrom('ehr_circuit')
        .select(['state', 'failures', 'opened_at', 'probe_at', 'probe_interval_ms', 'probing_until'])
        .where('name', '=', NAME)
        .executeTakeFirstOrThrow();
      return {
        state: row.state,
        failures: row.failures,
        openedAt: row.opened_at,
        probeAt: row.probe_at,
        probeIntervalMs: row.probe_interval_ms,
        probingUntil: row.probing_until,
      };
    },

    /** Counts a failure while closed; a window older than `windowStart` starts again. */
    async countFailure(now: Date, windowStart: Date): Promise<number | undefined> {
      const row = await db
        .updateTable('ehr_circuit')
        .set({
          failures: sql<number>`case when window_started_at is null or window_started_at < ${windowStart} then 1 else failures + 1 end`,
          window_started_at: sql<Date>`case when window_started_at is null or window_started_at < ${windowStart} then ${now} else window_started_at end`,
          updated_at: now,
        })
        .where('name', '=', NAME)
        .where('state', '=', 'closed')
        .returning('failures')
        .executeTakeFirst();
      return row?.failures;
    },

    /** An answer from the EHR while closed: the count of failures in a row starts again. */
    async resetFailures(now: Date): Promise<void> {
      await db
        .updateTable('ehr_circuit')
        .set({ failures: 0, window_started_at: null, updated_at: now })
        .where('name', '=', NAME)
        .where('state', '=', 'closed')
        .where('failures', '>', 0)
        .execute();
    },

    /** Opens a closed circuit; false when another worker opened it first. */
    async open(now: Date, probeIntervalMs: number): Promise<boolean> {
      const rows = await db
        .updateTable('ehr_circuit')
        .set({
          state: 'open',
          opened_at: now,
          probe_interval_ms: probeIntervalMs,
          probe_at: new Date(now.getTime() + probeIntervalMs),
          probing_until: null,
          updated_at: now,
        })
        .where('name', '=', NAME)
        .where('state', '=', 'closed')
        .returning('name')
        .execute();
      return rows.length === 1;
    },

    /** Claims the one probe of an open circuit that is due; false when it is not due or taken. */
    async claimProbe(now: Date, leaseUntil: Date): Promise<boolean> {
      const rows = await db
        .updateTable('ehr_circuit')
        .set({ probing_until: leaseUntil, updated_at: now })
        .where('name', '=', NAME)
        .where('state', '=', 'open')
        .where('probe_at', '<=', now)
        .where((eb) => eb.or([eb('probing_until', 'is', null), eb('probing_until', '<', now)]))
        .returning('name')
        .execute();
      return rows.length === 1;
    },

    /** A probe failed: the next one waits `probeIntervalMs`. */
    async reschedule(now: Date, probeIntervalMs: number): Promise<void> {
      await db
        .updateTable('ehr_circuit')
        .set({
          probe_interval_ms: probeIntervalMs,
          probe_at: new Date(now.getTime() + probeIntervalMs),
          probing_until: null,
          updated_at: now,
        })
        .where('name', '=', NAME)
        .where('state', '=', 'open')
        .execute();
    },

    /** Closes an open circuit; false when it was not open (another worker closed it). */
    async close(now: Date): Promise<boolean> {
      const rows = await db
        .updateTable('ehr_circuit')
        .set({
          state: 'closed',
          failures: 0,
          window_started_at: null,
          opened_at: null,
          probe_at: null,
          probe_interval_ms: null,
          probing_until: null,
          updated_at: now,
        })
        .where('name', '=', NAME)
        .where('state', '=', 'open')
        .returning('name')
        .execute();
      return rows.length === 1;
    },
  };
}
