// The forward scenario: drafts submitted through the API in a burst, and the time until the sandbox EHR
// has recorded every one of them as delivered. That covers the whole path: the submit's transaction
// and outbox rows, the relay, BullMQ, the forward worker's read, render and POST, and the sandbox's
// acceptance. The submit→EHR latency of a referral runs from the moment its submit was sent to the
// moment the sandbox recorded it. The baseline is a bare BullMQ queue on the same Redis moving as many
// no-op jobs through one worker process of the same concurrency.
//
// Then, with the system idle, referrals are submitted one at a time, each waited for, for the idle
// submit→EHR latency (the baseline: one no-op job at a time).
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { Pool, request } from 'undici';
import type { BenchEnv } from '../environment.ts';
import { startBaselineWorker, sampleRss, type Service } from '../processes.ts';
import { BENCH_REQUESTER } from '../seed.ts';
import {
  median,
  medianOfRounds,
  percentile,
  runInterleaved,
  type Measurement,
  type ResultRow,
} from '../stats.ts';

export interface ForwardPlan {
  readonly rounds: number;
  /** Referrals per burst (the issue's 5,000). */
  readonly burst: number;
  /** Concurrent submits during a burst. */
  readonly connections: number;
  readonly idleSamples: number;
  /** How long one burst may take to arrive before it counts as failed. */
  readonly timeoutSeconds: number;
}

/** The concurrency of refhub's forward worker (src/workers/ehr-forward.worker.ts). */
const WORKER_CONCURRENCY = 16;
const POLL_MS = 50;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface SandboxDelivery {
  readonly referralId: string;
  readonly receivedAt: string;
}

