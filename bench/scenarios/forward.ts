// The forward scenario: drafts submitted in a burst, and the time until the sandbox EHR has received
// every one of them. On refhub that covers the whole path: the submit's transaction and outbox rows,
// the relay, BullMQ, the forward worker's read, render, check and POST, and the record of the attempt.
// The baseline is the bare pipeline (bare-pipeline.ts), which does the least work of the same path,
// forwarding to the same sandbox EHR; the two run in interleaved rounds, each with drafts of its own.
// A bare BullMQ queue moving as many no-op jobs is measured in the same rounds, as a row of its own.
//
// Each side reports referrals reaching the EHR per second (from the first submit to the last receipt)
// and the submit→EHR latency (submit sent → received by the sandbox), submits accepted per second and
// their response times, the CPU its processes used per referral, and how busy the machine was. Then,
// with the system idle, referrals go one at a time, each waited for, for the idle submit→EHR latency.
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { Pool, request } from 'undici';
import { performance } from 'node:perf_hooks';
import type { Kysely } from 'kysely';
import type { Database } from '../../src/db/schema.ts';
import type { BarePipeline, BenchEnv, DraftPool } from '../environment.ts';
import {
  cpuTimesOfPid,
  machineCpuSeconds,
  sampleRss,
  startBaselineWorker,
  type Service,
} from '../processes.ts';
import { BENCH_REQUESTER, type BenchParties } from '../seed.ts';
import {
  median,
  medianOfRounds,
  percentile,
  roundRows,
  throughputGoal,
  type Measurement,
  type ResultRow,
} from '../stats.ts';

export interface ForwardPlan {
  readonly rounds: number;
  /** Referrals per burst. */
  readonly burst: number;
  /** Concurrent submits during a burst. */
  readonly connections: number;
  readonly idleSamples: number;
  /** How long one burst may take to arrive before it counts as failed. */
  readonly timeoutSeconds: number;
}

/** The concurrency of refhub's forward worker (src/workers/forwarding/forwarding.worker.ts). */
const WORKER_CONCURRENCY = 16;
const POLL_MS = 50;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface SandboxDelivery {
  readonly referralId: string;
  readonly receivedAt: string;
}

export function sandboxControl(sandbox: Service) {
  const origin = new URL(sandbox.address).origin;
  const get = async <T>(path: string): Promise<T> => {
    const response = await request(`${origin}/_sandbox${path}`);
    if (response.statusCode !== 200) throw new Error(`sandbox ${path}: HTTP ${response.statusCode}`);
    return (await response.body.json()) as T;
  };
  return {
    requests: async () => (await get<{ total: number }>('/requests')).total,
    delivered: async () =>
      (await get<{ byStatus: Record<string, number> }>('/requests')).byStatus['201'] ?? 0,
    deliveries: async (referralId?: string) =>
      (
        await get<{ deliveries: SandboxDelivery[] }>(
          `/deliveries${referralId === undefined ? '' : `?referralId=${referralId}`}`,
        )
      ).deliveries,
  };
}

/** Where a burst's submits go, and how a side tells which of its referrals were recorded as forwarded. */
export interface SubmitTarget {
  readonly address: string;
  readonly path: (id: string) => string;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
}

/** refhub's submit endpoint, as the writer's clinic calls it. */
export function refhubSubmitTarget(address: string, parties: BenchParties): SubmitTarget {
  const { writer } = parties;
  return {
    address,
    path: (id) => `/api/v1/referrals/${id}/submit`,
    headers: { 'content-type': 'application/json', authorization: `ApiKey ${writer.key}` },
    body: JSON.stringify({
      institutionIdType: writer.institution.idType,
      institutionId: writer.institution.id,
      requesterIdentifier: BENCH_REQUESTER,
    }),
  };
}

function bareSubmitTarget(env: BenchEnv, bare: BarePipeline): SubmitTarget {
  return {
    ...refhubSubmitTarget(bare.service.address, env.parties),
    path: (id) => `/referrals/${id}/submit`,
  };
}

