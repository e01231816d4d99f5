// Cost as the work grows (PostgreSQL): the get, list, worklist and search of the API, measured as the
// database grows from 100,000 referrals to 1,000,000 (and 10,000,000 when asked), spread over 10
// sending clinics, each referral with its timeline and audit rows; then a backlog: forwards queued
// during an EHR outage, drained once it ends, against the rate of forwarding with an empty queue, and
// the API's p99 while it drains against its idle figure.
//
// The database is one of its own with a `refhub all` of its own (its own queue prefix; the run's
// sandbox EHR). Each clinic gets one draft written as the API writes it, then copied in SQL
// (bulk-seed.ts) up to its share; a tenth of the reader clinic's are sent back to it, as a provider
// asking it to act leaves them (its `needs-action` worklist); after each step `VACUUM ANALYZE`, as
// autovacuum would. The same refhub keeps running from step to step, as a live one would while its
// database grows.
//
// Forwarding with an empty queue: the forward queue is paused (BullMQ's pause, as an operator would),
// a referral is submitted through the API and copied in SQL with its due outbox rows, the relay moves
// them all into the queue, and the queue is resumed. The backlog: the sandbox EHR answers 503 to
// everything (an outage), so the first forwards fail and the EHR's circuit opens; a referral is
// submitted and copied with its outbox rows as before, and the relay queues them all while the circuit
// holds them back; then the EHR answers again, its next probe closes the circuit, and the backlog
// drains while the API is read. The rate is the deliveries per second between the 1,000th and the
// 4,000th, so that neither the start nor the end of the run counts.
import type autocannon from 'autocannon';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { sql, type Kysely } from 'kysely';
import { request } from 'undici';
import { migrateToLatest, openStore } from '../../src/db/database.ts';
import { queueKeyPrefix } from '../../src/queue/prefix-claim.ts';
import { FORWARD_QUEUE } from '../../src/queue/registry.ts';
import type { Database } from '../../src/db/schema.ts';
import { cloneReferral } from '../bulk-seed.ts';
import { benchCipher } from '../data-keys.ts';
import type { BenchEnv } from '../environment.ts';
import { getEach, jsonHeaders, measureHttp } from '../load.ts';
import { sampleRss, startRefhub, type Service } from '../processes.ts';
import { BENCH_REQUESTER, seedDrafts, seedSenders, typicalReferralFields, type BenchParty } from '../seed.ts';
import { medianOfRounds, ratio, type Measurement, type ResultRow } from '../stats.ts';
import type { RoundPlan } from './api.ts';

export interface GrowthPlan extends RoundPlan {
  /** Referrals in the database at each step, ascending (100,000 and 1,000,000; 10,000,000 when asked). */
  readonly sizes: readonly number[];
  readonly institutions: number;
  /** Referrals queued before the forwarding rate is measured (100,000). */
  readonly backlog: number;
  readonly nodeOptions: readonly string[];
}

/**
 * The goals: p99 at the largest size within 1.5× of p99 at the smallest; the backlog drained at ≥ 0.8×
 * the empty queue's rate, and the API's p99 while it drains within 2× its idle figure.
 */
export const GROWTH_GOAL = { maxP99: 1.5, minBacklogRate: 0.8, maxDrainP99: 2 } as const;

/** The reads measured at each size. */
const READS = ['get', 'list', 'worklist', 'search'] as const;
type Read = (typeof READS)[number];

/** One in this many of the reader clinic's referrals is sent back to it (its `needs-action` worklist). */
const SENT_BACK_EVERY = 10;

/** The sandbox EHR's answers during the outage: more than the circuit's probes take. */
const OUTAGE_ANSWERS = 1000;

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
  // A tenth of the reader clinic's drafts (those not yet chosen), sent back as sendBack (seed.ts) does.
  const reader = state.senders[0];
  if (reader !== undefined) {
    await sql`
      update referrals set status = 'sender-action-required', submitted_at = created_at, updated_at = created_at
       where sender_id_type = ${reader.institution.idType} and sender_id = ${reader.institution.id}
         and status = 'draft' and abs(hashtext(id::text)) % ${SENT_BACK_EVERY} = 0`.execute(state.db);
  }
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

