// The triage-overdue sweep end to end: the reconciler schedules it on the queue backend, its worker
// runs it, and a referral waiting for acceptance past its due time gets `referral.triage-overdue` once
// for that due time, on its timeline and in the event feed (and so to webhooks); one accepted in time,
// or not yet due, gets nothing; a new submission gives a new due time, which may pass again.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { EVENT_TYPES } from '../../src/domain/events.ts';
import { TRIAGE_OVERDUE_QUEUE, TRIAGE_OVERDUE_SCHEDULER } from '../../src/queue/triage-overdue.queue.ts';
import { createBridgeApp, eventually, startEhr, type BridgeApp } from '../support/bridge.ts';
import type { Engine } from '../../src/db/database.ts';
import { readFeedToEnd } from '../support/event-feed.ts';
import type { SandboxEhrProcess } from '../support/sandbox-ehr-process.ts';
import { call, referralIn } from '../support/scenarios.ts';

const OVERDUE = 'referral.triage-overdue';
// Tue 1 Dec 2026, 09:00 in Singapore; a two-week-wait referral to cgh-gastro is due a working day later.
const START = new Date('2026-12-01T01:00:00Z');
const DUE = '2026-12-02T16:00:00.000Z';
const SENTENCE =
  'Triage is overdue: Central General Hospital was to accept or decline the referral by Thu 3 Dec 2026, 00:00 SGT.';

const BEDS: readonly { engine: Engine; queues: 'redis' | 'postgres' }[] = [
  { engine: 'pglite', queues: 'redis' },
  { engine: 'postgres', queues: 'redis' },
  { engine: 'postgres', queues: 'postgres' },
];

describe.each(BEDS)('triage overdue on $engine, queues in $queues', ({ engine, queues }) => {
  let ehr: SandboxEhrProcess;
  let t: BridgeApp | undefined;
  let now = START;

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

  const timelineOf = async (app: BridgeApp, id: string) =>
    (
      (await call(
        app,
        app.sender,
        'GET',
        `/api/v1/referrals/${id}?requesterIdentifier=dr.lim@example.org&institutionIdType=hci&institutionId=S1234A`,
      )) as { timelineEvents: { type: string; system: string; description: string }[] }
    ).timelineEvents.filter((e) => e.type === OVERDUE);

  it('says once, from the scheduled sweep, that a referral waits past its due time', async () => {
    now = START;
    const app = await createBridgeApp(engine, ehr, {
      clock: { now: () => now },
      env: { TRIAGE_OVERDUE_SWEEP_SECONDS: '1', QUEUE_BACKEND: queues },
    });
    t = app;
    const late = await referralIn(app, 'pending-acceptance', { priority: 'two-week-wait' });
    const inTime = await referralIn(app, 'pending-acceptance', { priority: 'two-week-wait' });
    const notDue = await referralIn(app, 'pending-acceptance', { priority: 'routine' });
    await call(app, app.provider, 'POST', `/api/v1/referrals/${inTime.id}/accept`, {});
    now = new Date(DUE);
    app.startBackground();

    const said = await eventually('the overdue step on the timeline', async () => {
      const events = await timelineOf(app, late.id);
      return events.length > 0 ? events : undefined;
    });
    expect(said).toEqual([
      expect.objectContaining({ type: OVERDUE, system: 'refhub', description: SENTENCE, producedAt: DUE }),
    ]);
    expect(
      await app.ctx.queues.queues[TRIAGE_OVERDUE_QUEUE].getJobScheduler(TRIAGE_OVERDUE_SCHEDULER),
    ).toMatchObject({
      every: 1000,
    });
    // Another sweep, here or scheduled, says nothing more, and nothing of the others.
    expect(await app.ctx.triageOverdue.sweep('test')).toEqual({ marked: 0 });
    expect(await timelineOf(app, late.id)).toHaveLength(1);
    expect(await timelineOf(app, inTime.id)).toEqual([]);
    expect(await timelineOf(app, notDue.id)).toEqual([]);

    for (const party of [app.sender, app.provider]) {
      const { events } = await readFeedToEnd(app, party);
      const overdue = events.filter((e) => e.type === OVERDUE);
      expect(overdue.map((e) => [e.referralId, e.description, e.occurredAt])).toEqual([
        [late.id, SENTENCE, DUE],
      ]);
    }
    // A subscription may ask for it.
    expect(EVENT_TYPES).toContain(OVERDUE);

    // The sender takes it back and submits again: a new due time, which passes again.
    await call(app, app.sender, 'POST', `/api/v1/referrals/${late.id}/back-to-draft`, {});
    await call(app, app.sender, 'POST', `/api/v1/referrals/${late.id}/submit`, {});
    expect(await app.ctx.triageOverdue.sweep('test')).toEqual({ marked: 0 });
    // Submitted at the start of Thursday 3 Dec: due at the end of Friday.
    now = new Date('2026-12-04T16:00:00.000Z');
    const again = await eventually('the second overdue step', async () => {
      const events = await timelineOf(app, late.id);
      return events.length === 2 ? events : undefined;
    });
    expect(again[1]?.description).toBe(
      'Triage is overdue: Central General Hospital was to accept or decline the referral by Sat 5 Dec 2026, 00:00 SGT.',
    );
  });
});