/**
 * Submits `ids`, `connections` at a time; returns when each was sent, each submit's response time
 * (ms), and how many failed. With `perSecond`, the submits are paced: the i-th is due `i / perSecond`
 * seconds after the start, and each connection waits for the next one's time before sending it.
 */
export async function submitAll(
  target: SubmitTarget,
  ids: readonly string[],
  connections: number,
  perSecond?: number,
) {
  const api = new Pool(target.address, { connections });
  const sentAt = new Map<string, number>();
  const latencies: number[] = [];
  let failed = 0;
  let next = 0;
  const start = Date.now();
  try {
    await Promise.all(
      Array.from({ length: connections }, async () => {
        for (let i = next++, id = ids[i]; id !== undefined; i = next++, id = ids[i]) {
          const due = perSecond === undefined ? 0 : start + (i * 1000) / perSecond;
          if (due > Date.now()) await sleep(due - Date.now());
          const sent = Date.now();
          const began = performance.now();
          sentAt.set(id, sent);
          const response = await api.request({
            method: 'POST',
            path: target.path(id),
            headers: { ...target.headers },
            body: target.body,
          });
          await response.body.dump();
          latencies.push(performance.now() - began);
          if (response.statusCode !== 200) failed++;
        }
      }),
    );
  } finally {
    await api.close();
  }
  return { sentAt, latencies, failed, start };
}

/** Waits until refhub's database shows every one of `ids` forwarded (PostgreSQL only). */
async function recordedForwarded(
  db: Kysely<Database> | undefined,
  ids: readonly string[],
  timeoutMs: number,
): Promise<number> {
  if (db === undefined) return ids.length;
  const until = Date.now() + timeoutMs;
  for (;;) {
    const row = await db
      .selectFrom('referrals')
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .where('id', 'in', [...ids])
      .where('ehr_state', '=', 'forwarded')
      .executeTakeFirstOrThrow();
    const forwarded = Number(row.n);
    if (forwarded >= ids.length || Date.now() > until) return forwarded;
    await sleep(250);
  }
}

/**
 * Waits until refhub has nothing left to forward: the sandbox has seen no new request for a few
 * seconds and, on PostgreSQL, no referral is queued and the outbox is empty. Earlier scenarios (the
 * write scenario's submits and cancels) leave forwards behind that would otherwise count as this
 * scenario's deliveries, or slow it down.
 */
export async function settle(env: BenchEnv, timeoutMs = 180_000, db = env.db): Promise<void> {
  const sandbox = sandboxControl(env.sandbox);
  const until = Date.now() + timeoutMs;
  let last = await sandbox.requests();
  let quiet = 0;
  while (quiet < 3 && Date.now() < until) {
    await sleep(1000);
    const now = await sandbox.requests();
    let pending = 0;
    if (db !== undefined) {
      const row = await db
        .selectNoFrom((eb) => [
          eb
            .selectFrom('referrals')
            .select((e) => e.fn.countAll<string>().as('n'))
            .where('ehr_state', '=', 'queued')
            .as('queued'),
          eb
            .selectFrom('outbox')
            .select((e) => e.fn.countAll<string>().as('n'))
            .where('processed_at', 'is', null)
            .as('outbox'),
        ])
        .executeTakeFirstOrThrow();
      pending = Number(row.queued) + Number(row.outbox);
    }
    quiet = now === last && pending === 0 ? quiet + 1 : 0;
    last = now;
  }
}

/** One side of the forward scenario: where it takes submits, its drafts, and its own records. */
export interface ForwardSide {
  readonly target: SubmitTarget;
  /** The process whose RSS and CPU time are measured. */
  readonly processes: readonly Service[];
  take(): string | undefined;
  /** How many of `ids` its database shows as forwarded, waiting up to `timeoutMs` for all of them. */
  forwarded(ids: readonly string[], timeoutMs: number): Promise<number>;
}

