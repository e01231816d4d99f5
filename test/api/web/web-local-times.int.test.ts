// Every time a person reads (the form, the result page, the view and print pages, the provider's
// request, the outcome, timeline sentences and the EHR form) is in DISPLAY_TIME_ZONE and names its
// zone, while the API keeps ISO 8601 UTC. The clock is fixed at 09:30 in Singapore on 1 December
// 2026, so each time can be written out.
import * as cheerio from 'cheerio';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { APP_ENGINES } from '../../support/engines.ts';
import { PATIENT } from '../../support/fixtures/patients.ts';
import { call } from '../../support/scenarios.ts';
import { createTestApp, type TestApp } from '../../support/test-app.ts';
import {
  WEB_REQUESTER,
  acknowledgeOutcome,
  getPage,
  linksOf,
  newFormSession,
  outcomeCardOf,
  postForm,
  redeem,
} from '../../support/web.ts';

const NOW = new Date('2026-12-01T01:30:00.000Z');
const APPOINTMENT = '2026-12-03T02:00:00.000Z';

interface Zone {
  readonly env: Record<string, string>;
  /** What a reader sees for NOW, for the session's end (NOW + 2 h), and for APPOINTMENT. */
  readonly now: string;
  readonly sessionEnds: string;
  readonly appointment: string;
}

const ZONES: readonly (readonly [string, Zone])[] = [
  [
    'the default zone, Asia/Singapore',
    {
      env: {},
      now: 'Tue 1 Dec 2026, 09:30 SGT',
      sessionEnds: '11:30 SGT',
      appointment: 'Thu 3 Dec 2026, 10:00 SGT',
    },
  ],
  [
    'DISPLAY_TIME_ZONE=Europe/London',
    {
      env: { DISPLAY_TIME_ZONE: 'Europe/London' },
      now: 'Tue 1 Dec 2026, 01:30 GMT',
      sessionEnds: '03:30 GMT',
      appointment: 'Thu 3 Dec 2026, 02:00 GMT',
    },
  ],
];

const textOf = (body: string) => cheerio.load(body)('body').text().replace(/\s+/g, ' ');

describe.each(APP_ENGINES)('times people read, on %s', (engine) => {
  describe.each(ZONES)('in %s', (_label, zone) => {
    let t: TestApp;
    beforeAll(async () => {
      t = await createTestApp(engine, { env: zone.env, clock: { now: () => NOW } });
    });
    afterAll(async () => {
      await t.close();
    });

    it('shows the form, the result page and the view page in the zone, and the API in UTC', async () => {
      const session = await newFormSession(t, { offeringId: 'cgh-gastro', ...PATIENT });
      const form = textOf((await getPage(t, session)).body);
      expect(form).toContain(`Last saved ${zone.now}`);
      expect(form).toContain(`This page is open to you until ${zone.sessionEnds}.`);
      expect(form).not.toContain('UTC');

      expect((await postForm(t, session, 'submit')).statusCode).toBe(303);
      const result = cheerio.load((await getPage(t, session, `/form/${session.referralId}/submitted`)).body);
      const summary = Object.fromEntries(
        result('.summary dt')
          .toArray()
          .map((dt) => [result(dt).text().trim(), result(dt).next('dd').text().trim()]),
      );
      expect(summary.Submitted).toBe(zone.now);
      expect(result('footer').text()).toContain(`until ${zone.sessionEnds}.`);
      expect(textOf(result.html())).not.toContain('UTC');

      const id = session.referralId;
      await call(t, t.provider, 'POST', `/api/v1/referrals/${id}/accept`, {});
      const scheduled = await call(t, t.provider, 'PUT', `/api/v1/referrals/${id}/appointments/appt-1`, {
        status: 'scheduled',
        startAt: APPOINTMENT,
        location: 'Clinic 2C',
      });
      // The API speaks UTC; the sentence people read does not.
      expect(scheduled).toMatchObject({ submittedAt: NOW.toISOString() });
      expect((scheduled.appointments as { startAt: string }[])[0]!.startAt).toBe(APPOINTMENT);
      expect((scheduled.timelineEvents as { description: string }[]).at(-1)!.description).toBe(
        `Central General Hospital scheduled an appointment for ${zone.appointment} at Clinic 2C.`,
      );

      const query = new URLSearchParams({
        ...t.sender.institution,
        requesterIdentifier: WEB_REQUESTER,
        additionalField: 'ehrForm',
      });
      const api = await t.request(t.sender, {
        method: 'GET',
        url: `/api/v1/referrals/${id}?${query.toString()}`,
      });
      const ehr = cheerio.load(api.json<{ ehrForm: string }>().ehrForm);
      expect(ehr('[data-field="appointment.startAt"]').text()).toBe(zone.appointment);
      expect(ehr('[data-field="submittedAt"]').text()).toBe(zone.now);
      expect(ehr('main').text()).not.toContain('UTC');

      const view = cheerio.load((await getPage(t, await redeem(t, (await linksOf(t, id)).view!))).body);
      expect(view('footer').text()).toContain(`This page is open to you until ${zone.sessionEnds}.`);
      expect(view('[data-field="appointment.startAt"]').text()).toBe(zone.appointment);
      expect(textOf(view.html())).not.toContain('UTC');
    });

    it('shows when the provider asked the sender to act', async () => {
      const session = await newFormSession(t, { offeringId: 'cgh-gastro', ...PATIENT });
      const id = session.referralId;
      await call(t, t.sender, 'POST', `/api/v1/referrals/${id}/submit`, {});
      await call(t, t.provider, 'POST', `/api/v1/referrals/${id}/request-action`, {
        reason: 'Please attach the latest ECG.',
      });
      const page = cheerio.load((await getPage(t, await redeem(t, (await linksOf(t, id)).respond!))).body);
      expect(page('.request').text()).toContain(zone.now);
      expect(textOf(page.html())).not.toContain('UTC');
    });

    it('shows when the provider reported the outcome and when the sender acknowledged it', async () => {
      const session = await newFormSession(t, { offeringId: 'cgh-gastro', ...PATIENT });
      const id = session.referralId;
      await call(t, t.sender, 'POST', `/api/v1/referrals/${id}/submit`, {});
      await call(t, t.provider, 'POST', `/api/v1/referrals/${id}/accept`, {});
      const completed = await call(t, t.provider, 'POST', `/api/v1/referrals/${id}/complete`, {
        outcomeCode: 'seen-discharged',
        summary: 'No follow-up needed.',
      });
      expect((completed.outcome as { completedAt: string }).completedAt).toBe(NOW.toISOString());
      const view = await redeem(t, (await linksOf(t, id)).view!);
      expect(outcomeCardOf((await getPage(t, view)).body)!.rows.Completed).toBe(zone.now);

      expect((await acknowledgeOutcome(t, view)).statusCode).toBe(303);
      const page = (await getPage(t, view)).body;
      expect(outcomeCardOf(page)!.rows).toMatchObject({ Completed: zone.now, Acknowledged: zone.now });
      expect(textOf(page)).not.toContain('UTC');
    });
  });
});
