// The arithmetic of the benchmark: percentiles, medians of rounds, ratios against a baseline, the
// interleaved A B A B schedule, each round's row and the trend from first round to last, goal checks
// and the printed table. No I/O here, so `npm test` can check it on its own.
//
// Why ratios: the machine is shared and noisy, so an absolute figure means little from one run to the
// next. Every figure is set against a bare baseline measured in the same run, in rounds that alternate
// with refhub's (A B A B …), and each side's figure is the median of its rounds: a burst of noise from
// a neighbour then lands on one round of one side, not on the whole of it.

/** The p-th percentile (0–100) of `values` by the nearest-rank method; NaN for no values. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  if (p < 0 || p > 100) throw new RangeError(`percentile ${p} is outside 0–100`);
  const sorted = [...values].sort((a, b) => a - b);
  // Nearest rank: the smallest value with at least p% of the values at or below it.
  const rank = Math.max(1, Math.ceil((p / 100) * sorted.length));
  return sorted[rank - 1] ?? Number.NaN;
}

/** The middle value (the mean of the two middle ones for an even count); NaN for no values. */
export function median(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  const upper = sorted[mid] ?? Number.NaN;
  return sorted.length % 2 === 1 ? upper : ((sorted[mid - 1] ?? Number.NaN) + upper) / 2;
}

/** subject ÷ baseline; NaN when either is missing or the baseline is zero. */
export function ratio(subject: number, baseline: number): number {
  if (!Number.isFinite(subject) || !Number.isFinite(baseline) || baseline === 0) return Number.NaN;
  return subject / baseline;
}

export type Side = 'refhub' | 'baseline';

export interface Turn {
  readonly round: number;
  readonly side: Side;
}

/** The order of the runs: refhub, baseline, refhub, baseline, … for `rounds` rounds. */
export function interleavedSchedule(rounds: number): Turn[] {
  if (!Number.isInteger(rounds) || rounds < 1) throw new RangeError('at least one round');
  const turns: Turn[] = [];
  for (let round = 1; round <= rounds; round++) {
    turns.push({ round, side: 'refhub' }, { round, side: 'baseline' });
  }
  return turns;
}

/** What one run of one side measured. Rates are per second; latencies in milliseconds; RSS in MiB. */
export interface Measurement {
  readonly rate: number;
  readonly p50: number;
  /** The tail latency: p99, unless the row names another percentile (`ResultRow.percentiles`). */
  readonly tail: number;
  readonly rssMiB: number;
  /** Responses that were not 2xx, or jobs that did not finish: a run with any is not a valid figure. */
  readonly errors: number;
  /** The answers that were not 2xx, by HTTP status, where the load was HTTP. */
  readonly errorStatuses?: Readonly<Record<string, number>>;
}

/** Two counts by status added up. */
function addStatuses(
  a: Readonly<Record<string, number>> | undefined,
  b: Readonly<Record<string, number>> | undefined,
): Readonly<Record<string, number>> | undefined {
  if (a === undefined) return b;
  if (b === undefined) return a;
  const sum: Record<string, number> = { ...a };
  for (const [status, count] of Object.entries(b)) sum[status] = (sum[status] ?? 0) + count;
  return sum;
}

/** Runs `measure` on the interleaved schedule and returns each side's rounds in order. */
export async function runInterleaved(
  rounds: number,
  measure: (turn: Turn) => Promise<Measurement>,
): Promise<Record<Side, Measurement[]>> {
  const results: Record<Side, Measurement[]> = { refhub: [], baseline: [] };
  for (const turn of interleavedSchedule(rounds)) results[turn.side].push(await measure(turn));
  return results;
}

