// The benchmark's arithmetic: percentiles, the interleaved schedule, medians of rounds, ratios and
// goals. Timings mean nothing in a test; what is computed from them must still be right.
import { describe, expect, it } from 'vitest';
import {
  formatTable,
  interleavedSchedule,
  median,
  medianOfRounds,
  memoryRow,
  percentile,
  ratio,
  ratiosOf,
  roundRows,
  runInterleaved,
  throughputGoal,
  trend,
  trendOf,
  type Measurement,
  type ResultRow,
} from '../../../bench/stats.ts';

const run = (rate: number, p50: number, tail: number, errors = 0): Measurement => ({
  rate,
  p50,
  tail,
  rssMiB: 100,
  errors,
});

const row = (refhub: Measurement, baseline: Measurement): ResultRow => ({
  scenario: 'get',
  unit: 'req/s',
  refhub,
  baseline,
  baselineName: 'bare',
  rounds: 3,
});

describe('percentile', () => {
  it('takes the nearest rank, whatever the order of the values', () => {
    const values = [5, 1, 4, 2, 3, 10, 9, 8, 7, 6];
    expect(percentile(values, 50)).toBe(5);
    expect(percentile(values, 90)).toBe(9);
    expect(percentile(values, 95)).toBe(10);
    expect(percentile(values, 99)).toBe(10);
    expect(percentile(values, 0)).toBe(1);
    expect(percentile(values, 100)).toBe(10);
    expect(percentile([42], 99)).toBe(42);
  });

  it('is NaN for no values and refuses a percentile outside 0–100', () => {
    expect(percentile([], 50)).toBeNaN();
    expect(() => percentile([1], 101)).toThrow(RangeError);
  });

  it('does not reorder the caller’s array', () => {
    const values = [3, 1, 2];
    percentile(values, 50);
    expect(values).toEqual([3, 1, 2]);
  });
});

describe('median', () => {
  it('is the middle value, or the mean of the two middle ones', () => {
    expect(median([3, 1, 2])).toBe(2);
    expect(median([4, 1, 3, 2])).toBe(2.5);
    expect(median([])).toBeNaN();
  });
});

describe('interleaving', () => {
  it('alternates refhub and its baseline, round by round', () => {
    expect(interleavedSchedule(3).map((t) => `${t.side[0]}${t.round}`)).toEqual([
      'r1',
      'b1',
      'r2',
      'b2',
      'r3',
      'b3',
    ]);
    expect(() => interleavedSchedule(0)).toThrow(RangeError);
  });

  it('runs the turns one after another, in that order, and groups the results by side', async () => {
    const calls: string[] = [];
    let running = 0;
    const results = await runInterleaved(2, async (turn) => {
      running++;
      expect(running).toBe(1);
      calls.push(`${turn.side}${turn.round}`);
      await new Promise((resolve) => setTimeout(resolve, 1));
      running--;
      return run(turn.side === 'refhub' ? turn.round : 10 * turn.round, 1, 2);
    });
    expect(calls).toEqual(['refhub1', 'baseline1', 'refhub2', 'baseline2']);
    expect(results.refhub.map((m) => m.rate)).toEqual([1, 2]);
    expect(results.baseline.map((m) => m.rate)).toEqual([10, 20]);
  });

  it('takes each side’s median round, metric by metric, and keeps every error', () => {
    const merged = medianOfRounds([run(100, 5, 50, 1), run(300, 1, 10), run(200, 3, 90, 2)]);
    expect(merged).toEqual({ rate: 200, p50: 3, tail: 50, rssMiB: 100, errors: 3 });
  });
});

describe('ratios and goals', () => {
  it('divides refhub by its baseline, and gives NaN where there is nothing to divide by', () => {
    expect(ratio(500, 1000)).toBe(0.5);
    expect(ratio(1, 0)).toBeNaN();
    expect(ratio(Number.NaN, 1)).toBeNaN();
    expect(ratiosOf(row(run(600, 10, 30), run(1000, 5, 20)))).toEqual({ rate: 0.6, tail: 1.5 });
    expect(ratiosOf({ ...row(run(1, 1, 1), run(1, 1, 1)), baseline: null })).toEqual({
      rate: Number.NaN,
      tail: Number.NaN,
    });
  });

  it('meets a throughput goal only at the rate, within the tail, and without errors', () => {
    const baseline = run(1000, 5, 20);
    expect(throughputGoal(row(run(500, 9, 50), baseline), 0.5, 2.5).met).toBe(true);
    expect(throughputGoal(row(run(499, 9, 50), baseline), 0.5, 2.5).met).toBe(false);
    expect(throughputGoal(row(run(900, 9, 51), baseline), 0.5, 2.5).met).toBe(false);
    expect(throughputGoal(row(run(900, 9, 10, 1), baseline), 0.5, 2.5).met).toBe(false);
    expect(throughputGoal(row(run(900, 9, 10), baseline), 0.5, 2.5).text).toBe(
      'rate ≥ 50%, p99 ≤ 2.5× baseline',
    );
  });
});