/** What one burst of one side measured, beyond the delivery rate and latency. */
export interface BurstFigures {
  readonly delivery: Measurement;
  readonly submit: Measurement;
  /** CPU time of the side's processes per referral delivered, in ms. */
  readonly cpuMsPerReferral: number;
  /** The share of that CPU spent in the kernel on the processes' behalf (sockets, mostly). */
  readonly kernelShare: number;
  /** The share of the machine's CPU time that was busy during the burst (0–1). */
  readonly machineBusy: number;
}

/**
 * A burst of `plan.burst` submits to one side, and the time until the sandbox EHR has received every
 * one of them. Delivery rate: referrals received ÷ seconds from the first submit to the last receipt.
 * Latency: a referral's submit sent → its receipt at the sandbox.
 */
export async function burst(env: BenchEnv, side: ForwardSide, plan: ForwardPlan): Promise<BurstFigures> {
  const sandbox = sandboxControl(env.sandbox);
  const ids: string[] = [];
  for (let i = 0; i < plan.burst; i++) {
    const id = side.take();
    if (id === undefined) throw new Error('the forward scenario ran out of seeded drafts');
    ids.push(id);
  }
  const before = await sandbox.delivered();
  const samplers = side.processes.map((p) => sampleRss(p));
  const cpuBefore = side.processes.map((p) => cpuTimesOfPid(p.pid));
  const machineBefore = machineCpuSeconds();
  const started = Date.now();
  const { sentAt, latencies: submitLatencies, failed } = await submitAll(side.target, ids, plan.connections);
  const submitSeconds = (Date.now() - started) / 1000;
  const until = started + plan.timeoutSeconds * 1000;
  while ((await sandbox.delivered()) - before < ids.length - failed && Date.now() < until)
    await sleep(POLL_MS);
  const machineAfter = machineCpuSeconds();
  const spent = side.processes.map((p, i) => {
    const now = cpuTimesOfPid(p.pid);
    return { user: now.user - (cpuBefore[i]?.user ?? 0), system: now.system - (cpuBefore[i]?.system ?? 0) };
  });
  const cpuSeconds = spent.reduce((sum, t) => sum + t.user + t.system, 0);
  const systemSeconds = spent.reduce((sum, t) => sum + t.system, 0);
  const peak = samplers.reduce((sum, s) => sum + s.stop(), 0);
  const wanted = new Set(ids);
  const receivedAt = new Map<string, number>();
  for (const d of await sandbox.deliveries()) {
    if (!wanted.has(d.referralId)) continue;
    const at = Date.parse(d.receivedAt);
    receivedAt.set(d.referralId, Math.min(at, receivedAt.get(d.referralId) ?? at));
  }
  const latencies = [...receivedAt].map(([id, at]) => at - (sentAt.get(id) ?? at));
  const last = Math.max(...receivedAt.values());
  const missing = ids.length - receivedAt.size;
  const forwarded = await side.forwarded(ids, 30_000);
  return {
    delivery: {
      rate: receivedAt.size / ((last - started) / 1000),
      p50: percentile(latencies, 50),
      tail: percentile(latencies, 95),
      rssMiB: peak,
      errors: failed + missing + (ids.length - forwarded),
    },
    submit: {
      rate: (ids.length - failed) / submitSeconds,
      p50: percentile(submitLatencies, 50),
      tail: percentile(submitLatencies, 95),
      rssMiB: peak,
      errors: failed,
    },
    cpuMsPerReferral: (cpuSeconds * 1000) / Math.max(1, receivedAt.size),
    kernelShare: cpuSeconds === 0 ? 0 : systemSeconds / cpuSeconds,
    machineBusy: (machineAfter.busy - machineBefore.busy) / (machineAfter.total - machineBefore.total),
  };
}