/** Each read of the API at its next request, as the reader clinic's system sends it. */
function readRequests(reader: BenchParty, ids: readonly string[]): Record<Read, autocannon.Request> {
  const acting = {
    requesterIdentifier: BENCH_REQUESTER,
    institutionIdType: reader.institution.idType,
    institutionId: reader.institution.id,
  };
  const query = new URLSearchParams(acting).toString();
  const pick = () => ids[Math.floor(Math.random() * ids.length)] ?? '';
  const institution = `/api/v1/institutions/${reader.institution.idType}/${reader.institution.id}`;
  return {
    get: getEach(() => `/api/v1/referrals/${pick()}?${query}`),
    list: getEach(() => `${institution}/referrals?pageSize=50`),
    worklist: getEach(() => `${institution}/worklists/needs-action?pageSize=50`),
    // The search by patient: the UIN of the clinic's template, which the copies do not share.
    search: {
      method: 'POST',
      path: `${institution}/referrals/search`,
      body: JSON.stringify({
        requesterIdentifier: BENCH_REQUESTER,
        patientUin: typicalReferralFields(0).patientUin,
        pageSize: 50,
      }),
    },
  };
}

function measureRead(refhub: Service, reader: BenchParty, request: autocannon.Request, plan: GrowthPlan) {
  return (seconds: number) =>
    measureHttp({
      service: refhub,
      connections: plan.connections,
      seconds,
      headers: jsonHeaders(reader.key),
      requests: [request],
    });
}

async function measureReads(
  refhub: Service,
  reader: BenchParty,
  ids: readonly string[],
  plan: GrowthPlan,
): Promise<Record<Read, Measurement>> {
  const requests = readRequests(reader, ids);
  const measured = {} as Record<Read, Measurement>;
  for (const read of READS) {
    const measure = measureRead(refhub, reader, requests[read], plan);
    await measure(plan.warmupSeconds);
    const rounds: Measurement[] = [];
    for (let round = 0; round < plan.rounds; round++) rounds.push(await measure(plan.seconds));
    measured[read] = medianOfRounds(rounds);
  }
  return measured;
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

async function sandboxBehaviour(sandbox: Service, behaviour: { statuses?: number[] }): Promise<void> {
  const response = await request(`${new URL(sandbox.address).origin}/_sandbox/behaviour`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(behaviour),
  });
  await response.body.dump();
  if (response.statusCode !== 200) throw new Error(`the sandbox's behaviour answered ${response.statusCode}`);
}

async function circuitState(db: Kysely<Database>): Promise<string | undefined> {
  const row = await db.selectFrom('ehr_circuit').select('state').executeTakeFirst();
  return row?.state;
}

interface ForwardRun {
  readonly count: number;
  readonly firstNumber: number;
  /** Queued during an EHR outage (the circuit open), rather than while the queue is paused. */
  readonly outage: boolean;
  /** Leave the queue empty for the next run. */
  readonly drain: boolean;
  /** Measured from the first delivery on, while the run delivers (the API under the drain). */
  readonly whileDelivering?: () => Promise<Measurement>;
}

/**
 * Puts `count` submitted referrals in the forward queue (copies of one submitted through the API),
 * while the queue is paused or during an EHR outage, then resumes the queue or ends the outage and
 * measures the delivery rate over the window (and, when asked, the API while it delivers).
 */
