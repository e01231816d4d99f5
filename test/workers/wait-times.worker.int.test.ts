// The wait-times job through the real queue, as `refhub worker` and `refhub all` run it: starting the
// background sets the nightly scheduler (WAIT_TIMES_AT in DISPLAY_TIME_ZONE) and adds one run at once,
// the wait-times worker takes it and the figures are in the table, the same as computed here. On each
// queue backend: BullMQ's PostgreSQL backend in PostgreSQL and in PGlite (the embedded default), and
// Redis. A start that sets the scheduler again leaves one; a scheduler the queues lost is set again.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Engine } from '../../src/db/database.ts';
import { windowEndingAt } from '../../src/domain/wait-times.ts';
import type { QueueBackendName } from '../../src/queue/backend.ts';
import { WAIT_TIMES_QUEUE, WAIT_TIMES_SCHEDULER_ID } from '../../src/queue/registry.ts';
import { createBridgeApp, eventually, startEhr, type BridgeApp } from '../support/bridge.ts';
import type { SandboxEhrProcess } from '../support/sandbox-ehr-process.ts';
import {
  days,
  expectedFigures,
  percentile,
  plannedReferrals,
  seedReferrals,
  setClock,
} from '../support/wait-times.ts';

const SETUPS: readonly (readonly [QueueBackendName, Engine])[] = [
  ['postgres', 'postgres'],
  ['postgres', 'pglite'],
  ['redis', 'pglite'],
];

describe.each(SETUPS)('the wait-times job on the %s queue backend (database on %s)', (backend, engine) => {
  let ehr: SandboxEhrProcess;
  let t: BridgeApp;
  const now = new Date(Math.floor(Date.now() / 1000) * 1000);
  const clock = setClock(now);
  const plans = plannedReferrals('cgh-gastro', now, 12, 5);

  beforeAll(async () => {
    ehr = await startEhr();
    t = await createBridgeApp(engine, ehr, {
      clock,
      env: {
        QUEUE_BACKEND: backend,
        WAIT_TIMES_MIN_REFERRALS: '6',
        WAIT_TIMES_AT: '03:15',
        DISPLAY_TIME_ZONE: 'Asia/Singapore',
      },
    });
    await seedReferrals(t, clock, plans);
    clock.set(now);
  }, 120_000);
  afterAll(async () => {
    await t.close();
    await ehr.stop();
  });

  it('computes the figures soon after the background starts, and schedules them nightly', async () => {
    t.startBackground();
    const stored = await eventually(
      'the wait times computed',
      () => t.ctx.stores.waitTimes.find('cgh-gastro'),
      30_000,
    );
    const window = windowEndingAt(now, 180);
    const expected = expectedFigures(plans, 'cgh-gastro', window);
    expect(stored.computedAt).toEqual(now);
    expect(stored.accepted.referrals).toBe(expected.acceptedSeconds.length);
    expect(await t.ctx.waitTimes.forOffering('cgh-gastro')).toMatchObject({
      computed: true,
      accepted: {
        referrals: expected.acceptedSeconds.length,
        enoughData: true,
        p50Days: days(percentile(expected.acceptedSeconds, 0.5)),
        p90Days: days(percentile(expected.acceptedSeconds, 0.9)),
      },
    });
    // Every offering of the catalog has its row.
    const rows = await t.ctx.db.selectFrom('wait_times').select('offering_id').execute();
    expect(rows).toHaveLength((await t.ctx.catalog.listOfferings()).length);

    const queue = t.ctx.queues.queues[WAIT_TIMES_QUEUE];
    expect(await queue.getJobScheduler(WAIT_TIMES_SCHEDULER_ID)).toMatchObject({
      key: WAIT_TIMES_SCHEDULER_ID,
      pattern: '15 3 * * *',
      tz: 'Asia/Singapore',
    });
  });

  it('keeps one scheduler when it is set again (another worker starting)', async () => {
    await t.ctx.queues.scheduleWaitTimes({ at: '03:15', timeZone: 'Asia/Singapore' });
    const queue = t.ctx.queues.queues[WAIT_TIMES_QUEUE];
    expect(await queue.getJobSchedulersCount()).toBe(1);
  });

  it('sets the scheduler again when the queues lost it, and leaves one that is there', async () => {
    const schedule = { at: '03:15', timeZone: 'Asia/Singapore' };
    const queue = t.ctx.queues.queues[WAIT_TIMES_QUEUE];
    expect(await t.ctx.queues.ensureWaitTimesSchedule(schedule)).toBe(false);
    await queue.removeJobScheduler(WAIT_TIMES_SCHEDULER_ID);
    expect(await queue.getJobScheduler(WAIT_TIMES_SCHEDULER_ID)).toBeUndefined();
    expect(await t.ctx.queues.ensureWaitTimesSchedule(schedule)).toBe(true);
    expect(await queue.getJobScheduler(WAIT_TIMES_SCHEDULER_ID)).toMatchObject({ pattern: '15 3 * * *' });
  });
});
