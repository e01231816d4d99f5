// Retention's rules as pure code (services/retention/, db/retention.repository.ts): the tables kept by
// month, the column each is partitioned by and the key its rows are read in, a month's bounds and
// names. Months are UTC, named `YYYY-MM`.

/** The partitioned tables, each with the column it is partitioned by and the key its rows are read in. */
export const PARTITIONED = {
  audit_events: { column: 'occurred_at', key: 'seq' },
  referral_events: { column: 'occurred_at', key: 'position' },
  webhook_attempts: { column: 'attempted_at', key: 'id' },
  ehr_submissions: { column: 'attempted_at', key: 'id' },
} as const;

export type PartitionedTable = keyof typeof PARTITIONED;

export const PARTITIONED_TABLES = Object.keys(PARTITIONED) as PartitionedTable[];

/** A month partition: its table, its name and its month (`YYYY-MM`, UTC). */
export interface MonthPartition {
  readonly table: PartitionedTable;
  readonly name: string;
  readonly month: string;
}

/** The first instant of the UTC month `month` (`YYYY-MM`), and of the one after. */
export function monthBounds(month: string): { from: Date; to: Date } {
  const [year, number] = month.split('-').map(Number) as [number, number];
  return { from: new Date(Date.UTC(year, number - 1, 1)), to: new Date(Date.UTC(year, number, 1)) };
}

/** The month (`YYYY-MM`, UTC) `months` after the one `at` is in (before, for a negative count). */
export function monthOf(at: Date, months = 0): string {
  return new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth() + months, 1)).toISOString().slice(0, 7);
}

/** A month's partition of `table`: `audit_events_p2026_11`. */
export function partitionName(table: PartitionedTable, month: string): string {
  return `${table}_p${month.replace('-', '_')}`;
}
