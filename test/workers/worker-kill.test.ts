// `refhub worker` dies hard, again and again, while forwards are in flight: it runs as a child process
// against PostgreSQL and Redis and is killed with SIGKILL, then started again. Whatever it was doing
// when it died (a claimed outbox batch, active jobs, an EHR request, a transaction) is picked up again
// (the outbox lease, BullMQ's stalled-job check, the reconciler), and because every step is safe to
// repeat, the EHR ends up with each referral's form exactly once, under one message ID and one hash.
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
} from '../support/bridge.ts';
import { testDatabaseUrl } from '../support/engines.ts';
import { CANARY, CANARY_MARKERS } from '../support/fixtures/patients.ts';
import type { SandboxRequestCounts } from '../../src/sandbox-ehr/sandbox-ehr.ts';
import type { ProcessExit, SandboxEhrProcess } from '../support/sandbox-ehr-process.ts';
import { startWorkerProcess, type WorkerProcess } from '../support/worker-process.ts';

const REFERRALS = 300;
const METRICS_TOKEN = 'worker-kill-metrics-token-of-32-chars';
const KILLS = 5;
/** EHR requests a worker must have sent since it started before it is killed: forwards in flight. */
const REQUESTS_BEFORE_KILL = 12;

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
      env: { RECONCILE_INTERVAL_SECONDS: '2', EHR_BACKOFF_BASE_MS: '20', METRICS_TOKEN },
    });
    return worker;
  };
  const collect = (w: WorkerProcess) => outputs.push(w.output());

  it(`forwards all ${REFERRALS} exactly once although the worker is killed ${KILLS} times`, async () => {
    // Each answer takes a while, so that every kill finds EHR requests in flight.
    await ehr.setBehaviour({ latencyMs: 300 });
    let current = await start();
    const submitting = submitReferrals(t, REFERRALS, {
      concurrency: 20,
      fields: (i) => (i === 0 ? CANARY : {}),
    });
    // Awaited after the kills; until then a failure must not surface as an unhandled rejection.
    submitting.catch(() => undefined);

    const exits: ProcessExit[] = [];
    let cutOff = 0;
    for (let kill = 0; kill < KILLS; kill++) {
      const before = (await ehr.requests()).total;
      // Killed once it has done some work and has several EHR requests in flight.
      const inFlight = await eventually(
        `EHR requests in flight from worker ${kill + 1}`,
        async () => {
          const r = await ehr.requests();
          const open = unanswered(r) - cutOff;
          return r.total - before >= REQUESTS_BEFORE_KILL && open >= 3 ? open : undefined;
        },
        60_000,
      );
      expect(inFlight).toBeGreaterThanOrEqual(3);
      exits.push(await current.kill());
      // What was in flight is cut off now; the EHR never answers it.
      await new Promise((resolve) => setTimeout(resolve, 400));
      cutOff = unanswered(await ehr.requests());
      collect(current);
      current = await start();
    }
    const ids = await submitting;
    expect(exits).toEqual(Array.from({ length: KILLS }, () => ({ code: null, signal: 'SIGKILL' })));
    const deliveredBeforeRecovery = (await ehr.deliveries()).length;
    expect(deliveredBeforeRecovery, 'the kills came while work remained').toBeLessThan(REFERRALS);

    await eventually(
      `all ${REFERRALS} forwarded`,
      async () => {
        const states = await forwardingStates(t, ids);
        return states.forwarded === REFERRALS ? states : undefined;
      },
      150_000,
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
    expect(unanswered(requests), 'every kill cut off requests in flight').toBeGreaterThanOrEqual(KILLS);
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
