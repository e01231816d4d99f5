// Two installations (two databases) on one Redis and one queue prefix. The second is refused its
// claim on the prefix; and should the two meet anyway (a claim lost with Redis's data while both
// run), a worker that takes the other's job does not act on it: it did complete the other's forward as
// "withdrawn" and remove its reminder schedule, without a word. Now the job fails for good, a warning
// names its job ID and queue, and refhub_jobs_foreign_total counts it.
import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { QueuePrefixTakenError } from '../../src/queue/prefix-claim.ts';
import { forwardJobId, reminderSchedulerId } from '../../src/queue/registry.ts';
import { APP_ENGINES } from '../support/engines.ts';
import {
  createBridgeApp,
  createQueueApp,
  eventually,
  startEhr,
  type BridgeApp,
  type QueueApp,
} from '../support/bridge.ts';
import type { SandboxEhrProcess } from '../support/sandbox-ehr-process.ts';
import { CANARY_MARKERS } from '../support/fixtures/patients.ts';
import { call, createDraft } from '../support/scenarios.ts';

// Two applications per test on a shared, busy machine: generous bounds.
describe.each(APP_ENGINES)(
  'a worker on %s and another installation on the same queue prefix',
  { timeout: 120_000 },
  (engine) => {
    let ehr: SandboxEhrProcess;
    let owner: QueueApp;
    let other: BridgeApp;
    const opened: { close(): Promise<void> }[] = [];

    beforeAll(async () => {
      ehr = await startEhr();
    }, 120_000);
    afterAll(async () => {
      await ehr.stop();
    });
    afterEach(async () => {
      for (const app of opened.splice(0).reverse()) await app.close();
    }, 120_000);

    const open = async () => {
      const shared = `two-installations-${randomUUID()}`;
      // The installation whose referral it is, on the other engine, runs no workers ...
      owner = await createQueueApp(engine === 'pglite' ? 'postgres' : 'pglite', {
        env: { QUEUE_PREFIX: shared, REMINDER_AFTER_SECONDS: '1', REMINDER_INTERVAL_SECONDS: '1' },
      });
      opened.push(owner);
      // ... and the other installation's workers take from the same queues.
      other = await createBridgeApp(engine, ehr, { env: { QUEUE_PREFIX: shared } });
      opened.push(other);
    };

    const foreignCount = async (queue: string) => {
      const text = await other.ctx.metrics.registry.getSingleMetricAsString('refhub_jobs_foreign_total');
      return Number(
        new RegExp(`^refhub_jobs_foreign_total\\{queue="${queue}"\\} (\\d+)$`, 'm').exec(text)?.[1] ?? 0,
      );
    };

    it('refuses the second installation its claim on the prefix, naming both', async () => {
      await open();
      await owner.ctx.claimQueues();
      const error = await other.ctx.claimQueues().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(QueuePrefixTakenError);
      const message = (error as Error).message;
      expect(message).toContain(owner.ctx.config.queuePrefix);
      expect(message).toContain(await owner.ctx.installationId());
      expect(message).toContain(await other.ctx.installationId());
      expect(message).toMatch(/QUEUE_PREFIX=/);
      // The owner's claim stands, and claiming again changes nothing.
      await owner.ctx.claimQueues();
    });

    it("fails the other installation's forward instead of completing it as withdrawn, and says so", async () => {
      await open();
      const draft = await createDraft(owner);
      await call(owner, owner.sender, 'POST', `/api/v1/referrals/${draft.id}/submit`, {});
      const [row] = await owner.ctx.db
        .selectFrom('referrals')
        .select(['version', 'ehr_state'])
        .where('id', '=', draft.id)
        .execute();
      expect(row?.ehr_state).toBe('queued');
      // The owner's relay would add this job; the other installation's worker takes it.
      await owner.ctx.queues.enqueueForward({
        referralId: draft.id,
        version: row!.version,
        requestId: 'r',
        institution: 'hci:S1234A',
      });
      const jobId = forwardJobId(draft.id, row!.version);
      other.startBackground();

      const queue = owner.ctx.queues.queues['ehr-forward'];
      await eventually('the job to fail', async () =>
        (await queue.getJobState(jobId)) === 'failed' ? true : undefined,
      );
      expect((await queue.getJob(jobId))?.failedReason).toBe('unknown_referral');
      expect(await foreignCount('ehr-forward')).toBe(1);
      const warnings = other.logs
        .map((line) => JSON.parse(line) as { level: number; msg: string; queue?: string; jobId?: string })
        .filter((line) => line.level === 40 && line.msg.includes('does not have'));
      expect(warnings).toEqual([
        expect.objectContaining({
          queue: 'ehr-forward',
          jobId,
          msg: expect.stringMatching(/QUEUE_PREFIX/) as unknown,
        }),
      ]);
      for (const marker of CANARY_MARKERS) expect(other.logs.join('\n')).not.toContain(marker);
      // Nothing reached the EHR, and the owner's referral is still queued for its own workers.
      expect(await ehr.deliveries({ referralId: draft.id })).toEqual([]);
      const [after] = await owner.ctx.db
        .selectFrom('referrals')
        .select('ehr_state')
        .where('id', '=', draft.id)
        .execute();
      expect(after?.ehr_state).toBe('queued');
    });

    it("leaves the other installation's reminder schedule alone", async () => {
      await open();
      const draft = await createDraft(owner);
      await call(owner, owner.sender, 'POST', `/api/v1/referrals/${draft.id}/submit`, {});
      const schedule = await owner.ctx.reminders.scheduleFor(draft.id);
      expect(schedule).not.toBeNull();
      await owner.ctx.queues.scheduleReminders(draft.id, { ...schedule!, startAt: new Date() });
      other.startBackground();

      await eventually('a firing to reach the other installation', async () =>
        (await foreignCount('reminders')) > 0 ? true : undefined,
      );
      const scheduler = await owner.ctx.queues.queues.reminders.getJobScheduler(
        reminderSchedulerId(draft.id),
      );
      expect(scheduler).toBeDefined();
      expect(other.logs.join('\n')).toMatch(/"queue":"reminders"/);
    });
  },
);