/** A side of refhub processes: `address` takes submits; `db` is their database. */
export function refhubSide(
  address: string,
  processes: readonly Service[],
  data: { parties: BenchParties; pool: DraftPool; db: Kysely<Database> | undefined },
): ForwardSide {
  return {
    target: refhubSubmitTarget(address, data.parties),
    processes,
    take: () => data.pool.take(),
    forwarded: (ids, timeoutMs) => recordedForwarded(data.db, ids, timeoutMs),
  };
}

/** The bare pipeline as a side of a burst: its submit endpoint, its drafts and its own records. */
export function bareSide(env: BenchEnv, bare: BarePipeline): ForwardSide {
  return {
    target: bareSubmitTarget(env, bare),
    processes: [bare.service],
    take: () => bare.pool.take(),
    async forwarded(ids, timeoutMs) {
      const until = Date.now() + timeoutMs;
      for (;;) {
        const { rows } = await bare.client.query<{ n: string }>(
          `SELECT count(*) AS n FROM bare_referrals WHERE id = ANY($1::uuid[]) AND ehr_state = 'forwarded'`,
          [ids],
        );
        const forwarded = Number(rows[0]?.n ?? 0);
        if (forwarded >= ids.length || Date.now() > until) return forwarded;
        await sleep(250);
      }
    },
  };
}

function baselineQueue(env: BenchEnv) {
  const connection = new Redis(env.redisUrl, { maxRetriesPerRequest: null });
  const queue = new Queue('noop', { connection, prefix: `{${env.queuePrefix}-baseline}` });
  return {
    queue,
    close: async () => {
      await queue.close();
      connection.disconnect();
    },
  };
}

async function noopBurst(
  queue: Queue,
  worker: Service,
  plan: ForwardPlan,
  round: number,
): Promise<Measurement> {
  const before = await queue.getCompletedCount();
  const rss = sampleRss(worker);
  const started = Date.now();
  for (let i = 0; i < plan.burst; i += 1000) {
    const size = Math.min(1000, plan.burst - i);
    await queue.addBulk(
      Array.from({ length: size }, (_, j) => ({ name: 'noop', data: { round, i: i + j } })),
    );
  }
  const until = started + plan.timeoutSeconds * 1000;
  while ((await queue.getCompletedCount()) - before < plan.burst && Date.now() < until) await sleep(POLL_MS);
  const peak = rss.stop();
  const jobs = (await queue.getCompleted(0, -1)).filter(
    (j) => (j.data as { round?: number }).round === round,
  );
  const latencies = jobs.map((j) => (j.finishedOn ?? j.timestamp) - j.timestamp);
  const last = Math.max(...jobs.map((j) => j.finishedOn ?? 0));
  return {
    rate: jobs.length / ((last - started) / 1000),
    p50: percentile(latencies, 50),
    tail: percentile(latencies, 95),
    rssMiB: peak,
    errors: plan.burst - jobs.length,
  };
}

/** One burst's figures on one line of the progress log. */
function roundLine(f: BurstFigures): string {
  const ms = (value: number) => `${Math.round(value)} ms`;
  return (
    `${Math.round(f.delivery.rate)} referrals/s (submit→EHR p95 ${ms(f.delivery.tail)}), ` +
    `submits ${Math.round(f.submit.rate)}/s (p95 ${ms(f.submit.tail)}), ` +
    `CPU ${f.cpuMsPerReferral.toFixed(2)} ms per referral (${Math.round(f.kernelShare * 100)}% in the kernel), machine busy ${Math.round(f.machineBusy * 100)}%` +
    (f.delivery.errors > 0 ? `, ${f.delivery.errors} errors` : '')
  );
}

/** Submit→EHR latency of one referral at a time, each waited for, on one side. */
async function idleLatencies(env: BenchEnv, side: ForwardSide, samples: number): Promise<number[]> {
  const sandbox = sandboxControl(env.sandbox);
  const latencies: number[] = [];
  for (let i = 0; i < samples; i++) {
    const id = side.take();
    if (id === undefined) break;
    const { sentAt } = await submitAll(side.target, [id], 1);
    const until = Date.now() + 10_000;
    for (;;) {
      const [delivery] = await sandbox.deliveries(id);
      if (delivery !== undefined) {
        latencies.push(Date.parse(delivery.receivedAt) - (sentAt.get(id) ?? 0));
        break;
      }
      if (Date.now() > until) break;
      await sleep(10);
    }
    await sleep(100);
  }
  return latencies;
}