async function forwardRun(
  env: BenchEnv,
  state: GrowthState,
  queue: Queue,
  submitter: { refhub: Service; writer: BenchParty; offset: number },
  run: ForwardRun,
  log: (m: string) => void,
): Promise<{ rate: Measurement; during: Measurement | undefined }> {
  // The template is queued with the queue paused either way, so that its copies are queued as it is.
  await queue.pause();
  const template = await submittedTemplate(state.db, submitter);
  if (run.outage) await sandboxBehaviour(env.sandbox, { statuses: Array(OUTAGE_ANSWERS).fill(503) });
  for (let first = 0; first < run.count; first += 50_000) {
    await cloneReferral(state.db, await benchCipher(state.db), {
      templateId: template,
      count: Math.min(50_000, run.count - first),
      firstNumber: run.firstNumber + first,
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
  // During the outage the workers take the forwards as they are queued: the first fail, the circuit
  // opens, and the rest wait in the queue without an attempt.
  if (run.outage) await queue.resume();
  const relayed = Date.now();
  const until = relayed + 1_800_000;
  while ((await pending(state.db)) > 0 && Date.now() < until) await sleep(500);
  if (run.outage) {
    while ((await circuitState(state.db)) !== 'open' && Date.now() < until) await sleep(500);
  }
  const relaySeconds = (Date.now() - relayed) / 1000;
  const waiting = await queue.getJobCountByTypes('wait', 'prioritized', 'delayed');
  log(
    `  growth: ${waiting} forwards queued (the relay took ${relaySeconds.toFixed(0)} s${run.outage ? ', the EHR down and its circuit open' : ''}); ` +
      (run.outage ? 'the EHR answers again' : 'resuming the queue'),
  );
  const base = await delivered(env.sandbox);
  const samples: { at: number; count: number }[] = [];
  const began = Date.now();
  if (run.outage) await sandboxBehaviour(env.sandbox, {});
  else await queue.resume();
  let during: Promise<Measurement> | undefined;
  const end = Date.now() + 1_200_000;
  for (;;) {
    const count = (await delivered(env.sandbox)) - base;
    samples.push({ at: Date.now(), count });
    if (count > 0 && during === undefined) during = run.whileDelivering?.();
    if (count >= WINDOW.to || Date.now() > end) break;
    await sleep(100);
  }
  const rate = windowRate(samples, WINDOW.from, WINDOW.to);
  const measuredDuring = await during;
  // The run that measures the empty queue leaves it empty for the next.
  if (run.drain) {
    while (
      (await queue.getJobCountByTypes('wait', 'prioritized', 'active', 'delayed')) > 0 &&
      Date.now() < end
    )
      await sleep(500);
  }
  log(
    `  growth: ${Math.round(rate)} referrals/s with ${waiting} queued (${((Date.now() - began) / 1000).toFixed(0)} s)` +
      (measuredDuring === undefined ? '' : `; get p99 ${Math.round(measuredDuring.tail)} ms meanwhile`),
  );
  return {
    rate: { rate, p50: Number.NaN, tail: Number.NaN, rssMiB: Number.NaN, errors: Number.isNaN(rate) ? 1 : 0 },
    during: measuredDuring,
  };
}

export async function growthScenario(env: BenchEnv, plan: GrowthPlan): Promise<ResultRow[]> {
  if (env.engine !== 'postgres') throw new Error('the growth scenario runs on PostgreSQL only');
  const url = await env.extraDatabase('growth');
  const store = await openStore({ engine: 'postgres', url, poolSize: 2 });
  let refhub: Service | undefined;
  let rss: { stop(): number } | undefined;
  const connection = new Redis(env.redisUrl, { maxRetriesPerRequest: null });
  const prefix = `${env.queuePrefix}-growth`;
  // refhub's own forward queue, under its hash tag (queue/prefix-claim.ts).
  const queue = new Queue(FORWARD_QUEUE, { connection, prefix: queueKeyPrefix(prefix, FORWARD_QUEUE) });
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

    const reads = new Map<number, Record<Read, Measurement>>();
    let ids: string[] = [];
    // Started before the copies: as it starts, refhub seals what it finds unsealed (data written before
    // field encryption, which the copies are), and a million copies would hold its start for minutes.
    refhub = await startRefhub({
      databaseUrl: url,
      dataDir: env.dataDir,
      redisUrl: env.redisUrl,
      queuePrefix: prefix,
      ehrUrl: env.sandbox.address,
      nodeOptions: plan.nodeOptions,
    });
    rss = sampleRss(refhub);
    for (const size of plan.sizes) {
      await growTo(state, size, env.log);
      ids = await readerIds(store.db, reader);
      const measured = await measureReads(refhub, reader, ids, plan);
      env.log(
        `  growth: ${size} referrals: ` +
          READS.map(
            (read) =>
              `${read} ${Math.round(measured[read].rate)} req/s p99 ${Math.round(measured[read].tail)} ms`,
          ).join(', '),
      );
      reads.set(size, measured);
    }
    const service = refhub;

    const sizes = [...plan.sizes];
    const smallest = sizes[0] ?? 0;
    const largest = sizes[sizes.length - 1] ?? 0;
    const first = reads.get(smallest);
    const last = reads.get(largest);
    if (first === undefined || last === undefined) throw new Error('the sizes were not measured');

    const submitter = { refhub, writer, offset: 9_000_000 };
    const empty = await forwardRun(
      env,
      state,
      queue,
      submitter,
      { count: EMPTY_QUEUE_RUN, firstNumber: 0, outage: false, drain: true },
      env.log,
    );
    const backlog = await forwardRun(
      env,
      state,
      queue,
      { ...submitter, offset: 9_000_001 },
      {
        count: plan.backlog,
        firstNumber: 1_000_000,
        outage: true,
        drain: false,
        whileDelivering: () =>
          measureRead(service, reader, readRequests(reader, ids).get, plan)(plan.seconds),
      },
      env.log,
    );
    await queue.pause();

    const rows: ResultRow[] = [];
    for (const read of READS) {
      for (const size of sizes) {
        const m = reads.get(size);
        if (m === undefined) continue;
        const row: ResultRow = {
          scenario: `${read} @ ${size.toLocaleString('en')}`,
          unit: 'req/s',
          refhub: m[read],
          baseline: size === smallest ? null : first[read],
          baselineName: `the same ${read} at ${smallest.toLocaleString('en')} referrals`,
          rounds: plan.rounds,
          note: `${plan.institutions} clinics share the referrals; the reader's clinic holds ${Math.floor(size / plan.institutions).toLocaleString('en')}`,
        };
        const tailRatio = ratio(m[read].tail, first[read].tail);
        rows.push(
          size !== smallest
            ? {
                ...row,
                goal: {
                  text: `p99 ≤ ${GROWTH_GOAL.maxP99}× the p99 at ${smallest.toLocaleString('en')}`,
                  met: m[read].errors === 0 && tailRatio <= GROWTH_GOAL.maxP99,
                },
              }
            : row,
        );
      }
    }
    rows.push({
      scenario: `forward, ${plan.backlog.toLocaleString('en')} queued during an outage`,
      unit: 'referrals/s',
      refhub: { ...backlog.rate, rssMiB: rss.stop() },
      baseline: empty.rate,
      baselineName: `the rate with an empty queue (${EMPTY_QUEUE_RUN.toLocaleString('en')} referrals)`,
      rounds: 1,
      goal: {
        text: `rate ≥ ${GROWTH_GOAL.minBacklogRate}× the empty queue's`,
        met:
          backlog.rate.errors === 0 &&
          ratio(backlog.rate.rate, empty.rate.rate) >= GROWTH_GOAL.minBacklogRate,
      },
      note:
        `deliveries per second between the ${WINDOW.from.toLocaleString('en')}th and the ` +
        `${WINDOW.to.toLocaleString('en')}th after the EHR answers again, with the database at ` +
        `${largest.toLocaleString('en')} referrals and the API read meanwhile`,
    });
    if (backlog.during !== undefined) {
      rows.push({
        scenario: `get while ${plan.backlog.toLocaleString('en')} forwards drain`,
        unit: 'req/s',
        refhub: backlog.during,
        baseline: last.get,
        baselineName: `the same get, idle, at ${largest.toLocaleString('en')} referrals`,
        rounds: 1,
        goal: {
          text: `p99 ≤ ${GROWTH_GOAL.maxDrainP99}× the idle p99`,
          met:
            backlog.during.errors === 0 &&
            ratio(backlog.during.tail, last.get.tail) <= GROWTH_GOAL.maxDrainP99,
        },
        note: 'from the first delivery after the outage, for the measured seconds',
      });
    }
    return rows;
  } finally {
    rss?.stop();
    await queue.close().catch(() => undefined);
    connection.disconnect();
    await refhub?.stop();
    await store.close();
  }
}
