// The API scenarios, each refhub beside a bare baseline on the same database, 50 connections, in
// interleaved rounds:
//
// - get:   GET /api/v1/referrals/{id} of a random one of the reader's 10,000 referrals, against
//          GET /read/{id} (one row read by key and one audit row inserted, in one transaction).
// - list:  GET /api/v1/institutions/hci/{id}/referrals?pageSize=50 for that institution, against
//          the same baseline.
// - write: submit a draft, then cancel it, each POST with an Idempotency-Key, against POST /write
//          (one row inserted in a transaction).
import type autocannon from 'autocannon';
import type { BenchEnv } from '../environment.ts';
import { getEach, jsonHeaders, measureHttp } from '../load.ts';
import { BENCH_REQUESTER } from '../seed.ts';
import {
  medianOfRounds,
  runInterleaved,
  throughputGoal,
  type Goal,
  type Measurement,
  type ResultRow,
} from '../stats.ts';

export interface RoundPlan {
  readonly rounds: number;
  /** Seconds per measured run of each side. */
  readonly seconds: number;
  /** Seconds of unmeasured load on each side first (JIT, pools, caches). */
  readonly warmupSeconds: number;
  readonly connections: number;
}

interface Sides {
  readonly name: string;
  readonly baselineName: string;
  readonly refhub: (seconds: number) => Promise<Measurement>;
  readonly baseline: (seconds: number) => Promise<Measurement>;
  readonly goal?: (row: ResultRow) => Goal;
  readonly note?: () => string | undefined;
}

async function compare(plan: RoundPlan, sides: Sides): Promise<ResultRow> {
  await sides.refhub(plan.warmupSeconds);
  await sides.baseline(plan.warmupSeconds);
  const rounds = await runInterleaved(plan.rounds, (turn) =>
    turn.side === 'refhub' ? sides.refhub(plan.seconds) : sides.baseline(plan.seconds),
  );
  const row: ResultRow = {
    scenario: sides.name,
    unit: 'req/s',
    refhub: medianOfRounds(rounds.refhub),
    baseline: medianOfRounds(rounds.baseline),
    baselineName: sides.baselineName,
    rounds: plan.rounds,
  };
  const note = sides.note?.();
  return {
    ...row,
    ...(sides.goal === undefined ? {} : { goal: sides.goal(row) }),
    ...(note === undefined ? {} : { note }),
  };
}

function randomOf<T>(items: readonly T[]): T {
  const item = items[Math.floor(Math.random() * items.length)];
  if (item === undefined) throw new Error('nothing to pick from');
  return item;
}

/** The baseline's audited read of one of the reader's referrals. */
function baselineRead(env: BenchEnv, plan: RoundPlan) {
  return (seconds: number) =>
    measureHttp({
      service: env.baseline,
      connections: plan.connections,
      seconds,
      requests: [getEach(() => `/read/${randomOf(env.readerIds)}`)],
    });
}

export function getScenario(env: BenchEnv, plan: RoundPlan): Promise<ResultRow> {
  const { reader } = env.parties;
  const query = new URLSearchParams({
    requesterIdentifier: BENCH_REQUESTER,
    institutionIdType: reader.institution.idType,
    institutionId: reader.institution.id,
  }).toString();
  return compare(plan, {
    name: 'get',
    baselineName: 'bare Fastify route: read one row by key + insert one row, one transaction',
    refhub: (seconds) =>
      measureHttp({
        service: env.refhub,
        connections: plan.connections,
        seconds,
        headers: jsonHeaders(reader.key),
        requests: [getEach(() => `/api/v1/referrals/${randomOf(env.readerIds)}?${query}`)],
      }),
    baseline: baselineRead(env, plan),
    goal: (row) =>
      env.engine === 'postgres'
        ? throughputGoal(row, 0.8, 1.5)
        : { ...throughputGoal(row, 0.6, Number.POSITIVE_INFINITY), text: 'rate ≥ 60% of bare PGlite' },
  });
}

/**
 * A page of the reader's referrals, and a page of its `needs-action` worklist (a tenth of them, sent
 * back at seeding): each read pages, counts and writes its audit row, as the baseline reads a row and
 * inserts one.
 */
export async function listScenario(env: BenchEnv, plan: RoundPlan): Promise<ResultRow[]> {
  const { reader } = env.parties;
  const institution = `/api/v1/institutions/${reader.institution.idType}/${reader.institution.id}`;
  const page = (name: string, path: string) =>
    compare(plan, {
      name,
      baselineName: 'the get baseline (read one row + insert one row)',
      refhub: (seconds) =>
        measureHttp({
          service: env.refhub,
          connections: plan.connections,
          seconds,
          headers: jsonHeaders(reader.key),
          requests: [getEach(() => path)],
        }),
      baseline: baselineRead(env, plan),
      ...(env.engine === 'postgres' ? { goal: (row: ResultRow) => throughputGoal(row, 0.4, 3) } : {}),
    });
  return [
    await page('list', `${institution}/referrals?pageSize=50`),
    await page('worklist', `${institution}/worklists/needs-action?pageSize=50`),
  ];
}

export function writeScenario(env: BenchEnv, plan: RoundPlan): Promise<ResultRow> {
  const { writer } = env.parties;
  const acting = {
    institutionIdType: writer.institution.idType,
    institutionId: writer.institution.id,
    requesterIdentifier: BENCH_REQUESTER,
  };
  const submitBody = JSON.stringify(acting);
  const cancelBody = JSON.stringify({
    ...acting,
    cancelNote: 'Patient recovered',
    cancelledByName: 'Dr Lim',
  });
  let exhausted = 0;
  // Each connection submits a draft of its own, then cancels that draft; the pool hands each out once.
  const pair: autocannon.Request[] = [
    {
      method: 'POST',
      setupRequest: (request, context) => {
        const id = env.writePool.take();
        if (id === undefined) exhausted++;
        const state = context as { id?: string };
        state.id = id ?? state.id ?? 'exhausted';
        return {
          ...request,
          path: `/api/v1/referrals/${state.id}/submit`,
          headers: { ...jsonHeaders(writer.key), 'idempotency-key': `bench-submit-${state.id}` },
          body: submitBody,
        };
      },
    },
    {
      method: 'POST',
      setupRequest: (request, context) => {
        const { id } = context as { id?: string };
        return {
          ...request,
          path: `/api/v1/referrals/${id ?? 'unknown'}/cancel`,
          headers: { ...jsonHeaders(writer.key), 'idempotency-key': `bench-cancel-${id ?? 'unknown'}` },
          body: cancelBody,
        };
      },
    },
  ];
  return compare(plan, {
    name: 'write',
    baselineName: 'bare Fastify route: insert one row in a transaction',
    refhub: (seconds) =>
      measureHttp({ service: env.refhub, connections: plan.connections, seconds, requests: pair }),
    baseline: (seconds) =>
      measureHttp({
        service: env.baseline,
        connections: plan.connections,
        seconds,
        requests: [{ method: 'POST', path: '/write' }],
      }),
    ...(env.engine === 'postgres'
      ? {
          goal: (row: ResultRow) => ({
            ...throughputGoal(row, 0.4, Number.POSITIVE_INFINITY),
            text: 'rate ≥ 40% of the baseline',
          }),
        }
      : {}),
    note: () =>
      exhausted > 0
        ? `the draft pool ran out ${exhausted} times: raise BENCH_WRITE_DRAFTS`
        : 'each request is a submit or a cancel (both with Idempotency-Key); the baseline is one insert',
  });
}
