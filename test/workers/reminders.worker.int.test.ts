// Provider reminders end to end, on second-scale settings: real Redis job schedulers, the reminder
// worker and the store on both engines. A pending referral is reminded REMINDER_MAX times and then
// no more; one that leaves pending-acceptance first is not reminded at all; a resubmit starts over.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { fireReminder } from '../../src/workers/reminders.worker.ts';
import { createBridgeApp, eventually, startEhr, type BridgeApp } from '../support/bridge.ts';
import { APP_ENGINES } from '../support/engines.ts';
import type { SandboxEhrProcess } from '../support/sandbox-ehr-process.ts';
import { call, createDraft } from '../support/scenarios.ts';

const REMINDER = 'referral.provider-patient-create-reminder-sent';
const SENTENCE = 'Reminder sent to Central General Hospital to create the patient record.';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe.each(APP_ENGINES)('provider reminders on %s', (engine) => {
  let ehr: SandboxEhrProcess;
  let t: BridgeApp | undefined;

  beforeAll(async () => {
    ehr = await startEhr();
  });
  afterEach(async () => {
    await t?.close();
    t = undefined;
    await ehr.reset();
  });
  afterAll(async () => {
    await ehr.stop();
  });

  const open = async (afterSeconds: number) => {
    t = await createBridgeApp(engine, ehr, {
      env: {
        REMINDER_AFTER_SECONDS: String(afterSeconds),
        REMINDER_INTERVAL_SECONDS: '1',
        REMINDER_MAX: '2',
      },
    });
    return t;
  };
  const op = (app: BridgeApp, id: string, name: string, who = app.sender, body = {}) =>
    call(app, who, 'POST', `/api/v1/referrals/${id}/${name}`, body);
  const timelineOf = async (app: BridgeApp, id: string) =>
    (
      (await call(
        app,
        app.sender,
        'GET',
        `/api/v1/referrals/${id}?requesterIdentifier=dr.lim@example.org&institutionIdType=hci&institutionId=S1234A`,
      )) as { timelineEvents: { type: string; system: string; description: string; producedAt: string }[] }
    ).timelineEvents;
  const remindersOf = async (app: BridgeApp, id: string) =>
    (await timelineOf(app, id)).filter((e) => e.type === REMINDER);
  const notificationsOf = (app: BridgeApp, id: string) =>
    app.ctx.db
      .selectFrom('reminder_notifications')
      .select(['sequence', 'pending_since', 'recipient_id', 'firing_key'])
      .where('referral_id', '=', id)
      .orderBy('sent_at')
      .execute();
  const remindedTimes = (app: BridgeApp, id: string, n: number) =>
    eventually(`${n} reminders`, async () => {
      const events = await remindersOf(app, id);
      return events.length >= n ? events : undefined;
    });

  it('reminds the provider of a pending referral REMINDER_MAX times, then stops', async () => {
    const app = await open(1);
    const draft = await createDraft(app);
    await op(app, draft.id, 'submit');
    app.startBackground();

    const events = await remindedTimes(app, draft.id, 2);
    expect(events).toEqual([
      // refhub sends the reminder, not the provider's system (Epic).
      expect.objectContaining({ type: REMINDER, system: 'refhub', description: SENTENCE }),
      expect.objectContaining({ type: REMINDER, system: 'refhub', description: SENTENCE }),
    ]);
    // REMINDER_AFTER_SECONDS after the referral entered pending-acceptance, then every interval.
    const since = Date.parse(
      (await timelineOf(app, draft.id)).find((e) => e.type === 'referral.pending-acceptance')?.producedAt ??
        '',
    );
    const [first, second] = events.map((e) => Date.parse(e.producedAt) - since);
    expect(first).toBeGreaterThanOrEqual(1_000);
    expect(second).toBeGreaterThanOrEqual(2_000);
    const rows = await notificationsOf(app, draft.id);
    expect(rows.map((r) => [r.sequence, r.recipient_id])).toEqual([
      [1, 'S9001Z'],
      [2, 'S9001Z'],
    ]);
    // A further interval and more pass without another reminder, and the schedule is gone.
    await sleep(2_000);
    expect(await remindersOf(app, draft.id)).toHaveLength(2);
    expect(await notificationsOf(app, draft.id)).toHaveLength(2);
    await eventually('the schedule to be removed', async () =>
      (await app.ctx.queues.hasReminderSchedule(draft.id)) ? undefined : true,
    );
  });

  // The first firing is 3 s after the submit here, so that the accept and the cancel surely land
  // before it, even on a slow machine.
  it('sends none to a referral accepted or cancelled before the first firing, and removes its schedule', async () => {
    const app = await open(3);
    app.startBackground();
    const accepted = await createDraft(app);
    const cancelled = await createDraft(app);
    const submittedAt = Date.now();
    await op(app, accepted.id, 'submit');
    await op(app, cancelled.id, 'submit');
    await eventually('both schedules', async () =>
      (await app.ctx.queues.hasReminderSchedule(accepted.id)) &&
      (await app.ctx.queues.hasReminderSchedule(cancelled.id))
        ? true
        : undefined,
    );
    await op(app, accepted.id, 'accept', app.provider);
    await op(app, cancelled.id, 'cancel', app.sender, { cancelNote: 'Patient recovered' });
    expect(Date.now() - submittedAt, 'the accept and the cancel came before the first firing').toBeLessThan(
      3_000,
    );
    await eventually('both schedules removed', async () =>
      !(await app.ctx.queues.hasReminderSchedule(accepted.id)) &&
      !(await app.ctx.queues.hasReminderSchedule(cancelled.id))
        ? true
        : undefined,
    );
    // Past the first firing and one more interval: nothing was sent, and nothing is waiting to fire.
    await sleep(Math.max(0, submittedAt + 5_000 - Date.now()));
    for (const id of [accepted.id, cancelled.id]) {
      expect(await remindersOf(app, id)).toEqual([]);
      expect(await notificationsOf(app, id)).toEqual([]);
    }
    expect(await app.ctx.queues.queues.reminders.getJobCounts('delayed', 'wait', 'active')).toEqual({
      delayed: 0,
      wait: 0,
      active: 0,
    });
  });

  it('starts a fresh count when the referral is sent back to draft and submitted again', async () => {
    const app = await open(1);
    const draft = await createDraft(app);
    await op(app, draft.id, 'submit');
    app.startBackground();
    await remindedTimes(app, draft.id, 1);
    await op(app, draft.id, 'back-to-draft');
    // Outside pending-acceptance no reminder fires, so this count is final for the first wait.
    const first = (await remindersOf(app, draft.id)).length;
    expect(first).toBeGreaterThanOrEqual(1);
    await op(app, draft.id, 'submit');

    await remindedTimes(app, draft.id, first + 2);
    await sleep(2_000);
    expect(await remindersOf(app, draft.id)).toHaveLength(first + 2);
    const rows = await notificationsOf(app, draft.id);
    const waits = [...new Set(rows.map((r) => r.pending_since.toISOString()))];
    expect(waits).toHaveLength(2);
    const sequencesOf = (since: string | undefined) =>
      rows.filter((r) => r.pending_since.toISOString() === since).map((r) => r.sequence);
    expect(sequencesOf(waits[0])).toEqual(first === 1 ? [1] : [1, 2]);
    expect(sequencesOf(waits[1])).toEqual([1, 2]);
    await eventually('the schedule to be removed', async () =>
      (await app.ctx.queues.hasReminderSchedule(draft.id)) ? undefined : true,
    );
  });

  it('notifies once for a firing that runs twice, at the same time or one after the other', async () => {
    const app = await open(1);
    const draft = await createDraft(app);
    await op(app, draft.id, 'submit');
    const deps = {
      reminders: app.ctx.reminders,
      removeSchedule: (id: string) => app.ctx.queues.removeReminders(id),
      logger: app.ctx.logger,
      metrics: app.ctx.metrics,
    };
    const fire = (firingKey: string) => fireReminder(deps, { referralId: draft.id }, firingKey);

    const together = await Promise.all([fire('firing-1'), fire('firing-1')]);
    expect(together.map((r) => r.kind).sort()).toEqual(['already-sent', 'sent']);
    expect(await fire('firing-1')).toEqual({ kind: 'already-sent', remaining: 1 });
    expect(await fire('firing-2')).toEqual({ kind: 'sent', sequence: 2, remaining: 0 });
    // Every reminder has been sent: a repeat, or any later firing, sends nothing.
    expect(await fire('firing-2')).toEqual({ kind: 'done' });
    expect(await fire('firing-3')).toEqual({ kind: 'done' });

    expect(await remindersOf(app, draft.id)).toHaveLength(2);
    expect((await notificationsOf(app, draft.id)).map((r) => [r.sequence, r.firing_key])).toEqual([
      [1, 'firing-1'],
      [2, 'firing-2'],
    ]);
  });
});