/** One side's figure: the median of its rounds, metric by metric; errors are summed, not hidden. */
export function medianOfRounds(rounds: readonly Measurement[]): Measurement {
  return {
    rate: median(rounds.map((r) => r.rate)),
    p50: median(rounds.map((r) => r.p50)),
    tail: median(rounds.map((r) => r.tail)),
    rssMiB: median(rounds.map((r) => r.rssMiB)),
    errors: rounds.reduce((sum, r) => sum + r.errors, 0),
    ...statusesOf(rounds),
  };
}

function statusesOf(rounds: readonly Measurement[]): { errorStatuses?: Readonly<Record<string, number>> } {
  const statuses = rounds.reduce<Readonly<Record<string, number>> | undefined>(
    (sum, r) => addStatuses(sum, r.errorStatuses),
    undefined,
  );
  return statuses === undefined ? {} : { errorStatuses: statuses };
}

/** The last value over the first: how a figure moved from the first round to the last (NaN for one). */
export function trend(values: readonly number[]): number {
  if (values.length < 2) return Number.NaN;
  return ratio(values.at(-1) ?? Number.NaN, values[0] ?? Number.NaN);
}

/**
 * How one side's rounds moved, metric by metric: the last round over the first. Rounds run on one
 * database, so a trend far below 1 (a rate) or above it (a latency) says that something grows with the
 * work done. Errors are summed, as in `medianOfRounds`.
 */
export function trendOf(rounds: readonly Measurement[]): Measurement {
  return {
    rate: trend(rounds.map((r) => r.rate)),
    p50: trend(rounds.map((r) => r.p50)),
    tail: trend(rounds.map((r) => r.tail)),
    rssMiB: trend(rounds.map((r) => r.rssMiB)),
    errors: rounds.reduce((sum, r) => sum + r.errors, 0),
  };
}

/**
 * A scenario's figure broken down by round: one row per round, with each side's own round (refhub's
 * round n beside the baseline's round n, which ran right after it), then a trend row with each side's
 * last round over its first. Nothing for a single round, which is the scenario's row already. `note`
 * adds what else a round measured (its CPU, how busy the machine was).
 */
export function roundRows(
  row: ResultRow,
  rounds: { readonly refhub: readonly Measurement[]; readonly baseline: readonly Measurement[] | null },
  note?: (round: number) => string | undefined,
): ResultRow[] {
  const { refhub, baseline } = rounds;
  if (baseline !== null && baseline.length !== refhub.length) {
    throw new RangeError(`${refhub.length} rounds of refhub against ${baseline.length} of the baseline`);
  }
  if (refhub.length < 2) return [];
  // The round rows keep the scenario's units and baseline; its goal and note are its own row's.
  const { unit, percentiles, baselineName, refhubAll } = row;
  const shape = {
    unit,
    baselineName,
    ...(percentiles === undefined ? {} : { percentiles }),
    ...(refhubAll === undefined ? {} : { refhubAll }),
  };
  const perRound = refhub.map((measured, i): ResultRow => {
    const text = note?.(i + 1);
    return {
      ...shape,
      scenario: `${row.scenario} round ${i + 1}`,
      refhub: measured,
      baseline: baseline?.[i] ?? null,
      rounds: 1,
      round: i + 1,
      ...(text === undefined ? {} : { note: text }),
    };
  });
  return [
    ...perRound,
    {
      ...shape,
      scenario: `${row.scenario} trend`,
      unit: 'last ÷ first round',
      refhub: trendOf(refhub),
      baseline: baseline === null ? null : trendOf(baseline),
      rounds: refhub.length,
      round: 'trend',
    },
  ];
}

export interface Goal {
  /** What the goal says, for the table ("≥ 50% of baseline req/s, p99 ≤ 2.5×"). */
  readonly text: string;
  readonly met: boolean;
}

