// The burst scenario: three bursts of submits on one database, one after another, each burst's forward
// rate measured from outside (from the burst's first submit to its last delivery at the sandbox EHR).
// A service whose forward rate falls from one burst to the next carries something from the work it
// has done into the work it does: a table or index that grows without being cleaned, a plan that
// degrades with size, an in-memory structure that grows. The forward scenario interleaves its rounds
// with the bare pipeline's; here refhub's bursts follow each other on refhub's database with nothing
// between them but the tail of the burst before, and so do the baseline's on its own.
//
// The baseline is the durable bare pipeline (bare-pipeline.ts with BARE_DURABLE): the same rows per
// submit and per forward as refhub writes, the patient data sealed and opened. After each burst the
// scenario records what each side's database holds and did (live and dead rows, sequential scans and
// the rows they read, per table), so a fall comes with where the work went.
import type { Kysely } from 'kysely';
import { sql } from 'kysely';
import type pg from 'pg';
import type { BenchEnv } from '../environment.ts';
import { medianOfRounds, roundRows, type ResultRow } from '../stats.ts';
import { bareSide, burst, refhubSide, settle, type BurstFigures, type ForwardPlan } from './forward.ts';
import type { Database } from '../../src/db/schema.ts';

/** The goal: the last burst's forward rate within 10% of the first's. */
export const BURST_GOAL = { minTrend: 0.9 } as const;

/** One table's counters, from pg_stat_user_tables. */
export interface TableActivity {
  readonly table: string;
  readonly live: number;
  readonly dead: number;
  readonly inserted: number;
  readonly seqScans: number;
  readonly seqRowsRead: number;
  readonly indexScans: number;
}

const ACTIVITY_SQL = `
  SELECT relname AS "table", n_live_tup AS live, n_dead_tup AS dead, n_tup_ins AS inserted,
         seq_scan AS "seqScans", seq_tup_read AS "seqRowsRead", coalesce(idx_scan, 0) AS "indexScans"
  FROM pg_stat_user_tables ORDER BY relname`;

function numbers(rows: Record<string, unknown>[]): TableActivity[] {
  return rows.map((r) => ({
    table: String(r.table),
    live: Number(r.live),
    dead: Number(r.dead),
    inserted: Number(r.inserted),
    seqScans: Number(r.seqScans),
    seqRowsRead: Number(r.seqRowsRead),
    indexScans: Number(r.indexScans),
  }));
}

async function refhubActivity(db: Kysely<Database>): Promise<TableActivity[]> {
  // The statistics collector publishes at the end of a transaction; a fresh snapshot is read here.
  await sql`select pg_stat_clear_snapshot()`.execute(db);
  return numbers((await sql.raw<Record<string, unknown>>(ACTIVITY_SQL).execute(db)).rows);
}

async function bareActivity(client: pg.Client): Promise<TableActivity[]> {
  await client.query('select pg_stat_clear_snapshot()');
  return numbers((await client.query<Record<string, unknown>>(ACTIVITY_SQL)).rows);
}

/** What changed in each table between two snapshots, per referral of the burst (tables that moved). */
export function activityPerReferral(
  before: readonly TableActivity[],
  after: readonly TableActivity[],
  referrals: number,
): Record<string, { inserted: number; seqScans: number; seqRowsRead: number; live: number; dead: number }> {
  const was = new Map(before.map((t) => [t.table, t]));
  const out: Record<
    string,
    { inserted: number; seqScans: number; seqRowsRead: number; live: number; dead: number }
  > = {};
  for (const t of after) {
    const b = was.get(t.table);
    const inserted = t.inserted - (b?.inserted ?? 0);
    const seqScans = t.seqScans - (b?.seqScans ?? 0);
    const seqRowsRead = t.seqRowsRead - (b?.seqRowsRead ?? 0);
    if (inserted === 0 && seqScans === 0) continue;
    out[t.table] = {
      inserted: Math.round((inserted / referrals) * 100) / 100,
      seqScans,
      seqRowsRead,
      live: t.live,
      dead: t.dead,
    };
  }
  return out;
}

/** One statement's share of a burst, from pg_stat_statements. */
export interface StatementTime {
  readonly query: string;
  readonly calls: number;
  readonly totalMs: number;
  readonly meanMs: number;
  readonly rowsPerCall: number;
  readonly pagesPerCall: number;
}

/**
 * pg_stat_statements of refhub's database, when the server loads it (shared_preload_libraries): reset
 * before each burst and read after it, so a burst's statements are its own. Undefined otherwise.
 */
