// Fair forwarding across institutions (docs/scaling.md, "Fair delivery across institutions"): one
// clinic's backlog cannot hold every slot of the forward worker. The recording EHR holds each request
// open; institution B's forwards are queued first, more than the worker has slots, and A's one forward
// after them must reach the EHR while B's are still held. Small on purpose: a worker of 4 slots, at
// most 1 per institution, and B's 6 forwards.
import type { Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { circuitSettings } from '../../../src/composition/background.ts';
import { createEhrCircuit } from '../../../src/workers/forwarding/ehr-circuit.ts';
import { createEhrClient, type EhrClient } from '../../../src/workers/forwarding/ehr-client.ts';
import { startEhrForwardWorker } from '../../../src/workers/forwarding/forwarding.worker.ts';
import { createQueueApp, eventually, testRedisUrl, type QueueApp } from '../../support/bridge.ts';
import { PATIENT } from '../../support/fixtures/patients.ts';
import { startRecordingEhr, type RecordingEhr } from '../../support/recording-ehr.ts';
import { call } from '../../support/scenarios.ts';
import type { TestParty } from '../../support/test-app.ts';

const CONCURRENCY = 4;
const PER_INSTITUTION = 1;
// Long enough that no held request of B ends while the test runs.
const DEADLINE_SECONDS = 120;

describe('fair forwarding across institutions', () => {
  let t: QueueApp;
  let ehr: RecordingEhr | undefined;
  let client: EhrClient | undefined;
  let worker: Worker | undefined;
  let connection: Redis | undefined;

  afterEach(async () => {
    // The EHR goes first: its held sockets close, so no job waits for its deadline.
    await ehr?.close();
    await worker?.close(true);
    await client?.close();
    connection?.disconnect();
    await t.close();
  });

  it("sends A's forward while the EHR holds every request B was allowed to send", async () => {
    ehr = await startRecordingEhr();
    ehr.answer({ latencyMs: 10 * DEADLINE_SECONDS * 1000 });
    t = await createQueueApp('postgres', {
      env: { EHR_URL: ehr.url, EHR_ATTEMPT_TIMEOUT_SECONDS: String(DEADLINE_SECONDS) },
    });
    const submitted = async (who: TestParty) => {
      const draft = (await call(
        t,
        who,
        'POST',
        '/api/v1/referrals',
        { offeringId: 'cgh-gastro', ...PATIENT },
        201,
      )) as { id: string };
      const after = (await call(t, who, 'POST', `/api/v1/referrals/${draft.id}/submit`, {})) as {
        id: string;
        version: number;
      };
      return { referralId: after.id, version: after.version, requestId: 'fairness-test' };
    };
    // B's import: six forwards, queued before A's.
    const b = [];
    for (let i = 0; i < 6; i++) b.push(await submitted(t.otherSender));
    await t.ctx.queues.enqueueForwards(b);

    client = createEhrClient({ url: ehr.url, token: undefined, attemptTimeoutMs: DEADLINE_SECONDS * 1000 });
    connection = new Redis(testRedisUrl(), { maxRetriesPerRequest: null });
    worker = startEhrForwardWorker(
      {
        forwarding: t.ctx.ehrForwarding,
        ehr: client,
        circuit: createEhrCircuit({
          db: t.ctx.db,
          clock: t.ctx.clock,
          logger: t.ctx.logger,
          metrics: t.ctx.metrics,
          settings: circuitSettings(t.ctx.config),
        }),
        renderEhrForm: t.ctx.renderEhrForm,
        clock: t.ctx.clock,
        metrics: t.ctx.metrics,
        logger: t.ctx.logger,
        maxAttempts: 3,
      },
      {
        connection,
        queuePrefix: t.ctx.config.queuePrefix,
        backoffBaseMs: 20,
        concurrency: CONCURRENCY,
        perInstitution: PER_INSTITUTION,
      },
    );
    const recording = ehr;
    // The state: B's requests have arrived and are being held.
    await eventually("B's forwards held", () => Promise.resolve(recording.inFlight() > 0 ? true : undefined));

    const a = await submitted(t.sender);
    await t.ctx.queues.enqueueForward(a);
    // Bounded by the settings under test: well within one attempt deadline of B's held requests.
    await eventually(
      "A's forward at the EHR",
      () =>
        Promise.resolve(recording.deliveries().some((d) => d.referralId === a.referralId) ? true : undefined),
      (DEADLINE_SECONDS * 1000) / 4,
    );

    // Nothing was answered: B's requests are still open, and B never had more than its share.
    expect(recording.counts()).toMatchObject({ answered: 0, cutOff: 0 });
    const bIds = new Set(b.map((f) => f.referralId));
    expect(recording.deliveries().filter((d) => bIds.has(d.referralId ?? ''))).toHaveLength(PER_INSTITUTION);
    expect(recording.inFlight()).toBe(PER_INSTITUTION + 1);
    // All seven forwards are still live (B's one held and five set aside, A's held), and none has
    // spent an attempt.
    const live = await t.ctx.queues.queues['ehr-forward'].getJobs([
      'active',
      'delayed',
      'waiting',
      'prioritized',
    ]);
    expect(live).toHaveLength(7);
    expect(live.every((job) => job.attemptsMade === 0)).toBe(true);
  }, 60_000);
});