/** A row of the results: one scenario, refhub beside its baseline. */
export interface ResultRow {
  readonly scenario: string;
  /** What `rate` counts: req/s, jobs/s, renders/s, referrals/s. */
  readonly unit: string;
  /** The percentiles of `p50` and `tail`, when not p50 and p99 (the forward scenario reports p95). */
  readonly percentiles?: readonly [string, string];
  readonly refhub: Measurement;
  readonly baseline: Measurement | null;
  /** What the baseline is, in a few words. */
  readonly baselineName: string;
  readonly rounds: number;
  readonly goal?: Goal;
  /** Anything the reader of the table should know (a fallback taken, a figure that is not a ratio). */
  readonly note?: string;
  /** False when `refhub.rssMiB` is not that of one `refhub all` (the memory goal leaves it out). */
  readonly refhubAll?: boolean;
  /**
   * Set on the rows that break a scenario's figure down (`roundRows`): the round it is, or `trend`
   * for the last round over the first. The memory goal reads the scenario's own row instead.
   */
  readonly round?: number | 'trend';
}

export interface RowRatios {
  readonly rate: number;
  readonly tail: number;
}

export function ratiosOf(row: ResultRow): RowRatios {
  if (row.baseline === null) return { rate: Number.NaN, tail: Number.NaN };
  return { rate: ratio(row.refhub.rate, row.baseline.rate), tail: ratio(row.refhub.tail, row.baseline.tail) };
}

/**
 * The throughput-and-tail goal of the API scenarios: refhub's rate at least `minRate` of the
 * baseline's, and its p99 at most `maxP99` times the baseline's.
 */
export function throughputGoal(row: ResultRow, minRate: number, maxP99: number): Goal {
  const r = ratiosOf(row);
  return {
    text: `rate ≥ ${Math.round(minRate * 100)}%, p99 ≤ ${maxP99}× baseline`,
    met: row.refhub.errors === 0 && r.rate >= minRate && r.tail <= maxP99,
  };
}

/** The ceiling on refhub's resident memory under load. */
export const RSS_LIMIT_MIB = 250;

/**
 * The memory goal as a row of its own: the highest RSS `refhub all` reached in any measured scenario
 * (each scenario's figure is already its median round's peak), against `limitMiB`. Undefined when no
 * scenario measured the process.
 */
export function memoryRow(
  rows: readonly ResultRow[],
  limitMiB = RSS_LIMIT_MIB,
  wholeRun?: { readonly peakMiB: number; readonly settings: string },
): ResultRow | undefined {
  const measured = rows.filter(
    (row) =>
      row.refhubAll !== false &&
      row.round === undefined &&
      Number.isFinite(row.refhub.rssMiB) &&
      row.refhub.rssMiB > 0,
  );
  if (measured.length === 0) return undefined;
  const worst = measured.reduce((a, b) => (b.refhub.rssMiB > a.refhub.rssMiB ? b : a));
  const peak = Math.max(worst.refhub.rssMiB, wholeRun?.peakMiB ?? 0);
  const where =
    wholeRun !== undefined && wholeRun.peakMiB > worst.refhub.rssMiB
      ? 'highest between measured runs'
      : `highest in ${worst.scenario}`;
  return {
    scenario: 'memory',
    unit: 'peak RSS MiB',
    refhub: { rate: Number.NaN, p50: Number.NaN, tail: Number.NaN, rssMiB: peak, errors: 0 },
    baseline: null,
    baselineName: 'none (a fixed ceiling)',
    rounds: worst.rounds,
    goal: { text: `RSS of refhub all ≤ ${limitMiB} MiB through the whole run`, met: peak <= limitMiB },
    note:
      where +
      (wholeRun === undefined
        ? ''
        : `; whole-run peak ${Math.round(wholeRun.peakMiB)} MiB, sampled every 250 ms, ${wholeRun.settings}`) +
      `; by scenario: ${measured.map((row) => `${row.scenario} ${Math.round(row.refhub.rssMiB)}`).join(', ')}`,
  };
}

function fixed(value: number, digits: number): string {
  return Number.isFinite(value) ? value.toFixed(digits) : '–';
}

