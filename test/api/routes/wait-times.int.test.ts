// GET /offerings/{offeringId}/wait-times on both engines: before the first computation it says so;
// after it, the figures with their counts, the window and when they were computed, and no figure below
// the threshold. The caller names its institution as on every read: without one, or with another
// institution's, or naming an offering the catalog does not have, it is refused with problem+json.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { windowEndingAt } from '../../../src/domain/wait-times.ts';
import { errorPaths, expectProblem } from '../../support/api-assertions.ts';
import { APP_ENGINES } from '../../support/engines.ts';
import { createTestApp, type TestApp, type TestParty } from '../../support/test-app.ts';
import {
  days,
  expectedFigures,
  percentile,
  plannedReferrals,
  seedReferrals,
  setClock,
  type PlannedReferral,
} from '../../support/wait-times.ts';

const NOW = new Date('2031-03-01T02:00:00.000Z');

describe.each(APP_ENGINES)('GET /offerings/{offeringId}/wait-times on %s', (engine) => {
  let t: TestApp;
  const clock = setClock(NOW);
  let plans: PlannedReferral[];

  beforeAll(async () => {
    t = await createTestApp(engine, { clock, env: { WAIT_TIMES_MIN_REFERRALS: '6' } });
    plans = plannedReferrals('cgh-gastro', NOW, 12, 3);
    await seedReferrals(t, clock, plans);
    clock.set(NOW);
  }, 120_000);
  afterAll(async () => {
    await t.close();
  });

  const read = (
    who: TestParty | null,
    offeringId: string,
    query: Record<string, string> = who?.institution ?? {},
  ) => t.request(who, { method: 'GET', url: `/api/v1/offerings/${offeringId}/wait-times`, query });

  it('says the figures have not been computed yet, before the first run', async () => {
    const res = await read(t.sender, 'cgh-gastro');
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toEqual({
      offeringId: 'cgh-gastro',
      computed: false,
      detail: expect.stringContaining('not been computed yet') as unknown,
    });
  });

  it('answers the figures, their counts, the window and when they were computed', async () => {
    await t.ctx.waitTimes.recompute();
    const window = windowEndingAt(NOW, 180);
    const expected = expectedFigures(plans, 'cgh-gastro', window);
    expect(expected.acceptedSeconds.length).toBeGreaterThanOrEqual(6);
    expect(expected.appointmentSeconds.length).toBeLessThan(6);

    // Senders and providers alike read them.
    for (const who of [t.sender, t.provider]) {
      const res = await read(who, 'cgh-gastro');
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json()).toEqual({
        offeringId: 'cgh-gastro',
        computed: true,
        computedAt: NOW.toISOString(),
        window: { days: 180, from: window.start.toISOString(), to: NOW.toISOString() },
        minReferrals: 6,
        accepted: {
          referrals: expected.acceptedSeconds.length,
          enoughData: true,
          p50Days: days(percentile(expected.acceptedSeconds, 0.5)),
          p90Days: days(percentile(expected.acceptedSeconds, 0.9)),
        },
        // Fewer than six booked: the count alone.
        firstAppointment: { referrals: expected.appointmentSeconds.length, enoughData: false },
        declined: {
          referrals: expected.decided,
          enoughData: true,
          share: Math.round((expected.declined / expected.decided) * 100) / 100,
        },
      });
    }
  });

  it('answers an offering the catalog does not have with 404 problem+json', async () => {
    const problem = expectProblem(await read(t.sender, 'no-such-offering'), 404, 'not_found');
    expect(problem.detail).toBe('The catalog has no offering no-such-offering.');
  });

  it('refuses a request that names no institution, or a malformed offering, with 400 naming the field', async () => {
    expect(
      errorPaths(expectProblem(await read(t.sender, 'cgh-gastro', {}), 400, 'validation_failed')),
    ).toEqual(expect.arrayContaining([expect.stringMatching(/institutionIdType|institutionId/)]));
    expect(
      errorPaths(
        expectProblem(await read(t.sender, 'bad%20offering', t.sender.institution), 400, 'validation_failed'),
      ),
    ).toEqual(['path.offeringId']);
    expectProblem(
      await read(t.sender, 'cgh-gastro', { ...t.sender.institution, patientUin: 'S1234567D' }),
      400,
      'validation_failed',
    );
  });

  it('refuses a key that does not act for the institution it names, and audits the refusal', async () => {
    expectProblem(
      await read(t.sender, 'cgh-gastro', t.otherSender.institution),
      403,
      'institution_not_permitted',
    );
    const row = await t.ctx.db
      .selectFrom('audit_events')
      .select(['action', 'outcome'])
      .where('action', '=', 'wait-times.read')
      .executeTakeFirst();
    expect(row).toEqual({ action: 'wait-times.read', outcome: 'denied' });
    expectProblem(await read(null, 'cgh-gastro'), 401, 'unauthorized');
  });
});
