// The soak (`--soak`): ten minutes of mixed load on one refhub, to see whether memory holds. Three
// streams run at once: reads of the reader's referrals (20 connections), its list (5), and a clinic's
// full cycle of create → submit → cancel (5), whose submits and cancels also drive the forwarder and
// the reminder schedules through Redis. refhub's RSS and Redis's used memory are sampled throughout.
// The first half of the soak is where both may rise for good reasons: V8 sizes its heap to the load,
// and the queues' retention of completed jobs (10,000 per queue) fills. Growth is therefore judged
// over the second half, the median of the minute at half-time against the median of the last minute;
// memory that still rises then is a leak. The first sample is reported beside them.
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

interface MemoryCourse {
  readonly first: number;
  readonly half: number;
  readonly end: number;
}

function describe(course: MemoryCourse, digits: number): string {
  return [course.first, course.half, course.end].map((v) => v.toFixed(digits)).join(' → ');
}

/**
 * The course of RSS and Redis memory over a soak of `seconds`: the first sample, the median of the
 * minute from half-time and the median of the last minute (a fifth of the soak for short ones), and
 * whether both held over the second half.
 */
export function soakMemory(
  samples: readonly SoakSample[],
  seconds: number,
): { rss: MemoryCourse; redis: MemoryCourse; holds: boolean } {
  const minute = Math.min(60, seconds / 5);
  const window = (from: number, to: number) => samples.filter((s) => s.at >= from && s.at < to);
  const half = window(seconds / 2, seconds / 2 + minute);
  const end = window(seconds - minute, Number.POSITIVE_INFINITY);
  const course = (pick: (s: SoakSample) => number): MemoryCourse => ({
    first: samples[0] === undefined ? Number.NaN : pick(samples[0]),
    half: median(half.map(pick)),
    end: median(end.map(pick)),
  });
  const rss = course((s) => s.rssMiB);
  const redis = course((s) => s.redisMiB);
  const held = (c: MemoryCourse) => c.end <= c.half * (1 + ALLOWED_GROWTH);
  return { rss, redis, holds: held(rss) && held(redis) };
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
    const memory = soakMemory(samples, plan.seconds);
    const errors = [reads, lists, cycles].reduce((sum, r) => sum + r.non2xx + r.errors + r.timeouts, 0);
    const row: ResultRow = {
      scenario: 'soak',
      unit: 'req/s',
      refhub: {
        rate: reads.requests.average + lists.requests.average + cycles.requests.average,
        p50: reads.latency.p50,
        tail: reads.latency.p99,
        rssMiB: memory.rss.end,
        errors,
      },
      baseline: null,
      baselineName: 'none (memory over time)',
      rounds: 1,
      goal: {
        text: `no growth over the second half: end ≤ half-time + ${ALLOWED_GROWTH * 100}% (RSS and Redis)`,
        met: errors === 0 && memory.holds,
      },
      note:
        `${Math.round(plan.seconds / 60)} min; RSS ${describe(memory.rss, 0)} MiB, Redis ` +
        `${describe(memory.redis, 1)} MiB (first sample → half-time → end); latencies are the reads'; ` +
        `create+submit+cancel cycles: ${Math.round(cycles.requests.total / 3)}`,
    };
    return { row, samples };
  } finally {
    clearInterval(timer);
    redis.disconnect();
  }
}