describe('the table', () => {
  it('shows each side, the ratios and the goal, and explains every row', () => {
    const table = formatTable([
      { ...row(run(612.4, 70, 140), run(1020, 40, 80)), goal: { text: 'rate ≥ 50%', met: true } },
      {
        scenario: 'forward idle',
        unit: 'ms',
        percentiles: ['p50', 'p95'],
        refhub: { rate: Number.NaN, p50: 101, tail: 130, rssMiB: Number.NaN, errors: 0 },
        baseline: null,
        baselineName: 'one job',
        rounds: 1,
      },
    ]);
    const [header, , first, second] = table.split('\n');
    expect(header).toMatch(/^scenario\s+unit\s+refhub rate/);
    expect(first).toMatch(
      /^get\s+req\/s \(p50\/p99\)\s+612\s+70\.0\s+140\s+100\s+1020\s+40\.0\s+80\.0\s+100\s+0\.60\s+1\.75\s+met$/,
    );
    expect(second).toMatch(/^forward idle\s+ms \(p50\/p95\)\s+–\s+101\s+130\s+–/);
    expect(table).toContain('get: baseline: bare; goal: rate ≥ 50% (met)');
    expect(table).toContain('forward idle: baseline: one job');
  });
});

describe('the memory goal', () => {
  const at = (scenario: string, rssMiB: number): ResultRow => ({
    ...row({ ...run(100, 1, 2), rssMiB }, run(100, 1, 2)),
    scenario,
  });

  it('takes the highest RSS of any scenario, and names it', () => {
    const memory = memoryRow([at('get', 180), at('forward', 262), at('render', Number.NaN)]);
    expect(memory?.refhub.rssMiB).toBe(262);
    expect(memory?.goal?.met).toBe(false);
    expect(memory?.note).toBe('highest in forward; by scenario: get 180, forward 262');
  });

  it('is met only at or below the ceiling', () => {
    expect(memoryRow([at('get', 250)])?.goal?.met).toBe(true);
    expect(memoryRow([at('get', 250.1)])?.goal?.met).toBe(false);
  });

  it('counts the whole run’s peak when it is above every measured run’s', () => {
    const settings = 'with the settings npm start uses';
    const higher = memoryRow([at('get', 180)], 250, { peakMiB: 262, settings });
    expect(higher?.refhub.rssMiB).toBe(262);
    expect(higher?.goal?.met).toBe(false);
    expect(higher?.note).toBe(
      `highest between measured runs; whole-run peak 262 MiB, sampled every 250 ms, ${settings}; by scenario: get 180`,
    );
    const lower = memoryRow([at('get', 180)], 250, { peakMiB: 170, settings });
    expect(lower?.refhub.rssMiB).toBe(180);
    expect(lower?.note?.startsWith('highest in get')).toBe(true);
  });

  it('leaves out rows whose RSS is not that of one refhub all', () => {
    const memory = memoryRow([at('get', 180), { ...at('scale-out', 900), refhubAll: false }]);
    expect(memory?.refhub.rssMiB).toBe(180);
    expect(memory?.note).toBe('highest in get; by scenario: get 180');
  });

  it('is left out when no scenario measured the process', () => {
    expect(memoryRow([at('render', 0)])).toBeUndefined();
  });
});

