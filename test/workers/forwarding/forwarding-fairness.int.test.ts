// Fair forwarding across institutions (docs/scaling.md, "Fair delivery across institutions"): the
// forward queue is ordered round-robin by clinic, and no slot is kept idle while forwards wait.
// - One clinic's import queued first does not hold back another clinic's forward queued after it: a
//   worker of one slot sends A's forward second, after B's first, not after B's whole import.
// - One clinic alone may use every slot: a worker of 6 slots holds 6 of B's requests at the EHR at
//   once (while the EHR holds them), where a cap per clinic would have left slots idle.
// Small on purpose: B's import is 6 forwards.
import type { QueueBackend } from '../../../src/queue/backend.ts';
import type { Worker } from 'bullmq';
import { afterEach, describe, expect, it } from 'vitest';
import { circuitSettings } from '../../../src/composition/background.ts';
import { institutionKey } from '../../../src/queue/registry.ts';
import { createEhrCircuit } from '../../../src/workers/forwarding/ehr-circuit.ts';
import { createEhrClient, type EhrClient } from '../../../src/workers/forwarding/ehr-client.ts';
import { startEhrForwardWorker } from '../../../src/workers/forwarding/forwarding.worker.ts';
import { createQueueApp, eventually, type QueueApp } from '../../support/bridge.ts';
import { PATIENT } from '../../support/fixtures/patients.ts';
import { startRecordingEhr, type RecordingEhr } from '../../support/recording-ehr.ts';
import { call } from '../../support/scenarios.ts';
import type { TestParty } from '../../support/test-app.ts';

// Long enough that no held request ends while the test runs.
const DEADLINE_SECONDS = 120;
const IMPORT = 6;

describe('fair forwarding across institutions', () => {
  let t: QueueApp;
  let ehr: RecordingEhr | undefined;
  let client: EhrClient | undefined;
  let worker: Worker | undefined;
  let backend: QueueBackend | undefined;

  afterEach(async () => {
    // The EHR goes first: its held sockets close, so no job waits for its deadline.
    await ehr?.close();
    await worker?.close(true);
    await client?.close();
    await backend?.close();
    await t.close();
  });

  async function start(latencyMs: number) {
    ehr = await startRecordingEhr();
    ehr.answer({ latencyMs });
    t = await createQueueApp('postgres', {
      env: { EHR_URL: ehr.url, EHR_ATTEMPT_TIMEOUT_SECONDS: String(DEADLINE_SECONDS) },
    });
    return ehr;
  }

  /** A submitted referral of `who`, as the relay hands its forward to the queue. */
  async function submitted(who: TestParty) {
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
    return {
      referralId: after.id,
      version: after.version,
      requestId: 'fairness-test',
      institution: institutionKey({
        idType: who.institution.institutionIdType,
        id: who.institution.institutionId,
      }),
    };
  }

  function startWorker(recording: RecordingEhr, concurrency: number) {
    client = createEhrClient({
      url: recording.url,
      token: undefined,
      attemptTimeoutMs: DEADLINE_SECONDS * 1000,
    });
    backend = t.ctx.queueBackend('worker');
    worker = startEhrForwardWorker(
      {
        forwarding: t.ctx.ehrForwarding,
        ehr: client,
        circuit: createEhrCircuit({
          stores: t.ctx.stores,
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
      { backend, backlog: t.ctx.stores.forwarding.backlog, backoffBaseMs: 20, concurrency },
    );
  }

  it("sends A's forward next after B's import was queued ahead of it", async () => {
    const recording = await start(0);
    const b = [];
    for (let i = 0; i < IMPORT; i++) b.push(await submitted(t.otherSender));
    await t.ctx.queues.enqueueForwards(b);
    const a = await submitted(t.sender);
    await t.ctx.queues.enqueueForward(a);

    startWorker(recording, 1);
    const arrived = await eventually('every forward at the EHR', () =>
      Promise.resolve(recording.deliveries().length === IMPORT + 1 ? recording.deliveries() : undefined),
    );
    const order = arrived.map((d) => d.referralId);
    // B's first was queued before A's; A's comes right after it, and then the rest of B's in order.
    expect(order).toEqual([b[0]?.referralId, a.referralId, ...b.slice(1).map((f) => f.referralId)]);
    expect(arrived.every((d) => d.valid)).toBe(true);
  });

  it('lets one clinic use every slot while nobody else waits', async () => {
    const recording = await start(10 * DEADLINE_SECONDS * 1000);
    const b = [];
    for (let i = 0; i < IMPORT; i++) b.push(await submitted(t.otherSender));
    await t.ctx.queues.enqueueForwards(b);

    startWorker(recording, IMPORT);
    // Bounded well within one attempt deadline: each forward is a render and a request.
    await eventually(
      "all of B's forwards held at once",
      () => Promise.resolve(recording.inFlight() === IMPORT ? true : undefined),
      (DEADLINE_SECONDS * 1000) / 4,
    );
    expect(new Set(recording.deliveries().map((d) => d.referralId))).toEqual(
      new Set(b.map((f) => f.referralId)),
    );
    expect(recording.counts()).toMatchObject({ answered: 0, cutOff: 0 });
  }, 60_000);
});