function sandboxControl(sandbox: Service) {
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

/** Submits `ids` through the API, `connections` at a time; returns when each was sent, and failures. */
async function submitAll(env: BenchEnv, ids: readonly string[], connections: number) {
  const { writer } = env.parties;
  const body = JSON.stringify({
    institutionIdType: writer.institution.idType,
    institutionId: writer.institution.id,
    requesterIdentifier: BENCH_REQUESTER,
  });
  const api = new Pool(env.refhub.address, { connections });
  const sentAt = new Map<string, number>();
  let failed = 0;
  let next = 0;
  try {
    await Promise.all(
      Array.from({ length: connections }, async () => {
        for (let id = ids[next++]; id !== undefined; id = ids[next++]) {
          sentAt.set(id, Date.now());
          const response = await api.request({
            method: 'POST',
            path: `/api/v1/referrals/${id}/submit`,
            headers: { 'content-type': 'application/json', authorization: `ApiKey ${writer.key}` },
            body,
          });
          await response.body.dump();
          if (response.statusCode !== 200) failed++;
        }
      }),
    );
  } finally {
    await api.close();
  }
  return { sentAt, failed };
}

/** Waits until refhub's database shows every one of `ids` forwarded (PostgreSQL only). */
async function recordedForwarded(env: BenchEnv, ids: readonly string[], timeoutMs: number): Promise<number> {
  const db = env.db;
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
export async function settle(env: BenchEnv, timeoutMs = 180_000): Promise<void> {
  const sandbox = sandboxControl(env.sandbox);
  const until = Date.now() + timeoutMs;
  let last = await sandbox.requests();
  let quiet = 0;
  while (quiet < 3 && Date.now() < until) {
    await sleep(1000);
    const now = await sandbox.requests();
    let pending = 0;
    if (env.db !== undefined) {
      const row = await env.db
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

async function refhubBurst(env: BenchEnv, plan: ForwardPlan) {
  const sandbox = sandboxControl(env.sandbox);
  const ids: string[] = [];
  for (let i = 0; i < plan.burst; i++) {
    const id = env.forwardPool.take();
    if (id === undefined) throw new Error('the forward scenario ran out of seeded drafts');
    ids.push(id);
  }
  const before = await sandbox.delivered();
  const rss = sampleRss(env.refhub);
  const started = Date.now();
  const { sentAt, failed } = await submitAll(env, ids, plan.connections);
  const submitSeconds = (Date.now() - started) / 1000;
  const until = started + plan.timeoutSeconds * 1000;
  while ((await sandbox.delivered()) - before < ids.length - failed && Date.now() < until)
    await sleep(POLL_MS);
  const peak = rss.stop();
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
  const forwarded = await recordedForwarded(env, ids, 30_000);
  const measurement: Measurement = {
    rate: receivedAt.size / ((last - started) / 1000),
    p50: percentile(latencies, 50),
    tail: percentile(latencies, 95),
    rssMiB: peak,
    errors: failed + missing + (ids.length - forwarded),
  };
  return { measurement, submitSeconds };
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

async function baselineBurst(
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

async function idleLatencies(env: BenchEnv, queue: Queue, samples: number) {
  const sandbox = sandboxControl(env.sandbox);
  const refhub: number[] = [];
  const baseline: number[] = [];
  for (let i = 0; i < samples; i++) {
    const id = env.forwardPool.take();
    if (id === undefined) break;
    const { sentAt } = await submitAll(env, [id], 1);
    const until = Date.now() + 10_000;
    for (;;) {
      const [delivery] = await sandbox.deliveries(id);
      if (delivery !== undefined) {
        refhub.push(Date.parse(delivery.receivedAt) - (sentAt.get(id) ?? 0));
        break;
      }
      if (Date.now() > until) break;
      await sleep(10);
    }
    const job = await queue.add('noop', { idle: i });
    for (let j = 0; j < 1000; j++) {
      const done = await queue.getJob(job.id ?? '');
      if (done?.finishedOn !== undefined) {
        baseline.push(done.finishedOn - done.timestamp);
        break;
      }
      await sleep(5);
    }
    await sleep(100);
  }
  return { refhub, baseline };
}

export async function forwardScenario(env: BenchEnv, plan: ForwardPlan): Promise<ResultRow[]> {
  const worker = await startBaselineWorker({
    redisUrl: env.redisUrl,
    queuePrefix: `{${env.queuePrefix}-baseline}`,
    queue: 'noop',
    concurrency: WORKER_CONCURRENCY,
  });
  const { queue, close } = baselineQueue(env);
  try {
    await settle(env);
    const submitSeconds: number[] = [];
    const rounds = await runInterleaved(plan.rounds, async (turn) => {
      if (turn.side === 'baseline') return baselineBurst(queue, worker, plan, turn.round);
      const burst = await refhubBurst(env, plan);
      submitSeconds.push(burst.submitSeconds);
      env.log(`  forward round ${turn.round}: ${Math.round(burst.measurement.rate)} referrals/s`);
      // The tail (ledger rows, reminder schedules) settles before the baseline runs.
      await settle(env);
      return burst.measurement;
    });
    const idle = await idleLatencies(env, queue, plan.idleSamples);
    const burstRow: ResultRow = {
      scenario: 'forward burst',
      unit: 'referrals/s',
      percentiles: ['p50', 'p95'],
      refhub: medianOfRounds(rounds.refhub),
      baseline: medianOfRounds(rounds.baseline),
      baselineName: `bare BullMQ queue, ${plan.burst} no-op jobs, one worker (concurrency ${WORKER_CONCURRENCY})`,
      rounds: plan.rounds,
      note:
        `${plan.burst} submits at ${plan.connections} connections took ${median(submitSeconds).toFixed(1)} s ` +
        `(median); latency is submit sent → recorded at the sandbox EHR, in ms`,
    };
    const idleOf = (values: number[]): Measurement => ({
      rate: Number.NaN,
      p50: percentile(values, 50),
      tail: percentile(values, 95),
      rssMiB: Number.NaN,
      errors: plan.idleSamples - values.length,
    });
    const idleRow: ResultRow = {
      scenario: 'forward idle',
      unit: 'ms',
      percentiles: ['p50', 'p95'],
      refhub: idleOf(idle.refhub),
      baseline: idleOf(idle.baseline),
      baselineName: 'one no-op job through the bare BullMQ worker',
      rounds: 1,
      note: `${idle.refhub.length} referrals submitted one at a time, each waited for`,
    };
    return [
      {
        ...burstRow,
        goal: {
          text: '≥ 1,000 referrals/s',
          met: burstRow.refhub.errors === 0 && burstRow.refhub.rate >= 1000,
        },
      },
      {
        ...idleRow,
        goal: { text: 'p95 < 500 ms', met: idleRow.refhub.errors === 0 && idleRow.refhub.tail < 500 },
      },
    ];
  } finally {
    await close();
    await worker.stop();
  }
}
