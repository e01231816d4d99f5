// Fair delivery across institutions (docs/webhooks.md, "Fair delivery"): one institution whose
// receivers accept and never answer cannot hold every slot of a worker. Institution B's deliveries go
// to a receiver that holds each request open; A's delivery must arrive while B's are still held, long
// before any of them reaches its deadline. Small on purpose: a worker of 4 slots, at most 1 per
// institution, and B's 6 deliveries (more than the worker's slots).
import type { QueueBackend } from '../../../src/queue/backend.ts';
import type { Worker } from 'bullmq';
import { afterEach, describe, expect, it } from 'vitest';
import { createWebhookRelay } from '../../../src/queue/webhooks-relay.ts';
import { startWebhookWorker } from '../../../src/workers/webhooks/webhooks.worker.ts';
import { createQueueApp, eventually, type QueueApp } from '../../support/bridge.ts';
import { PATIENT } from '../../support/fixtures/patients.ts';
import { call } from '../../support/scenarios.ts';
import type { TestParty } from '../../support/test-app.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../../support/webhook-receiver.ts';

const CONCURRENCY = 4;
const PER_INSTITUTION = 1;
// Long enough that no held request of B ends while the test runs: A's delivery cannot be waiting for
// one of B's to time out.
const DEADLINE_SECONDS = 120;

const base = (p: TestParty) =>
  `/api/v1/institutions/${p.institution.institutionIdType}/${p.institution.institutionId}/webhook-subscriptions`;

describe('fair webhook delivery across institutions', () => {
  let t: QueueApp;
  let worker: Worker | undefined;
  let backend: QueueBackend | undefined;
  const receivers: WebhookReceiver[] = [];

  afterEach(async () => {
    // The receivers go first: their held sockets close, so no job waits for its deadline.
    await Promise.all(receivers.splice(0).map((r) => r.close()));
    await worker?.close(true);
    await backend?.close();
    await t.close();
  });

  it("delivers A's event while B's receivers hold every request B was allowed to send", async () => {
    t = await createQueueApp('postgres', {
      env: { WEBHOOK_ATTEMPT_TIMEOUT_SECONDS: String(DEADLINE_SECONDS) },
    });
    const [held, answering] = await Promise.all([startWebhookReceiver(), startWebhookReceiver()]);
    receivers.push(held, answering);
    held.answer({ delayMs: 10 * DEADLINE_SECONDS * 1000 });

    const subscribe = async (who: TestParty, url: string) => {
      const res = await t.request(who, { method: 'POST', url: base(who), payload: { url } });
      expect(res.statusCode, res.body).toBe(201);
    };
    const draftBy = async (who: TestParty) =>
      (await call(t, who, 'POST', '/api/v1/referrals', { offeringId: 'cgh-gastro', ...PATIENT }, 201)) as {
        id: string;
      };
    // B: two subscriptions to the receiver that never answers, three referrals: six deliveries.
    await subscribe(t.otherSender, `${held.url}/b1`);
    await subscribe(t.otherSender, `${held.url}/b2`);
    for (let i = 0; i < 3; i++) await draftBy(t.otherSender);
    await subscribe(t.sender, `${answering.url}/a`);

    const relay = createWebhookRelay({
      stores: t.ctx.stores,
      clock: t.ctx.clock,
      logger: t.ctx.logger,
      enqueue: (jobs) => t.ctx.queues.enqueueWebhooks(jobs),
    });
    expect(await relay.drainOnce()).toMatchObject({ jobs: 6 });

    backend = t.ctx.queueBackend('worker');
    worker = startWebhookWorker(
      { ...t.ctx.webhookDelivery(), logger: t.ctx.logger },
      {
        backend,
        retryScheduleMs: t.ctx.config.webhookRetryScheduleMs,
        concurrency: CONCURRENCY,
        perInstitution: PER_INSTITUTION,
      },
    );
    // The state: B's requests have arrived and are being held.
    await eventually("B's requests held", () => Promise.resolve(held.inFlight() > 0 ? true : undefined));

    // A's referral comes after all of B's deliveries in the queue.
    const a = await draftBy(t.sender);
    await relay.drainOnce();
    // Bounded by the settings under test: well within one delivery deadline of B's held requests.
    await eventually(
      "A's delivery",
      () => Promise.resolve(answering.deliveries().some((d) => d.body.includes(a.id)) ? true : undefined),
      (DEADLINE_SECONDS * 1000) / 4,
    );

    // B's requests are still open, and B never held more than its share of the worker.
    expect(held.inFlight()).toBe(PER_INSTITUTION);
    expect(held.deliveries()).toHaveLength(PER_INSTITUTION);
    // A's job finishes; all six of B's are still live (one held, the rest set aside), none has
    // spent an attempt, and none failed.
    const queue = t.ctx.queues.queues.webhooks;
    await eventually("A's job completed", async () =>
      (await queue.getJobCounts('completed')).completed === 1 ? true : undefined,
    );
    const live = await queue.getJobs(['active', 'delayed', 'waiting', 'prioritized']);
    expect(live).toHaveLength(6);
    expect(live.every((job) => job.attemptsMade === 0)).toBe(true);
    expect((await queue.getJobCounts('failed')).failed).toBe(0);
    // Each time B's jobs were set aside is counted, for operators to see the cap at work.
    const setAside = await t.ctx.metrics.registry.getSingleMetric('refhub_jobs_set_aside_total')?.get();
    const webhooks = setAside?.values.find((v) => v.labels.queue === 'webhooks');
    expect(webhooks?.value).toBeGreaterThanOrEqual(live.length - PER_INSTITUTION);
  }, 60_000);
});
