// `refhub worker` dies hard, again and again, while forwards are in flight: it runs as a child process
// against PostgreSQL and Redis and is killed with SIGKILL, then started again. Whatever it was doing
// when it died (a claimed outbox batch, active jobs, an EHR request, a transaction) is picked up again
// (the outbox lease, BullMQ's stalled-job check, the reconciler), and because every step is safe to
// repeat, the EHR ends up with each referral's form exactly once, under one message ID and one hash.
// The test waits for states, not for the clock: each kill comes while the sandbox EHR holds requests
// open, the next worker starts once the sandbox has settled every request of the dead one, and the
// recovery is given as long as the worker's lock settings and the reconciler say it may take.
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createBridgeApp,
  eventually,
  forwardingStates,
  startEhr,
  submitReferrals,
  testRedisUrl,
  type BridgeApp,
} from '../../support/bridge.ts';
import { testDatabaseUrl } from '../../support/engines.ts';
import { CANARY, CANARY_MARKERS } from '../../support/fixtures/patients.ts';
import type { SandboxRequestCounts } from '../../../src/sandbox-ehr/sandbox-ehr.ts';
import type { ProcessExit, SandboxEhrProcess } from '../../support/sandbox-ehr-process.ts';
import { startWorkerProcess, type WorkerProcess } from '../../support/worker-process.ts';
import { FORWARD_JOB_LOCKS, jobLockTimings, stalledJobsBackWithinMs } from '../../support/stalled-jobs.ts';

const REFERRALS = 300;
const METRICS_TOKEN = 'worker-kill-metrics-token-of-32-chars';
const KILLS = 5;
/** EHR requests a worker must have sent since it started before it is killed: forwards in flight. */
const REQUESTS_BEFORE_KILL = 12;
/** EHR requests the sandbox holds open when a kill comes. */
const OPEN_AT_KILL = 3;
/** How long each EHR answer takes between kills. */
const EHR_LATENCY_MS = 300;
/**
 * The longest the sandbox allows; far longer than a kill takes to come once requests are held (the
 * wait for them gives up sooner), so a request that arrives while it holds is never answered.
 */
const HOLD_MS = 120_000;
const RECONCILE_INTERVAL_SECONDS = 2;
/** A due forward untouched this long, with no live job, is re-enqueued (src/queue/reconciler.ts). */
const RECONCILER_QUIET_MS = 5_000;
/**
 * From the last kill (and the last submit) until every referral is forwarded: the jobs the killed
 * workers held come back once their locks have expired and a stalled check has run; a job that
 * stalled twice failed, and the reconciler puts its referral back; the margin is for forwarding
 * what is left on a busy machine.
 */
const RECOVERY_BOUND_MS =
  stalledJobsBackWithinMs(FORWARD_JOB_LOCKS) +
  RECONCILER_QUIET_MS +
  RECONCILE_INTERVAL_SECONDS * 1000 +
  30_000;
/** How long a state that comes within seconds on an idle machine may take before the test gives up. */
const STATE_TIMEOUT_MS = 60_000;
/** What the sandbox EHR logs for a request whose sender went away before the answer: cut off. */
const CUT_OFF_LINE = /the client went away before the answer/g;

/** EHR requests that arrived and have not been answered: in flight, or cut off by a kill. */
const unanswered = (r: SandboxRequestCounts) =>
  r.total - r.resets - Object.values(r.byStatus).reduce((sum, n) => sum + n, 0);

