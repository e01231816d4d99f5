// The queue backends scenario: the same forwarding on the three set-ups an operator chooses between
// (docs/scaling.md, "Choosing a queue backend"), each a `refhub all` with a database of its own:
//
//   embedded             PGlite in a data directory, the queues in it (QUEUE_BACKEND=postgres):
//                        `npm start` as it is, nothing but Node
//   PostgreSQL alone     PostgreSQL, the queues in it (BullMQ's PostgreSQL backend)
//   PostgreSQL + Redis   PostgreSQL, the queues in Redis
//
// Fifty clinics submit at once, at an offered rate the set-up must keep up with (100 referrals a
// second for PostgreSQL, 30 for the embedded default), each clinic one submit at a time; the figures
// are the rate referrals reached the sandbox EHR (first submit to last receipt) and the submit → EHR
// latency. The goals: PostgreSQL alone forwards at least 100 a second with a p95 under 2 s, the
// embedded default at least 30 a second. That no set-up loses or doubles a referral when its worker
// is killed mid-burst is what the fault tests hold (test/system/faults/worker-kill.int.test.ts on both
// backends, test/system/faults/embedded-kill.embedded.test.ts on the embedded default); here every
// referral must arrive exactly once, or the row counts the rest as errors.
import fs from 'node:fs/promises';
import path from 'node:path';
import { sql } from 'kysely';
import { migrateToLatest, openStore } from '../../src/db/database.ts';
import type { BenchEnv, DraftPool } from '../environment.ts';
import { refhubDatabase } from '../environment.ts';
import { cpuTimesOfPid, sampleRss, startRefhub, type Service } from '../processes.ts';
import { seedCatalogAndKeys, seedDrafts, type BenchParties } from '../seed.ts';
import { median, medianOfRounds, percentile, type Measurement, type ResultRow } from '../stats.ts';
import { refhubSubmitTarget, sandboxControl, submitAll } from './forward.ts';

export interface QueueBackendsPlan {
  readonly rounds: number;
  /** How long the offered load lasts in each round, in seconds. */
  readonly seconds: number;
  /**
   * A round of this many seconds on each set-up before the measured ones, not counted: the first
   * statements planned, the JIT's code compiled, the database's caches filled after the seeding.
   */
  readonly warmupSeconds: number;
  /** Concurrent submitters: the clinics. */
  readonly connections: number;
  /** How long the last referral may take to arrive after the last submit before it counts as lost. */
  readonly timeoutSeconds: number;
}

interface SetUp {
  readonly name: string;
  /** Referrals offered per second, and the goal's: at least this rate, and a p95 at most `p95Ms`. */
  readonly offered: number;
  readonly p95Ms: number | undefined;
  readonly service: Service;
  readonly parties: BenchParties;
  readonly pool: DraftPool;
  close(): Promise<void>;
}

const POLL_MS = 50;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function poolOf(ids: readonly string[]): DraftPool {
  let next = 0;
  return { take: () => ids[next++], remaining: () => ids.length - next };
}

/** The embedded default: PGlite seeded while closed, then `refhub all` on it with the queues in it. */
async function embedded(env: BenchEnv, drafts: number): Promise<SetUp> {
  const dataDir = path.join(env.dataDir, 'queue-backends-embedded');
  await fs.mkdir(dataDir, { recursive: true });
  const store = await openStore({ engine: 'pglite', dataDir, command: 'npm run bench' });
  let parties: BenchParties;
  let ids: string[];
  try {
    await migrateToLatest(store.db);
    parties = await seedCatalogAndKeys(store.db);
    ids = await seedDrafts(store.db, { party: parties.writer, count: drafts });
    await sql`vacuum analyze`.execute(store.db);
  } finally {
    await store.close();
  }
  const service = await startRefhub({
    databaseUrl: undefined,
    dataDir,
    redisUrl: env.redisUrl,
    queuePrefix: `${env.queuePrefix}-embedded`,
    ehrUrl: env.sandbox.address,
    nodeOptions: env.refhubNodeOptions,
    env: { QUEUE_BACKEND: 'postgres' },
  });
  return {
    name: 'embedded (PGlite, queues in it)',
    offered: 30,
    p95Ms: undefined,
    service,
    parties,
    pool: poolOf(ids),
    close: () => service.stop(),
  };
}

async function onPostgres(env: BenchEnv, drafts: number, backend: 'postgres' | 'redis'): Promise<SetUp> {
  const suffix = `qb_${backend}`;
  const data = await refhubDatabase(env, suffix, drafts);
  const dataDir = path.join(env.dataDir, suffix);
  await fs.mkdir(dataDir, { recursive: true });
  try {
    const service = await startRefhub({
      databaseUrl: data.url,
      dataDir,
      redisUrl: env.redisUrl,
      queuePrefix: `${env.queuePrefix}-${suffix}`,
      ehrUrl: env.sandbox.address,
      nodeOptions: env.refhubNodeOptions,
      env: { QUEUE_BACKEND: backend },
    });
    return {
      name:
        backend === 'postgres' ? 'PostgreSQL alone (queues in it)' : 'PostgreSQL + Redis (queues in Redis)',
      offered: 100,
      p95Ms: backend === 'postgres' ? 2000 : undefined,
      service,
      parties: data.parties,
      pool: data.pool,
      close: async () => {
        await service.stop();
        await data.close();
      },
    };
  } catch (error) {
    await data.close();
    throw error;
  }
}

