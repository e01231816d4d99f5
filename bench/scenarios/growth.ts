// Cost as the work grows (PostgreSQL): the get and list of the API scenarios, measured as the database
// grows from 10,000 referrals to 100,000 (and 1,000,000 when asked), spread over 10 sending clinics;
// then forwarding with an empty queue against forwarding with 100,000 referrals queued before it.
//
// The database is one of its own with a `refhub all` of its own (its own queue prefix; the run's
// sandbox EHR). Each clinic gets one draft written as the API writes it, then copied in SQL
// (bulk-seed.ts) up to its share; after each step `VACUUM ANALYZE`, as autovacuum would. The same
// refhub keeps running from step to step, as a live one would while its database grows.
//
// Forwarding: the forward queue is paused (BullMQ's pause, as an operator would), a referral is
// submitted through the API and copied in SQL with its due outbox rows, the relay moves them all into
// the queue, and the queue is resumed. The rate is the deliveries per second between the 1,000th and
// the 4,000th, so that neither the start nor the end of the run counts. First with 5,000 referrals
// (an empty queue but for them), then with 100,000.
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { sql, type Kysely } from 'kysely';
import { request } from 'undici';
import { migrateToLatest, openStore } from '../../src/db/database.ts';
import type { Database } from '../../src/db/schema.ts';
import { cloneReferral } from '../bulk-seed.ts';
import { benchCipher } from '../data-keys.ts';
import type { BenchEnv } from '../environment.ts';
import { getEach, jsonHeaders, measureHttp } from '../load.ts';
import { sampleRss, startRefhub, type Service } from '../processes.ts';
import { BENCH_REQUESTER, seedDrafts, seedSenders, type BenchParty } from '../seed.ts';
import { medianOfRounds, ratio, type Measurement, type ResultRow } from '../stats.ts';
import type { RoundPlan } from './api.ts';

export interface GrowthPlan extends RoundPlan {
  /** Referrals in the database at each step, ascending (10,000 and 100,000; 1,000,000 when asked). */
  readonly sizes: readonly number[];
  readonly institutions: number;
  /** Referrals queued before the forwarding rate is measured (100,000). */
  readonly backlog: number;
  readonly nodeOptions: readonly string[];
}

/** The goals: p99 at the largest size within 1.5× of p99 at the smallest; backlog rate ≥ 0.8×. */
export const GROWTH_GOAL = { maxP99: 1.5, minBacklogRate: 0.8 } as const;

/** The window of deliveries whose rate is measured, counted from the start of a run. */
const WINDOW = { from: 1_000, to: 4_000 } as const;
const EMPTY_QUEUE_RUN = 5_000;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The time between the `from`th and the `to`th of a series of counts, as a rate per second. */
export function windowRate(
  samples: readonly { at: number; count: number }[],
  from: number,
  to: number,
): number {
  const first = samples.find((s) => s.count >= from);
  const last = samples.find((s) => s.count >= to);
  if (first === undefined || last === undefined || last.at <= first.at) return Number.NaN;
  return (last.count - first.count) / ((last.at - first.at) / 1000);
}

async function delivered(sandbox: Service): Promise<number> {
  const response = await request(`${new URL(sandbox.address).origin}/_sandbox/requests`);
  const body = (await response.body.json()) as { byStatus: Record<string, number> };
  return body.byStatus['201'] ?? 0;
}