describe('killing the worker process with SIGKILL', () => {
  let ehr: SandboxEhrProcess;
  let t: BridgeApp;
  let worker: WorkerProcess | undefined;
  const outputs: { stdout: string; stderr: string }[] = [];

  beforeAll(async () => {
    ehr = await startEhr();
    t = await createBridgeApp('postgres', ehr);
  });
  afterAll(async () => {
    await worker?.stop();
    await t.close();
    await ehr.stop();
  });

  const start = async () => {
    const { rows } = await sql<{ name: string }>`select current_database() as name`.execute(t.ctx.db);
    const databaseUrl = new URL(testDatabaseUrl());
    databaseUrl.pathname = `/${rows[0]?.name ?? ''}`;
    worker = await startWorkerProcess({
      databaseUrl: databaseUrl.toString(),
      redisUrl: testRedisUrl(),
      queuePrefix: t.prefix,
      ehrUrl: ehr.url,
      env: {
        RECONCILE_INTERVAL_SECONDS: String(RECONCILE_INTERVAL_SECONDS),
        EHR_BACKOFF_BASE_MS: '20',
        METRICS_TOKEN,
      },
    });
    return worker;
  };
  const collect = (w: WorkerProcess) => outputs.push(w.output());

  it(`forwards all ${REFERRALS} exactly once although the worker is killed ${KILLS} times`, async () => {
    await ehr.setBehaviour({ latencyMs: EHR_LATENCY_MS });
    let current = await start();
    const submitting = submitReferrals(t, REFERRALS, {
      concurrency: 20,
      fields: (i) => (i === 0 ? CANARY : {}),
    });
    // Awaited after the kills; until then a failure must not surface as an unhandled rejection.
    submitting.catch(() => undefined);

    const exits: ProcessExit[] = [];
    const longestLockMs: number[] = [];
    const heldAtKills: number[] = [];
    /** Requests the sandbox has logged as cut off: their sender went away before the answer. */
    const cutOffSoFar = () => ehr.output().stderr.match(CUT_OFF_LINE)?.length ?? 0;
    for (let kill = 0; kill < KILLS; kill++) {
      const before = (await ehr.requests()).total;
      // Killed once it has done some work and has several EHR requests in flight: the sandbox holds
      // every answer once the worker has done the work, so that what it sees open stays open.
      await eventually(
        `EHR requests from worker ${kill + 1}`,
        async () => ((await ehr.requests()).total - before >= REQUESTS_BEFORE_KILL ? true : undefined),
        STATE_TIMEOUT_MS,
      );
      await ehr.setBehaviour({ latencyMs: HOLD_MS });
      // Every request that arrives from now on is held.
      const heldFrom = (await ehr.requests()).total;
      const held = await eventually(
        `EHR requests held open for worker ${kill + 1}`,
        async () => {
          const arrived = (await ehr.requests()).total - heldFrom;
          return arrived >= OPEN_AT_KILL ? arrived : undefined;
        },
        STATE_TIMEOUT_MS,
      );
      expect(held).toBeGreaterThanOrEqual(OPEN_AT_KILL);
      heldAtKills.push(held);
      const { locksMs } = await jobLockTimings(
        { redisUrl: testRedisUrl(), queuePrefix: t.prefix },
        'ehr-forward',
        FORWARD_JOB_LOCKS.stalledIntervalMs,
      );
      longestLockMs.push(Math.max(...locksMs));
      exits.push(await current.kill());
      // The sandbox has settled every request of the dead worker: each was answered, or it was cut
      // off and logged as such; none is still waiting for its answer.
      await eventually(`the sandbox EHR settling worker ${kill + 1}'s requests`, async () =>
        unanswered(await ehr.requests()) === cutOffSoFar() ? true : undefined,
      );
      await ehr.setBehaviour({ latencyMs: EHR_LATENCY_MS });
      collect(current);
      current = await start();
    }
    const ids = await submitting;
    const recoveryFrom = Date.now();
    const recoveredBy = recoveryFrom + RECOVERY_BOUND_MS;
    // The recovery bound assumes the worker's lock settings: no lock it took can have more left.
    expect(Math.max(...longestLockMs), 'lock left at a kill, in ms').toBeLessThanOrEqual(
      FORWARD_JOB_LOCKS.lockDurationMs,
    );
    expect(exits).toEqual(Array.from({ length: KILLS }, () => ({ code: null, signal: 'SIGKILL' })));
    const deliveredBeforeRecovery = (await ehr.deliveries()).length;
    expect(deliveredBeforeRecovery, 'the kills came while work remained').toBeLessThan(REFERRALS);

    await eventually(
      `all ${REFERRALS} forwarded`,
      async () => {
        const states = await forwardingStates(t, ids);
        return states.forwarded === REFERRALS ? states : undefined;
      },
      recoveredBy - Date.now(),
    );
    console.log(
      `[workers] worker-kill: ${KILLS} kills with ${heldAtKills.join(', ')} EHR requests held open; ` +
        `locks with at most ${Math.max(...longestLockMs)} ms left; all ${REFERRALS} forwarded ` +
        `${Date.now() - recoveryFrom} ms after the last kill and submit (bound ${RECOVERY_BOUND_MS} ms)`,
    );
    // The last worker found the jobs its killed predecessor left active, and counted them.
    const metrics = await fetch(`${current.address}/metrics`, {
      headers: { authorization: `Bearer ${METRICS_TOKEN}` },
    }).then((r) => r.text());
    const stalled = /^refhub_jobs_stalled_total\{queue="ehr-forward"\} (\d+)$/m.exec(metrics)?.[1];
    expect(Number(stalled ?? 0), 'stalled jobs counted').toBeGreaterThan(0);
    await current.stop();
    collect(current);
    worker = undefined;

    // The EHR holds one delivery per referral: 300 message IDs, each a referral's single version.
    const deliveries = await ehr.deliveries();
    expect(deliveries).toHaveLength(REFERRALS);
    expect(new Set(deliveries.map((d) => d.messageId)).size).toBe(REFERRALS);
    expect(new Set(deliveries.map((d) => d.referralId))).toEqual(new Set(ids));
    // Every request the EHR saw carried one of those message IDs (a request cut off by a kill
    // counts as an attempt of its message), and none reused an ID with other bytes (409).
    const requests = await ehr.requests();
    expect(deliveries.reduce((sum, d) => sum + d.attempts, 0)).toBe(requests.total);
    expect(unanswered(requests), 'every kill cut off the requests held open').toBeGreaterThanOrEqual(
      KILLS * OPEN_AT_KILL,
    );
    expect(Object.keys(requests.byStatus).every((status) => status === '200' || status === '201')).toBe(true);
    expect(requests.byStatus['201']).toBe(REFERRALS);

    // Every send of a referral carried the same form: the hash the EHR holds is the one the ledger
    // recorded for each attempt and the one on the referral.
    const ledger = await t.ctx.db
      .selectFrom('ehr_submissions')
      .select(['referral_id', 'outcome', 'sha256', 'message_id'])
      .where('referral_id', 'in', ids)
      .execute();
    const referrals = await t.ctx.db
      .selectFrom('referrals')
      .select(['id', 'ehr_sha256'])
      .where('id', 'in', ids)
      .execute();
    const hashOf = new Map(deliveries.map((d) => [d.referralId, d]));
    for (const row of ledger) {
      expect(row.outcome).not.toBe('failed');
      expect(row.sha256).toBe(hashOf.get(row.referral_id)?.sha256);
      expect(row.message_id).toBe(hashOf.get(row.referral_id)?.messageId);
    }
    for (const r of referrals) expect(r.ehr_sha256).toBe(hashOf.get(r.id)?.sha256);
    expect(new Set(ledger.filter((r) => r.outcome === 'delivered').map((r) => r.referral_id)).size).toBe(
      REFERRALS,
    );

    // No patient data in Redis, nor in anything the worker processes wrote.
    const dump = await t.redisDump();
    const written = outputs.map((o) => o.stdout + o.stderr).join('\n');
    expect(written).toContain('ehr forward attempt');
    for (const marker of CANARY_MARKERS) {
      expect(dump).not.toContain(marker);
      expect(written).not.toContain(marker);
    }
  }, 240_000);
});