interface RoundFigures {
  readonly delivery: Measurement;
  readonly cpuMsPerReferral: number;
  readonly doubled: number;
}

async function round(env: BenchEnv, setUp: SetUp, plan: QueueBackendsPlan): Promise<RoundFigures> {
  const sandbox = sandboxControl(env.sandbox);
  const count = Math.round(setUp.offered * plan.seconds);
  const ids: string[] = [];
  for (let i = 0; i < count; i++) {
    const id = setUp.pool.take();
    if (id === undefined) throw new Error('the queue backends scenario ran out of seeded drafts');
    ids.push(id);
  }
  const wanted = new Set(ids);
  const rss = sampleRss(setUp.service);
  const cpuBefore = cpuTimesOfPid(setUp.service.pid);
  const target = refhubSubmitTarget(setUp.service.address, setUp.parties);
  const { sentAt, failed, start } = await submitAll(target, ids, plan.connections, setUp.offered);
  const until = Date.now() + plan.timeoutSeconds * 1000;
  const arrived = async () => (await sandbox.deliveries()).filter((d) => wanted.has(d.referralId));
  let deliveries = await arrived();
  while (new Set(deliveries.map((d) => d.referralId)).size < ids.length - failed && Date.now() < until) {
    await sleep(POLL_MS);
    deliveries = await arrived();
  }
  const cpuAfter = cpuTimesOfPid(setUp.service.pid);
  const peak = rss.stop();
  const receivedAt = new Map<string, number>();
  for (const d of deliveries) {
    const at = Date.parse(d.receivedAt);
    receivedAt.set(d.referralId, Math.min(at, receivedAt.get(d.referralId) ?? at));
  }
  const latencies = [...receivedAt].map(([id, at]) => at - (sentAt.get(id) ?? at));
  const last = Math.max(...receivedAt.values());
  const cpuSeconds = cpuAfter.user + cpuAfter.system - cpuBefore.user - cpuBefore.system;
  const doubled = deliveries.length - receivedAt.size;
  return {
    delivery: {
      rate: receivedAt.size / ((last - start) / 1000),
      p50: percentile(latencies, 50),
      tail: percentile(latencies, 95),
      rssMiB: peak,
      errors: failed + (ids.length - receivedAt.size) + doubled,
    },
    cpuMsPerReferral: (cpuSeconds * 1000) / Math.max(1, receivedAt.size),
    doubled,
  };
}

export async function queueBackendsScenario(env: BenchEnv, plan: QueueBackendsPlan): Promise<ResultRow[]> {
  if (env.engine !== 'postgres')
    throw new Error('the queue backends scenario needs PostgreSQL for two of its set-ups');
  const setUps: SetUp[] = [];
  try {
    const seconds = plan.seconds * plan.rounds + plan.warmupSeconds;
    setUps.push(await embedded(env, Math.round(30 * seconds)));
    setUps.push(await onPostgres(env, Math.round(100 * seconds), 'postgres'));
    setUps.push(await onPostgres(env, Math.round(100 * seconds), 'redis'));
    for (const setUp of setUps) await round(env, setUp, { ...plan, seconds: plan.warmupSeconds });
    const figures = new Map<SetUp, RoundFigures[]>(setUps.map((s) => [s, []]));
    for (let r = 1; r <= plan.rounds; r++) {
      for (const setUp of setUps) {
        const f = await round(env, setUp, plan);
        figures.get(setUp)?.push(f);
        env.log(
          `  queue backends round ${r}: ${setUp.name} ${Math.round(f.delivery.rate)} referrals/s, p95 ` +
            `${Math.round(f.delivery.tail)} ms (${f.cpuMsPerReferral.toFixed(1)} ms CPU/referral)`,
        );
      }
    }
    return setUps.map((setUp) => {
      const rounds = figures.get(setUp) ?? [];
      const refhub = medianOfRounds(rounds.map((f) => f.delivery));
      const goalText =
        `≥ ${setUp.offered} referrals/s offered by ${plan.connections} clinics` +
        (setUp.p95Ms === undefined ? '' : `, p95 submit → EHR < ${setUp.p95Ms / 1000} s`);
      return {
        scenario: `queues: ${setUp.name}`,
        unit: 'referrals/s',
        percentiles: ['p50', 'p95'],
        refhub,
        baseline: null,
        baselineName: 'none: a goal of its own, the same paced load on each set-up',
        rounds: plan.rounds,
        goal: {
          text: goalText,
          met:
            refhub.errors === 0 &&
            refhub.rate >= setUp.offered * 0.98 &&
            (setUp.p95Ms === undefined || refhub.tail < setUp.p95Ms),
        },
        note: `${median(rounds.map((f) => f.cpuMsPerReferral)).toFixed(1)} ms CPU/referral of refhub all`,
      } satisfies ResultRow;
    });
  } finally {
    for (const setUp of setUps) await setUp.close().catch(() => undefined);
  }
}