async function statementTimes(db: Kysely<Database>) {
  try {
    await sql`create extension if not exists pg_stat_statements`.execute(db);
    await sql`select pg_stat_statements_reset()`.execute(db);
  } catch {
    return undefined;
  }
  return {
    reset: async () => {
      await sql`select pg_stat_statements_reset()`.execute(db);
    },
    top: async (n: number): Promise<StatementTime[]> => {
      const { rows } = await sql<Record<string, unknown>>`
        select left(regexp_replace(query, '[[:space:]]+', ' ', 'g'), 160) as query, calls,
               total_exec_time as total, mean_exec_time as mean, rows,
               shared_blks_hit + shared_blks_read as pages
        from pg_stat_statements s join pg_database d on d.oid = s.dbid
        where d.datname = current_database()
        order by total_exec_time desc limit ${n}`.execute(db);
      return rows.map((r) => ({
        query: String(r.query),
        calls: Number(r.calls),
        totalMs: Math.round(Number(r.total)),
        meanMs: Math.round(Number(r.mean) * 1000) / 1000,
        rowsPerCall: Math.round((Number(r.rows) / Number(r.calls)) * 10) / 10,
        pagesPerCall: Math.round((Number(r.pages) / Number(r.calls)) * 10) / 10,
      }));
    },
  };
}

export async function burstScenario(env: BenchEnv, plan: ForwardPlan): Promise<ResultRow[]> {
  const refhub = refhubSide(env.refhub.address, [env.refhub], {
    parties: env.parties,
    pool: env.forwardPool,
    db: env.db,
  });
  const bare = env.bare === undefined ? undefined : bareSide(env, env.bare);
  await settle(env);
  const figures: { refhub: BurstFigures[]; bare: BurstFigures[] } = { refhub: [], bare: [] };
  const tables: { refhub: unknown[]; bare: unknown[]; statements: StatementTime[][] } = {
    refhub: [],
    bare: [],
    statements: [],
  };
  const statements = env.db === undefined ? undefined : await statementTimes(env.db);
  for (let round = 1; round <= plan.rounds; round++) {
    const before = env.db === undefined ? [] : await refhubActivity(env.db);
    await statements?.reset();
    const r = await burst(env, refhub, plan);
    const top = await statements?.top(12);
    if (top !== undefined) {
      tables.statements.push(top);
      env.log(`  burst ${round}: refhub's statements by time:`);
      for (const t of top)
        env.log(
          `    ${t.totalMs} ms, ${t.calls} calls, ${t.meanMs} ms, ${t.pagesPerCall} pages, ${t.rowsPerCall} rows: ${t.query}`,
        );
    }
    figures.refhub.push(r);
    // The tail (ledger rows, reminder schedules) settles before the next burst.
    await settle(env);
    if (env.db !== undefined) {
      const activity = activityPerReferral(before, await refhubActivity(env.db), plan.burst);
      tables.refhub.push(activity);
      env.log(`  burst ${round}: refhub tables ${JSON.stringify(activity)}`);
    }
    env.log(
      `  burst ${round}: refhub ${Math.round(r.delivery.rate)} referrals/s, submits ${Math.round(r.submit.rate)}/s, CPU ${r.cpuMsPerReferral.toFixed(2)} ms per referral, machine busy ${Math.round(r.machineBusy * 100)}%`,
    );
  }
  if (bare !== undefined && env.bare !== undefined) {
    for (let round = 1; round <= plan.rounds; round++) {
      const before = await bareActivity(env.bare.client);
      const b = await burst(env, bare, plan);
      figures.bare.push(b);
      await settle(env, 180_000, undefined);
      const activity = activityPerReferral(before, await bareActivity(env.bare.client), plan.burst);
      tables.bare.push(activity);
      env.log(`  burst ${round}: bare tables ${JSON.stringify(activity)}`);
      env.log(
        `  burst ${round}: bare ${Math.round(b.delivery.rate)} referrals/s, submits ${Math.round(b.submit.rate)}/s, CPU ${b.cpuMsPerReferral.toFixed(2)} ms per referral, machine busy ${Math.round(b.machineBusy * 100)}%`,
      );
    }
  }
  const row: ResultRow = {
    scenario: 'burst',
    unit: 'referrals/s',
    percentiles: ['p50', 'p95'],
    refhub: medianOfRounds(figures.refhub.map((f) => f.delivery)),
    baseline: figures.bare.length === 0 ? null : medianOfRounds(figures.bare.map((f) => f.delivery)),
    baselineName:
      bare === undefined
        ? 'none (the bare pipeline runs on PostgreSQL only)'
        : 'the durable bare pipeline: the same rows per submit and per forward, patient data sealed and opened',
    rounds: plan.rounds,
    note:
      `${plan.rounds} bursts of ${plan.burst} submits on one database, one after another; the rate is from ` +
      `a burst's first submit to its last delivery at the sandbox EHR`,
  };
  const rounds = roundRows(row, {
    refhub: figures.refhub.map((f) => f.delivery),
    baseline: figures.bare.length === 0 ? null : figures.bare.map((f) => f.delivery),
  });
  const trend = rounds.at(-1);
  return [
    row,
    ...rounds.map((r) =>
      r === trend
        ? {
            ...r,
            goal: {
              met: r.refhub.rate >= BURST_GOAL.minTrend && r.refhub.errors === 0,
              text: `last burst ≥ ${BURST_GOAL.minTrend * 100}% of the first`,
            },
          }
        : r,
    ),
  ];
}