async function noopIdle(queue: Queue, samples: number): Promise<number[]> {
  const latencies: number[] = [];
  for (let i = 0; i < samples; i++) {
    const job = await queue.add('noop', { idle: i });
    for (let j = 0; j < 1000; j++) {
      const done = await queue.getJob(job.id ?? '');
      if (done?.finishedOn !== undefined) {
        latencies.push(done.finishedOn - done.timestamp);
        break;
      }
      await sleep(5);
    }
    await sleep(100);
  }
  return latencies;
}

/** The forward goal: refhub's delivery rate ≥ 50% of the bare pipeline's, its p95 ≤ 2× the bare p95. */
export const FORWARD_GOAL = { minRate: 0.5, maxP95: 2 } as const;

export async function forwardScenario(env: BenchEnv, plan: ForwardPlan): Promise<ResultRow[]> {
  const worker = await startBaselineWorker({
    redisUrl: env.redisUrl,
    queuePrefix: `{${env.queuePrefix}-baseline}`,
    queue: 'noop',
    concurrency: WORKER_CONCURRENCY,
  });
  const { queue, close } = baselineQueue(env);
  const refhub = refhubSide(env.refhub.address, [env.refhub], {
    parties: env.parties,
    pool: env.forwardPool,
    db: env.db,
  });
  const bare = env.bare === undefined ? undefined : bareSide(env, env.bare);
  try {
    await settle(env);
    const figures: Record<'refhub' | 'bare', BurstFigures[]> = { refhub: [], bare: [] };
    const noop: Measurement[] = [];
    // Interleaved: refhub, the bare pipeline, the no-op queue, then again.
    for (let round = 1; round <= plan.rounds; round++) {
      const r = await burst(env, refhub, plan);
      figures.refhub.push(r);
      env.log(`  forward round ${round}: refhub ${roundLine(r)}`);
      // The tail (ledger rows, reminder schedules) settles before the next side runs.
      await settle(env);
      if (bare !== undefined) {
        const b = await burst(env, bare, plan);
        figures.bare.push(b);
        env.log(`  forward round ${round}: bare pipeline ${roundLine(b)}`);
      }
      noop.push(await noopBurst(queue, worker, plan, round));
    }
    const refhubIdle = await idleLatencies(env, refhub, plan.idleSamples);
    const bareIdle = bare === undefined ? [] : await idleLatencies(env, bare, plan.idleSamples);
    const noopIdleLatencies = await noopIdle(queue, plan.idleSamples);
    const idleOf = (values: number[]): Measurement => ({
      rate: Number.NaN,
      p50: percentile(values, 50),
      tail: percentile(values, 95),
      rssMiB: Number.NaN,
      errors: plan.idleSamples - values.length,
    });
    const of = (side: BurstFigures[], pick: (f: BurstFigures) => Measurement) =>
      side.length === 0 ? null : medianOfRounds(side.map(pick));
    const cpu = (side: BurstFigures[]) => median(side.map((f) => f.cpuMsPerReferral)).toFixed(2);
    const busy = (side: BurstFigures[]) => `${Math.round(median(side.map((f) => f.machineBusy)) * 100)}%`;
    // Each round's CPU and machine load, for the rows of that round.
    const roundNote = (round: number) => {
      const sides: [string, BurstFigures | undefined][] = [['refhub', figures.refhub[round - 1]]];
      if (bare !== undefined) sides.push(['bare', figures.bare[round - 1]]);
      return sides
        .map(([name, f]) =>
          f === undefined
            ? `${name}: –`
            : `${name}: CPU ${f.cpuMsPerReferral.toFixed(2)} ms per referral (${Math.round(f.kernelShare * 100)}% in the kernel), machine busy ${Math.round(f.machineBusy * 100)}%`,
        )
        .join('; ');
    };
    const byRound = (pick: (f: BurstFigures) => Measurement) => ({
      refhub: figures.refhub.map(pick),
      baseline: bare === undefined ? null : figures.bare.map(pick),
    });
    const bareName =
      'bare pipeline: node:http submit (1 transaction + outbox row), SKIP LOCKED relay of 100 with addBulk, ' +
      `BullMQ worker (concurrency ${WORKER_CONCURRENCY}): read row, render ~19 KiB escaped HTML, POST with an ` +
      'undici pool, ledger row + state in 1 transaction';
    const delivery: ResultRow = {
      scenario: 'forward',
      unit: 'referrals/s',
      percentiles: ['p50', 'p95'],
      refhub: medianOfRounds(figures.refhub.map((f) => f.delivery)),
      baseline: of(figures.bare, (f) => f.delivery),
      baselineName: bare === undefined ? 'none (the bare pipeline runs on PostgreSQL only)' : bareName,
      rounds: plan.rounds,
      note:
        `referrals reaching the EHR per second; ${plan.burst} submits a burst at ${plan.connections} ` +
        `connections; latency is submit sent → received by the sandbox EHR, in ms; CPU per referral: ` +
        `refhub ${cpu(figures.refhub)} ms` +
        (bare === undefined ? '' : `, bare ${cpu(figures.bare)} ms`) +
        `; machine busy: refhub rounds ${busy(figures.refhub)}` +
        (bare === undefined ? '' : `, bare rounds ${busy(figures.bare)}`),
    };
    const submit: ResultRow = {
      scenario: 'forward submit',
      unit: 'submits/s',
      percentiles: ['p50', 'p95'],
      refhub: medianOfRounds(figures.refhub.map((f) => f.submit)),
      baseline: of(figures.bare, (f) => f.submit),
      baselineName: bare === undefined ? 'none' : 'the bare pipeline’s submit',
      rounds: plan.rounds,
      note: 'submits accepted per second during the burst; latency is the submit’s response time, in ms',
    };
    const rows: ResultRow[] = [
      bare === undefined
        ? delivery
        : {
            ...delivery,
            goal: {
              ...throughputGoal(delivery, FORWARD_GOAL.minRate, FORWARD_GOAL.maxP95),
              text: `rate ≥ ${FORWARD_GOAL.minRate * 100}%, p95 ≤ ${FORWARD_GOAL.maxP95}× the bare pipeline`,
            },
          },
      // Every round runs on the same database as the ones before it: a trend says what the work done
      // so far costs the next burst.
      ...roundRows(
        delivery,
        byRound((f) => f.delivery),
        roundNote,
      ),
      submit,
      ...roundRows(
        submit,
        byRound((f) => f.submit),
      ),
      {
        scenario: 'forward idle',
        unit: 'ms',
        percentiles: ['p50', 'p95'],
        refhub: idleOf(refhubIdle),
        baseline: bare === undefined ? null : idleOf(bareIdle),
        baselineName: bare === undefined ? 'none' : 'one referral at a time through the bare pipeline',
        rounds: 1,
        note: `${refhubIdle.length} referrals submitted one at a time, each waited for; the bare no-op queue: p95 ${percentile(noopIdleLatencies, 95)} ms`,
      },
      {
        scenario: 'forward vs no-op',
        unit: 'referrals/s',
        percentiles: ['p50', 'p95'],
        refhub: medianOfRounds(figures.refhub.map((f) => f.delivery)),
        baseline: medianOfRounds(noop),
        baselineName: `bare BullMQ queue moving ${plan.burst} no-op jobs through one worker (concurrency ${WORKER_CONCURRENCY})`,
        rounds: plan.rounds,
      },
    ];
    return rows;
  } finally {
    await close();
    await worker.stop();
  }
}