describe('rounds on one database', () => {
  // Three rounds of each side, run A B A B A B on the same database: refhub slows, the baseline does not.
  const refhubRounds = [run(300, 10, 40), run(185, 20, 60), run(150, 30, 80, 1)];
  const baselineRounds = [run(900, 5, 20), run(1070, 4, 18), run(1170, 4, 16)];
  const forward: ResultRow = {
    scenario: 'forward',
    unit: 'referrals/s',
    percentiles: ['p50', 'p95'],
    refhub: medianOfRounds(refhubRounds),
    baseline: medianOfRounds(baselineRounds),
    baselineName: 'bare pipeline',
    rounds: 3,
    goal: { text: 'rate ≥ 50%', met: false },
  };

  it('takes the last round over the first, and NaN where there is no such ratio', () => {
    expect(trend([300, 185, 150])).toBe(0.5);
    expect(trend([900, 1070, 1170])).toBe(1.3);
    expect(trend([42])).toBeNaN();
    expect(trend([])).toBeNaN();
    expect(trend([0, 5])).toBeNaN();
    expect(trend([Number.NaN, 5])).toBeNaN();
  });

  it('gives the trend of rate, p50 and tail, and keeps every round’s errors', () => {
    expect(trendOf(refhubRounds)).toEqual({ rate: 0.5, p50: 3, tail: 2, rssMiB: 1, errors: 1 });
  });

  it('makes a row per round, each side’s own round beside the other’s, in the order they ran', () => {
    const rows = roundRows(forward, { refhub: refhubRounds, baseline: baselineRounds });
    expect(rows.map((r) => r.scenario)).toEqual([
      'forward round 1',
      'forward round 2',
      'forward round 3',
      'forward trend',
    ]);
    const [first, second, third] = rows;
    expect(first?.refhub).toEqual(refhubRounds[0]);
    expect(first?.baseline).toEqual(baselineRounds[0]);
    expect(third?.refhub.errors).toBe(1);
    expect(ratiosOf(second ?? forward).rate).toBeCloseTo(185 / 1070, 10);
    expect(rows.map((r) => r.rounds)).toEqual([1, 1, 1, 3]);
    for (const r of rows) {
      expect(r.goal).toBeUndefined();
      expect(r.percentiles).toEqual(['p50', 'p95']);
      expect(r.baselineName).toBe('bare pipeline');
    }
    expect(rows.map((r) => r.round)).toEqual([1, 2, 3, 'trend']);
  });

  it('ends with each side’s trend, last round ÷ first, and their ratio', () => {
    const trendRow = roundRows(forward, { refhub: refhubRounds, baseline: baselineRounds }).at(-1);
    expect(trendRow?.unit).toBe('last ÷ first round');
    expect(trendRow?.refhub.rate).toBe(0.5);
    expect(trendRow?.baseline?.rate).toBe(1.3);
    expect(trendRow?.refhub.tail).toBe(2);
    expect(ratiosOf(trendRow ?? forward).rate).toBeCloseTo(0.5 / 1.3, 10);
  });

  it('adds each round’s own note, and none for a single round', () => {
    const rows = roundRows(
      forward,
      { refhub: refhubRounds, baseline: baselineRounds },
      (round) => `refhub CPU ${round} ms per referral`,
    );
    expect(rows[1]?.note).toBe('refhub CPU 2 ms per referral');
    expect(rows.at(-1)?.note).toBeUndefined();
    expect(roundRows(forward, { refhub: [run(1, 1, 1)], baseline: [run(2, 2, 2)] })).toEqual([]);
  });

  it('works without a baseline, and refuses rounds that do not pair up', () => {
    const rows = roundRows({ ...forward, baseline: null }, { refhub: refhubRounds, baseline: null });
    expect(rows.map((r) => r.baseline)).toEqual([null, null, null, null]);
    expect(rows.at(-1)?.refhub.rate).toBe(0.5);
    expect(() => roundRows(forward, { refhub: refhubRounds, baseline: baselineRounds.slice(1) })).toThrow(
      RangeError,
    );
  });

  it('shows the rounds in the table and leaves them out of the memory goal', () => {
    const rows = [forward, ...roundRows(forward, { refhub: refhubRounds, baseline: baselineRounds })];
    const lines = formatTable(rows).split('\n');
    expect(lines.find((l) => l.startsWith('forward round 2'))).toMatch(
      /^forward round 2\s+referrals\/s \(p50\/p95\)\s+185\s+20\.0\s+60\.0\s+100\s+1070\s+4\.00\s+18\.0\s+100\s+0\.17\s+3\.33$/,
    );
    expect(lines.find((l) => l.startsWith('forward trend'))).toMatch(
      /^forward trend\s+last ÷ first round \(p50\/p95\)\s+0\.500\s+3\.00\s+2\.00\s+1\.00\s+1\.30\s+0\.800\s+0\.800\s+1\.00\s+0\.38\s+2\.50$/,
    );
    expect(memoryRow(rows)?.note).toBe('highest in forward; by scenario: forward 100');
  });

  it('explains a round only with what that round measured, not the baseline again', () => {
    const rows = [
      forward,
      ...roundRows(forward, { refhub: refhubRounds, baseline: baselineRounds }, (round) =>
        round === 2 ? 'refhub: CPU 8.0 ms per referral' : undefined,
      ),
    ];
    const notes = formatTable(rows)
      .split('\n')
      .filter((l) => l.startsWith('  '));
    expect(notes).toEqual([
      '  forward: baseline: bare pipeline; goal: rate ≥ 50% (NOT met); errors: refhub 1, baseline 0',
      '  forward round 2: refhub: CPU 8.0 ms per referral',
      '  forward round 3: errors: refhub 1, baseline 0',
      '  forward trend: errors: refhub 1, baseline 0',
    ]);
  });
});
