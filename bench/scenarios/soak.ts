// The soak (`--soak`): ten minutes of mixed load on one refhub, to see whether memory holds. Three
// streams run at once: reads of the reader's referrals (20 connections), its list (5), and a clinic's
// full cycle of create → submit → cancel (5), whose submits and cancels also drive the forwarder and
// the reminder schedules through Redis. refhub's RSS and Redis's used memory are sampled throughout;
// "start" is the median of the second minute (after the first has warmed everything up) and "end"
// the median of the last minute.
import autocannon from 'autocannon';
import { Redis } from 'ioredis';
import type { BenchEnv } from '../environment.ts';
import { jsonHeaders, getEach } from '../load.ts';
import { BENCH_OFFERING, BENCH_REQUESTER, typicalReferralFields } from '../seed.ts';
import { median, type ResultRow } from '../stats.ts';

export interface SoakPlan {
  readonly seconds: number;
  readonly sampleEverySeconds: number;
}

export interface SoakSample {
  /** Seconds since the soak began. */
  readonly at: number;
  readonly rssMiB: number;
  readonly redisMiB: number;
}

/** Memory holds when the end is no more than this much above the start. */
const ALLOWED_GROWTH = 0.1;

async function redisUsedMiB(redis: Redis): Promise<number> {
  const info = await redis.info('memory');
  return Number(/^used_memory:(\d+)/m.exec(info)?.[1] ?? Number.NaN) / 1048576;
}

function cycle(env: BenchEnv): autocannon.Request[] {
  const { writer } = env.parties;
  const acting = {
    institutionIdType: writer.institution.idType,
    institutionId: writer.institution.id,
    requesterIdentifier: BENCH_REQUESTER,
  };
  const headers = jsonHeaders(writer.key);
  let n = 0;
  return [
    {
      method: 'POST',
      path: '/api/v1/referrals',
      headers,
      setupRequest: (request) => ({
        ...request,
        body: JSON.stringify({ ...acting, ...typicalReferralFields(n++), offeringId: BENCH_OFFERING }),
      }),
      onResponse: (status, body, context) => {
        // A failed create leaves no ID: the submit and cancel that follow fail too, and are counted.
        (context as { id?: string }).id =
          status === 201 ? (JSON.parse(body) as { id?: string }).id : undefined;
      },
    },
    {
      method: 'POST',
      headers,
      setupRequest: (request, context) => ({
        ...request,
        path: `/api/v1/referrals/${(context as { id?: string }).id ?? 'unknown'}/submit`,
        body: JSON.stringify(acting),
      }),
    },
    {
      method: 'POST',
      headers,
      setupRequest: (request, context) => ({
        ...request,
        path: `/api/v1/referrals/${(context as { id?: string }).id ?? 'unknown'}/cancel`,
        body: JSON.stringify({ ...acting, cancelNote: 'Patient recovered' }),
      }),
    },
  ];
}

export async function soakScenario(
  env: BenchEnv,
  plan: SoakPlan,
): Promise<{ row: ResultRow; samples: SoakSample[] }> {
  const { reader } = env.parties;
  const query = new URLSearchParams({
    requesterIdentifier: BENCH_REQUESTER,
    institutionIdType: reader.institution.idType,
    institutionId: reader.institution.id,
  }).toString();
  const pick = () => env.readerIds[Math.floor(Math.random() * env.readerIds.length)] ?? '';
  const redis = new Redis(env.redisUrl, { maxRetriesPerRequest: 1 });
  const samples: SoakSample[] = [];
  const began = Date.now();
  const sample = async () => {
    samples.push({
      at: (Date.now() - began) / 1000,
      rssMiB: env.refhub.rssMiB(),
      redisMiB: await redisUsedMiB(redis),
    });
  };
  await sample();
  const timer = setInterval(() => void sample().catch(() => undefined), plan.sampleEverySeconds * 1000);
  const run = (connections: number, requests: autocannon.Request[], headers?: Record<string, string>) =>
    autocannon({
      url: env.refhub.address,
      connections,
      duration: plan.seconds,
      timeout: 30,
      requests,
      ...(headers === undefined ? {} : { headers }),
    });
  try {
    const [reads, lists, cycles] = await Promise.all([
      run(20, [getEach(() => `/api/v1/referrals/${pick()}?${query}`)], jsonHeaders(reader.key)),
      run(
        5,
        [getEach(() => `/api/v1/institutions/hci/${reader.institution.id}/referrals?pageSize=50`)],
        jsonHeaders(reader.key),
      ),
      run(5, cycle(env)),
    ]);
    clearInterval(timer);
    await sample();
    const window = (from: number, to: number) => samples.filter((s) => s.at >= from && s.at < to);
    const minute = Math.min(60, plan.seconds / 5);
    const start = window(minute, 2 * minute);
    const end = window(plan.seconds - minute, plan.seconds + minute);
    const rssStart = median(start.map((s) => s.rssMiB));
    const rssEnd = median(end.map((s) => s.rssMiB));
    const redisStart = median(start.map((s) => s.redisMiB));
    const redisEnd = median(end.map((s) => s.redisMiB));
    const errors = [reads, lists, cycles].reduce((sum, r) => sum + r.non2xx + r.errors + r.timeouts, 0);
    const holds = (a: number, b: number) => b <= a * (1 + ALLOWED_GROWTH);
    const row: ResultRow = {
      scenario: 'soak',
      unit: 'req/s',
      refhub: {
        rate: reads.requests.average + lists.requests.average + cycles.requests.average,
        p50: reads.latency.p50,
        tail: reads.latency.p99,
        rssMiB: rssEnd,
        errors,
      },
      baseline: null,
      baselineName: 'none (memory over time)',
      rounds: 1,
      goal: {
        text: `no growth: end ≤ start + ${ALLOWED_GROWTH * 100}% (RSS and Redis)`,
        met: errors === 0 && holds(rssStart, rssEnd) && holds(redisStart, redisEnd),
      },
      note:
        `${Math.round(plan.seconds / 60)} min; RSS ${rssStart.toFixed(0)} → ${rssEnd.toFixed(0)} MiB, ` +
        `Redis ${redisStart.toFixed(1)} → ${redisEnd.toFixed(1)} MiB (median of the 2nd and of the last ` +
        `minute); latencies are the reads'; create+submit+cancel cycles: ${Math.round(cycles.requests.total / 3)}`,
    };
    return { row, samples };
  } finally {
    clearInterval(timer);
    redis.disconnect();
  }
}