async function pending(db: Kysely<Database>): Promise<number> {
  const row = await db
    .selectFrom('outbox')
    .select((e) => e.fn.countAll<string>().as('n'))
    .where('processed_at', 'is', null)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

interface GrowthState {
  readonly db: Kysely<Database>;
  readonly senders: readonly BenchParty[];
  readonly templates: readonly string[];
  /** Copies made so far of each clinic's template. */
  copies: number;
  readonly newest: Date;
}

/** Grows every clinic to `size / institutions` referrals (its template and its copies). */
async function growTo(state: GrowthState, size: number, log: (m: string) => void): Promise<void> {
  const perClinic = Math.floor(size / state.senders.length) - 1;
  const began = Date.now();
  for (const [i, templateId] of state.templates.entries()) {
    // In steps of 50,000 copies, so that no one transaction grows without bound.
    for (let first = state.copies; first < perClinic; first += 50_000) {
      await cloneReferral(state.db, await benchCipher(state.db), {
        templateId,
        count: Math.min(50_000, perClinic - first),
        firstNumber: first + 1,
        newest: state.newest,
        salt: i,
      });
    }
  }
  state.copies = Math.max(state.copies, perClinic);
  await sql`vacuum analyze`.execute(state.db);
  log(`  growth: ${size} referrals in the database (${((Date.now() - began) / 1000).toFixed(0)} s to seed)`);
}

async function readerIds(db: Kysely<Database>, reader: BenchParty): Promise<string[]> {
  const rows = await db
    .selectFrom('referrals')
    .select('id')
    .where('sender_id', '=', reader.institution.id)
    .orderBy(sql`random()`)
    .limit(10_000)
    .execute();
  return rows.map((r) => r.id);
}

async function measureReads(refhub: Service, reader: BenchParty, ids: readonly string[], plan: GrowthPlan) {
  const query = new URLSearchParams({
    requesterIdentifier: BENCH_REQUESTER,
    institutionIdType: reader.institution.idType,
    institutionId: reader.institution.id,
  }).toString();
  const pick = () => ids[Math.floor(Math.random() * ids.length)] ?? '';
  const get = (seconds: number) =>
    measureHttp({
      service: refhub,
      connections: plan.connections,
      seconds,
      headers: jsonHeaders(reader.key),
      requests: [getEach(() => `/api/v1/referrals/${pick()}?${query}`)],
    });
  const listPath = `/api/v1/institutions/${reader.institution.idType}/${reader.institution.id}/referrals?pageSize=50`;
  const list = (seconds: number) =>
    measureHttp({
      service: refhub,
      connections: plan.connections,
      seconds,
      headers: jsonHeaders(reader.key),
      requests: [getEach(() => listPath)],
    });
  await get(plan.warmupSeconds);
  await list(plan.warmupSeconds);
  const gets: Measurement[] = [];
  const lists: Measurement[] = [];
  for (let round = 0; round < plan.rounds; round++) {
    gets.push(await get(plan.seconds));
    lists.push(await list(plan.seconds));
  }
  return { get: medianOfRounds(gets), list: medianOfRounds(lists) };
}

/**
 * A referral submitted through the API while the forward queue is paused, and its submit relayed
 * into the queue: queued, as the copies of it will be.
 */
async function submittedTemplate(
  db: Kysely<Database>,
  submitter: { refhub: Service; writer: BenchParty; offset: number },
): Promise<string> {
  const { refhub, writer, offset } = submitter;
  const [draft] = await seedDrafts(db, { party: writer, count: 1, offset });
  if (draft === undefined) throw new Error('no draft was seeded');
  const submitted = await request(`${refhub.address}/api/v1/referrals/${draft}/submit`, {
    method: 'POST',
    headers: jsonHeaders(writer.key),
    body: JSON.stringify({
      institutionIdType: writer.institution.idType,
      institutionId: writer.institution.id,
      requesterIdentifier: BENCH_REQUESTER,
    }),
  });
  await submitted.body.dump();
  if (submitted.statusCode !== 200) throw new Error(`the template's submit answered ${submitted.statusCode}`);
  while ((await pending(db)) > 0) await sleep(200);
  const row = await db
    .selectFrom('referrals')
    .select('ehr_state')
    .where('id', '=', draft)
    .executeTakeFirstOrThrow();
  if (row.ehr_state !== 'queued') throw new Error(`the template is ${row.ehr_state}, not queued`);
  return draft;
}

/**
 * Puts `count` submitted referrals in the forward queue while it is paused (copies of one submitted
 * through the API), then resumes it and measures the delivery rate over the window.
 */
async function forwardRun(
  env: BenchEnv,
  state: GrowthState,
  queue: Queue,
  submitter: { refhub: Service; writer: BenchParty; offset: number },
  count: number,
  firstNumber: number,
  drain: boolean,
  log: (m: string) => void,
): Promise<Measurement> {
  await queue.pause();
  const template = await submittedTemplate(state.db, submitter);
  for (let first = 0; first < count; first += 50_000) {
    await cloneReferral(state.db, await benchCipher(state.db), {
      templateId: template,
      count: Math.min(50_000, count - first),
      firstNumber: firstNumber + first,
      // Submitted in the last minutes, as a backlog builds: no reminder is due yet.
      newest: new Date(Date.now() - first),
      spacingMs: 1,
      salt: 4000,
      withOutbox: true,
    });
  }
  // Autovacuum would analyze the tables after such an arrival; without it, statements planned for a
  // small outbox (the relay's claim, the reconciler's scan) run for minutes against the copies.
  await sql`analyze referrals, outbox, timeline_events, audit_events`.execute(state.db);
  const relayed = Date.now();
  const until = relayed + 1_800_000;
  while ((await pending(state.db)) > 0 && Date.now() < until) await sleep(500);
  const relaySeconds = (Date.now() - relayed) / 1000;
  const waiting = await queue.getJobCountByTypes('wait', 'prioritized');
  log(
    `  growth: ${waiting} forwards queued (the relay took ${relaySeconds.toFixed(0)} s); resuming the queue`,
  );
  const base = await delivered(env.sandbox);
  const samples: { at: number; count: number }[] = [];
  const began = Date.now();
  await queue.resume();
  const end = Date.now() + 600_000;
  for (;;) {
    const count_ = (await delivered(env.sandbox)) - base;
    samples.push({ at: Date.now(), count: count_ });
    if (count_ >= WINDOW.to || Date.now() > end) break;
    await sleep(100);
  }
  const rate = windowRate(samples, WINDOW.from, WINDOW.to);
  // The run that measures the empty queue leaves it empty for the next.
  if (drain) {
    while (
      (await queue.getJobCountByTypes('wait', 'prioritized', 'active', 'delayed')) > 0 &&
      Date.now() < end
    )
      await sleep(500);
  }
  log(
    `  growth: ${Math.round(rate)} referrals/s with ${waiting} queued (${((Date.now() - began) / 1000).toFixed(0)} s)`,
  );
  return { rate, p50: Number.NaN, tail: Number.NaN, rssMiB: Number.NaN, errors: Number.isNaN(rate) ? 1 : 0 };
}

export async function growthScenario(env: BenchEnv, plan: GrowthPlan): Promise<ResultRow[]> {
  if (env.engine !== 'postgres') throw new Error('the growth scenario runs on PostgreSQL only');
  const url = await env.extraDatabase('growth');
  const store = await openStore({ engine: 'postgres', url, poolSize: 2 });
  let refhub: Service | undefined;
  let rss: { stop(): number } | undefined;
  const connection = new Redis(env.redisUrl, { maxRetriesPerRequest: null });
  const prefix = `${env.queuePrefix}-growth`;
  const queue = new Queue('ehr-forward', { connection, prefix: `{${prefix}}` });
  try {
    await migrateToLatest(store.db);
    const senders = await seedSenders(store.db, plan.institutions);
    const newest = new Date();
    const templates: string[] = [];
    for (const [i, sender] of senders.entries()) {
      const [id] = await seedDrafts(store.db, { party: sender, count: 1, offset: i, newest });
      if (id === undefined) throw new Error('no template was seeded');
      templates.push(id);
    }
    const state: GrowthState = { db: store.db, senders, templates, copies: 0, newest };
    const [reader, writer] = senders;
    if (reader === undefined || writer === undefined) throw new Error('at least two clinics');

    const reads = new Map<number, { get: Measurement; list: Measurement }>();
    for (const size of plan.sizes) {
      await growTo(state, size, env.log);
      refhub ??= await startRefhub({
        databaseUrl: url,
        dataDir: env.dataDir,
        redisUrl: env.redisUrl,
        queuePrefix: prefix,
        ehrUrl: env.sandbox.address,
        nodeOptions: plan.nodeOptions,
      });
      rss ??= sampleRss(refhub);
      const measured = await measureReads(refhub, reader, await readerIds(store.db, reader), plan);
      env.log(
        `  growth: ${size} referrals: get ${Math.round(measured.get.rate)} req/s p99 ${Math.round(measured.get.tail)} ms, ` +
          `list ${Math.round(measured.list.rate)} req/s p99 ${Math.round(measured.list.tail)} ms`,
      );
      reads.set(size, measured);
    }
    if (refhub === undefined) throw new Error('no size was measured');

    const submitter = { refhub, writer, offset: 9_000_000 };
    const empty = await forwardRun(env, state, queue, submitter, EMPTY_QUEUE_RUN, 0, true, env.log);
    const backlog = await forwardRun(
      env,
      state,
      queue,
      { ...submitter, offset: 9_000_001 },
      plan.backlog,
      1_000_000,
      false,
      env.log,
    );
    await queue.pause();

    const sizes = [...plan.sizes];
    const smallest = sizes[0] ?? 0;
    const largest = sizes[sizes.length - 1] ?? 0;
    const first = reads.get(smallest);
    if (first === undefined) throw new Error('the smallest size was not measured');
    const rows: ResultRow[] = [];
    for (const kind of ['get', 'list'] as const) {
      for (const size of sizes) {
        const m = reads.get(size);
        if (m === undefined) continue;
        const row: ResultRow = {
          scenario: `${kind} @ ${size.toLocaleString('en')}`,
          unit: 'req/s',
          refhub: m[kind],
          baseline: size === smallest ? null : first[kind],
          baselineName: `the same ${kind} at ${smallest.toLocaleString('en')} referrals`,
          rounds: plan.rounds,
          note: `${plan.institutions} clinics share the referrals; the reader's clinic holds ${Math.floor(size / plan.institutions).toLocaleString('en')}`,
        };
        const tailRatio = ratio(m[kind].tail, first[kind].tail);
        rows.push(
          size === largest && size !== smallest
            ? {
                ...row,
                goal: {
                  text: `p99 ≤ ${GROWTH_GOAL.maxP99}× the p99 at ${smallest.toLocaleString('en')}`,
                  met: m[kind].errors === 0 && tailRatio <= GROWTH_GOAL.maxP99,
                },
              }
            : row,
        );
      }
    }
    rows.push({
      scenario: `forward, ${plan.backlog.toLocaleString('en')} queued`,
      unit: 'referrals/s',
      refhub: { ...backlog, rssMiB: rss?.stop() ?? Number.NaN },
      baseline: empty,
      baselineName: `the rate with an empty queue (${EMPTY_QUEUE_RUN.toLocaleString('en')} referrals)`,
      rounds: 1,
      goal: {
        text: `rate ≥ ${GROWTH_GOAL.minBacklogRate}× the empty queue's`,
        met: backlog.errors === 0 && ratio(backlog.rate, empty.rate) >= GROWTH_GOAL.minBacklogRate,
      },
      note:
        `deliveries per second between the ${WINDOW.from.toLocaleString('en')}th and the ` +
        `${WINDOW.to.toLocaleString('en')}th, with the database at ${largest.toLocaleString('en')} referrals`,
    });
    return rows;
  } finally {
    rss?.stop();
    await queue.close().catch(() => undefined);
    connection.disconnect();
    await refhub?.stop();
    await store.close();
  }
}
