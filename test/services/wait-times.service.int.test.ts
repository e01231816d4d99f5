// Wait times per offering, computed from the timeline on both engines: a few dozen referrals made
// through the API at times the test's clock sets (sender waits, rejections, cancellations, referrals
// outside the window), and the figures refhub stores and answers match those worked out here in plain
// TypeScript from the same times. An offering with fewer referrals than the threshold gets no figure,
// in the answer or in the table.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { windowEndingAt } from '../../src/domain/wait-times.ts';
import { NOT_COMPUTED_DETAIL } from '../../src/services/wait-times.service.ts';
import { waitTimesRepository } from '../../src/db/wait-times.repository.ts';
import { PATIENT } from '../support/fixtures/patients.ts';
import { call } from '../support/scenarios.ts';
import { ENGINES } from '../support/engines.ts';
import { createTestApp, type TestApp } from '../support/test-app.ts';
import {
  days,
  expectedFigures,
  percentile,
  plannedReferrals,
  seedReferrals,
  setClock,
  type PlannedReferral,
} from '../support/wait-times.ts';

const NOW = new Date('2031-06-30T04:00:00.000Z');

describe.each(ENGINES)('wait times on %s', (engine) => {
  let t: TestApp;
  const clock = setClock(NOW);
  let plans: PlannedReferral[];

  beforeAll(async () => {
    t = await createTestApp(engine, { clock });
    // Enough referrals to cgh-gastro for every figure; four to cgh-ae, below the threshold of 10.
    plans = [
      ...plannedReferrals('cgh-gastro', NOW, 36),
      ...plannedReferrals('cgh-ae', NOW, 4, 11).slice(0, 4),
    ];
    await seedReferrals(t, clock, plans);
    clock.set(NOW);
  }, 120_000);
  afterAll(async () => {
    await t.close();
  });

  it('says an offering has not been computed before the first run', async () => {
    expect(await t.ctx.waitTimes.forOffering('cgh-gastro')).toEqual({
      offeringId: 'cgh-gastro',
      computed: false,
      detail: NOT_COMPUTED_DETAIL,
    });
  });

  it('computes the figures the timeline gives, without the time the sender had the referral', async () => {
    const run = await t.ctx.waitTimes.recompute();
    const offerings = await t.ctx.catalog.listOfferings();
    expect(run).toEqual({ offerings: offerings.length, withFigures: 1 });

    const window = windowEndingAt(NOW, 180);
    const expected = expectedFigures(plans, 'cgh-gastro', window);
    // The plan holds what the figures must tell apart.
    expect(expected.acceptedSeconds.length).toBeGreaterThanOrEqual(10);
    expect(expected.appointmentSeconds.length).toBeGreaterThanOrEqual(10);
    expect(expected.declined).toBeGreaterThan(0);

    expect(await t.ctx.waitTimes.forOffering('cgh-gastro')).toEqual({
      offeringId: 'cgh-gastro',
      computed: true,
      computedAt: NOW.toISOString(),
      window: { days: 180, from: window.start.toISOString(), to: NOW.toISOString() },
      minReferrals: 10,
      accepted: {
        referrals: expected.acceptedSeconds.length,
        enoughData: true,
        p50Days: days(percentile(expected.acceptedSeconds, 0.5)),
        p90Days: days(percentile(expected.acceptedSeconds, 0.9)),
      },
      firstAppointment: {
        referrals: expected.appointmentSeconds.length,
        enoughData: true,
        p50Days: days(percentile(expected.appointmentSeconds, 0.5)),
        p90Days: days(percentile(expected.appointmentSeconds, 0.9)),
      },
      declined: {
        referrals: expected.decided,
        enoughData: true,
        share: Math.round((expected.declined / expected.decided) * 100) / 100,
      },
    });

    // The stored seconds, before rounding, match to the millisecond.
    const stored = await t.ctx.stores.waitTimes.find('cgh-gastro');
    expect(stored?.accepted.p50Seconds).toBeCloseTo(percentile(expected.acceptedSeconds, 0.5), 3);
    expect(stored?.accepted.p90Seconds).toBeCloseTo(percentile(expected.acceptedSeconds, 0.9), 3);
    expect(stored?.firstAppointment.p50Seconds).toBeCloseTo(percentile(expected.appointmentSeconds, 0.5), 3);
    expect(stored?.firstAppointment.p90Seconds).toBeCloseTo(percentile(expected.appointmentSeconds, 0.9), 3);
    expect(stored?.declinedShare).toBeCloseTo(expected.declined / expected.decided, 9);
  });

  it('gives no figure from fewer referrals than the threshold, answered or stored', async () => {
    const expected = expectedFigures(plans, 'cgh-ae', windowEndingAt(NOW, 180));
    expect(expected.acceptedSeconds.length).toBeGreaterThan(0);
    expect(await t.ctx.waitTimes.forOffering('cgh-ae')).toMatchObject({
      computed: true,
      accepted: { referrals: expected.acceptedSeconds.length, enoughData: false },
      firstAppointment: { referrals: expected.appointmentSeconds.length, enoughData: false },
      declined: { referrals: expected.decided, enoughData: false },
    });
    const view = await t.ctx.waitTimes.forOffering('cgh-ae');
    expect(JSON.stringify(view)).not.toMatch(/p50Days|p90Days|share/);
    const row = await t.ctx.db
      .selectFrom('wait_times')
      .selectAll()
      .where('offering_id', '=', 'cgh-ae')
      .executeTakeFirstOrThrow();
    expect(row).toMatchObject({
      accepted_p50_seconds: null,
      accepted_p90_seconds: null,
      appointment_p50_seconds: null,
      appointment_p90_seconds: null,
      declined_share: null,
    });
    // An offering no referral went to: counted, with nothing to show.
    expect(await t.ctx.waitTimes.forOffering('erh-ortho')).toMatchObject({
      computed: true,
      accepted: { referrals: 0, enoughData: false },
      firstAppointment: { referrals: 0, enoughData: false },
      declined: { referrals: 0, enoughData: false },
    });
  });

  it('replaces the figures with each run: a later window leaves the early referrals out', async () => {
    const later = new Date(NOW.getTime() + 100 * 86_400_000);
    clock.set(later);
    try {
      await t.ctx.waitTimes.recompute();
    } finally {
      clock.set(NOW);
    }
    const window = windowEndingAt(later, 180);
    const expected = expectedFigures(plans, 'cgh-gastro', window);
    const view = await t.ctx.waitTimes.forOffering('cgh-gastro');
    expect(view).toMatchObject({
      computedAt: later.toISOString(),
      window: { from: window.start.toISOString(), to: later.toISOString() },
      accepted: { referrals: expected.acceptedSeconds.length },
    });
    const rows = await t.ctx.db.selectFrom('wait_times').select('offering_id').execute();
    expect(rows).toHaveLength((await t.ctx.catalog.listOfferings()).length);
  });

  it('answers an offering the catalog does not have with a not-found error', async () => {
    await expect(t.ctx.waitTimes.forOffering('no-such-offering')).rejects.toMatchObject({
      status: 404,
      code: 'not_found',
    });
  });

  it("counts a redirect's successor at its new service from the redirect, not from the first submit", async () => {
    // Five referrals accepted at cgh-gastro after a day, redirected to erh-cardio the next day, and
    // accepted there half a day later: erh-cardio's figure is half a day, whatever the successors
    // carry of their history, and cgh-gastro's own acceptances still count for it.
    const start = new Date(NOW.getTime() - 20 * 86_400_000);
    const successors: string[] = [];
    for (let i = 0; i < 5; i++) {
      clock.set(new Date(start.getTime() + i * 3_600_000));
      const draft = await call(
        t,
        t.sender,
        'POST',
        '/api/v1/referrals',
        { offeringId: 'cgh-gastro', ...PATIENT },
        201,
      );
      const id = String(draft.id);
      await call(t, t.sender, 'POST', `/api/v1/referrals/${id}/submit`, {});
      clock.set(new Date(clock.now().getTime() + 86_400_000));
      await call(t, t.provider, 'POST', `/api/v1/referrals/${id}/accept`, {});
      clock.set(new Date(clock.now().getTime() + 86_400_000));
      const redirected = await call(t, t.provider, 'POST', `/api/v1/referrals/${id}/redirect`, {
        offeringId: 'erh-cardio',
        reasonCode: 'wrong-service',
      });
      successors.push(String(redirected.redirectedTo));
      clock.set(new Date(clock.now().getTime() + 43_200_000));
      await call(
        t,
        t.otherProvider,
        'POST',
        `/api/v1/referrals/${String(redirected.redirectedTo)}/accept`,
        {},
      );
    }
    clock.set(NOW);
    // The figures before the threshold hides them (five are fewer than ten).
    const computed = await waitTimesRepository(t.ctx.db).compute(windowEndingAt(NOW, 180));
    const cardio = computed.find((c) => c.offeringId === 'erh-cardio');
    expect(cardio?.accepted).toEqual({ referrals: 5, p50Seconds: 43_200, p90Seconds: 43_200 });
    // The five redirected referrals were accepted at cgh-gastro a day after they were submitted there.
    const gastro = computed.find((c) => c.offeringId === 'cgh-gastro');
    expect(gastro?.accepted.referrals).toBe(
      expectedFigures(plans, 'cgh-gastro', windowEndingAt(NOW, 180)).acceptedSeconds.length + 5,
    );
    expect(successors).toHaveLength(5);
  });
});
