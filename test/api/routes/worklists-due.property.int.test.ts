// Property: a referral submitted at any moment, with any priority, is due when the offering's service
// level for that priority says, counted in working days in the clinic's zone past weekends and the
// catalog's public holidays, as the worklist shows it. The expected due time is counted here day by
// day, from the catalog file the test loads, never from refhub's own calendar code.
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { APP_ENGINES } from '../../support/engines.ts';
import { REQUESTER } from '../../support/referral-routes.ts';
import { call, createDraft } from '../../support/scenarios.ts';
import { createTestApp, type TestApp } from '../../support/test-app.ts';

const DAY = 86_400_000;
const SGT = 8 * 3_600_000; // Singapore, the demo's display zone, has no daylight saving.
// cgh-gastro's levels in the demo catalog.
const LEVELS = { routine: 10, urgent: 2, 'two-week-wait': 1 } as const;
type Priority = keyof typeof LEVELS;
const RUNS = 20;

/** Holidays spread over the dates the runs submit on, loaded over the demo's. */
const HOLIDAYS = Array.from({ length: 40 }, (_, i) =>
  new Date(Date.parse('2027-01-04T00:00:00Z') + i * 9 * DAY).toISOString().slice(0, 10),
);

/** The end of the `days`-th working day after the day of `at` in Singapore, counted a day at a time. */
function expectedDue(at: Date, days: number, holidays: ReadonlySet<string>): string {
  let day = Math.floor((at.getTime() + SGT) / DAY) * DAY; // the local day's midnight, as if UTC
  let left = days;
  while (left > 0) {
    day += DAY;
    const date = new Date(day);
    const weekend = date.getUTCDay() === 0 || date.getUTCDay() === 6;
    if (!weekend && !holidays.has(date.toISOString().slice(0, 10))) left -= 1;
  }
  return new Date(day + DAY - SGT).toISOString();
}

describe.each(APP_ENGINES)('triage due times on %s', (engine) => {
  let t: TestApp;
  let now = new Date('2027-01-01T00:00:00Z');
  let holidays: Set<string>;

  beforeAll(async () => {
    t = await createTestApp(engine, { clock: { now: () => now } });
    await t.ctx.catalog.load({
      systems: [],
      institutions: [],
      offerings: [],
      holidays: HOLIDAYS.map((date) => ({ date, name: 'A public holiday' })),
    });
    holidays = new Set((await t.ctx.catalog.listHolidays()).filter((h) => h.active).map((h) => h.date));
  });
  afterAll(async () => {
    await t.close();
  });

  async function dueOf(id: string): Promise<string | undefined> {
    const res = await t.request(t.provider, {
      method: 'GET',
      url: `/api/v1/institutions/hci/${t.provider.institution.institutionId}/worklists/to-triage`,
      query: { requesterIdentifier: REQUESTER, pageSize: '1000' },
    });
    expect(res.statusCode, res.body).toBe(200);
    return res.json<{ data: { id: string; dueAt?: string }[] }>().data.find((i) => i.id === id)?.dueAt;
  }

  it('follows the service level across weekends and holidays, whenever it is submitted', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.date({
          min: new Date('2027-01-01T00:00:00Z'),
          max: new Date('2027-12-31T00:00:00Z'),
          noInvalidDate: true,
        }),
        fc.constantFrom(...(Object.keys(LEVELS) as Priority[])),
        async (at, priority) => {
          now = at;
          const draft = await createDraft(t, { priority });
          await call(t, t.sender, 'POST', `/api/v1/referrals/${draft.id}/submit`, {});
          expect(await dueOf(draft.id)).toBe(expectedDue(at, LEVELS[priority], holidays));
        },
      ),
      { numRuns: RUNS },
    );
  });
});