/** A number the way the table shows it: three significant digits, whole numbers above 100. */
export function formatNumber(value: number): string {
  if (!Number.isFinite(value)) return '–';
  const abs = Math.abs(value);
  if (abs >= 100) return String(Math.round(value));
  if (abs >= 10) return value.toFixed(1);
  if (abs >= 1) return value.toFixed(2);
  return value.toFixed(3);
}

const COLUMNS = [
  'scenario',
  'unit',
  'refhub rate',
  'p50',
  'tail',
  'RSS MiB',
  'base rate',
  'p50',
  'tail',
  'RSS MiB',
  'rate ×',
  'tail ×',
  'goal',
] as const;

/** The rows as a plain-text table, one line per scenario, then each row's goal and note. */
export function formatTable(rows: readonly ResultRow[]): string {
  const cells = rows.map((row) => {
    const r = ratiosOf(row);
    const b = row.baseline;
    const goal = row.goal === undefined ? '' : row.goal.met ? 'met' : 'NOT met';
    return [
      row.scenario,
      `${row.unit} (${(row.percentiles ?? ['p50', 'p99']).join('/')})`,
      formatNumber(row.refhub.rate),
      formatNumber(row.refhub.p50),
      formatNumber(row.refhub.tail),
      formatNumber(row.refhub.rssMiB),
      b === null ? '' : formatNumber(b.rate),
      b === null ? '' : formatNumber(b.p50),
      b === null ? '' : formatNumber(b.tail),
      b === null ? '' : formatNumber(b.rssMiB),
      fixed(r.rate, 2),
      fixed(r.tail, 2),
      goal,
    ];
  });
  const widths = COLUMNS.map((title, i) => Math.max(title.length, ...cells.map((c) => (c[i] ?? '').length)));
  const line = (values: readonly string[]) =>
    values
      .map((v, i) => (i < 2 ? v.padEnd(widths[i] ?? 0) : v.padStart(widths[i] ?? 0)))
      .join('  ')
      .trimEnd();
  const out = [line(COLUMNS), line(widths.map((w) => '-'.repeat(w))), ...cells.map(line)];
  const notes = rows.flatMap((row) => {
    // A round's row has the scenario's baseline, named on the scenario's own line.
    const parts = row.round === undefined ? [`baseline: ${row.baselineName}`] : [];
    if (row.goal !== undefined) parts.push(`goal: ${row.goal.text} (${row.goal.met ? 'met' : 'NOT met'})`);
    if (row.refhub.errors > 0 || (row.baseline?.errors ?? 0) > 0) {
      const by = (m: Measurement | null | undefined) =>
        m?.errorStatuses === undefined || Object.keys(m.errorStatuses).length === 0
          ? ''
          : ` (${Object.entries(m.errorStatuses)
              .map(([status, count]) => `${count} × ${status}`)
              .join(', ')})`;
      parts.push(
        `errors: refhub ${row.refhub.errors}${by(row.refhub)}, baseline ${row.baseline?.errors ?? 0}${by(row.baseline)}`,
      );
    }
    if (row.note !== undefined) parts.push(row.note);
    return parts.length === 0 ? [] : [`  ${row.scenario}: ${parts.join('; ')}`];
  });
  return [...out, '', ...notes].join('\n');
}

/** The JSON document written to bench/results/latest.json. */
export interface ResultsDocument {
  readonly date: string;
  readonly engine: 'postgres' | 'pglite';
  readonly machine: { readonly cpus: number; readonly memoryGiB: number; readonly node: string };
  readonly durationSeconds: number;
  readonly rows: readonly (ResultRow & { readonly ratios: RowRatios })[];
  readonly extra: Readonly<Record<string, unknown>>;
}

export function resultsDocument(
  rows: readonly ResultRow[],
  meta: Omit<ResultsDocument, 'rows'>,
): ResultsDocument {
  return { ...meta, rows: rows.map((row) => ({ ...row, ratios: ratiosOf(row) })) };
}
