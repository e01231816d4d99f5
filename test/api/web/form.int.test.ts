// The form behind edit and respond links: it shows the prefilled referral, saves and submits through
// the same commands as the API (validation, lifecycle, timeline with system Manual naming the
// requester, audit with the minting key), refuses posts without the session's CSRF token or from
// another origin, keeps what the person typed on every error, and explains every refusal on a page.
import * as cheerio from 'cheerio';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { APP_ENGINES } from '../../support/engines.ts';
import { PATIENT } from '../../support/fixtures/patients.ts';
import { call, referralIn } from '../../support/scenarios.ts';
import { apiKeyIdOf, countRows, senderView } from '../../support/store-inspection.ts';
import { createTestApp, type TestApp } from '../../support/test-app.ts';
import {
  WEB_REQUESTER,
  errorSummaryOf,
  expectSecurityHeaders,
  formStateOf,
  getPage,
  linksOf,
  newFormSession,
  postForm,
  redeem,
  type WebSession,
} from '../../support/web.ts';

interface TimelineEvent {
  type: string;
  system: string;
  description: string;
}

async function versionOf(t: TestApp, id: string): Promise<number> {
  const row = await t.ctx.db
    .selectFrom('referrals')
    .select('version')
    .where('id', '=', id)
    .executeTakeFirstOrThrow();
  return row.version;
}

describe.each(APP_ENGINES)('the referral form on %s', (engine) => {
  let t: TestApp;
  let clockOffset = 0;

  beforeAll(async () => {
    t = await createTestApp(engine, { clock: { now: () => new Date(Date.now() + clockOffset) } });
  });
  afterAll(async () => {
    await t.close();
  });

  describe('showing the referral', () => {
    it('shows the prefilled patient, referrer, service, clinical information and urgency', async () => {
      const session = await newFormSession(t, {
        offeringId: 'cgh-gastro',
        ...PATIENT,
        referrerName: 'Dr Lim Wei Ling',
        referrerIdType: 'mcr',
        referrerId: 'M12345A',
        clinicalInfo: '\nDyspepsia for 3 months.\nNo weight loss.',
        isUrgent: true,
      });
      const res = await getPage(t, session);
      expect(res.statusCode).toBe(200);
      expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
      expectSecurityHeaders(res);
      const $ = cheerio.load(res.body);
      expect($('#field-patientName').val()).toBe(PATIENT.patientName);
      expect($('#field-patientUin').val()).toBe(PATIENT.patientUin);
      // A text field showing the date as the documents write it, whatever the browser's language.
      expect($('#field-dob').attr('type')).toBe('text');
      expect($('#field-dob').val()).toBe('29 Feb 1960');
      expect($('#field-patientPhoneNumber').val()).toBe(PATIENT.patientPhoneNumber);
      expect($('#field-patientGender option[selected]').attr('value')).toBe('Male');
      expect($('#field-residentialStatus option[selected]').text()).toBe('Singapore Citizen');
      // Nationality is a select of country names, holding ISO codes.
      expect($('#field-nationality option[selected]').attr('value')).toBe('SG');
      expect($('#field-nationality option[selected]').text()).toBe('Singapore');
      expect($('#field-nationality option')).toHaveLength(250);
      expect($('#field-referrerName').val()).toBe('Dr Lim Wei Ling');
      expect($('#field-referrerIdType option[selected]').attr('value')).toBe('mcr');
      // The leading newline survives the round trip through <textarea>.
      expect($('#field-clinicalInfo').text()).toBe('\nDyspepsia for 3 months.\nNo weight loss.');
      expect($('input[name=isUrgent][checked]').attr('value')).toBe('true');
      expect($('input[name=offeringId][checked]').attr('value')).toBe('cgh-gastro');
      expect($('header').text()).toContain('Bukit Timah Family Clinic');
      expect($('header').text()).toContain(WEB_REQUESTER);
      expect($('script')).toHaveLength(0);
    });

    it('groups the services by category, each with its description and its web addresses as safe links', async () => {
      const $ = cheerio.load((await getPage(t, await newFormSession(t))).body);
      const groups = $('[role=group]')
        .toArray()
        .map((g) => $(g).find('.category__name').text());
      expect(groups).toEqual(['GPFirst', 'Accident & Emergency', 'Specialist Outpatient Clinics']);
      const gastro = $('input[name=offeringId][value=cgh-gastro]');
      const details = $(`#${gastro.attr('aria-describedby')}`);
      expect(details.text()).toContain(
        'Please read the referral guidelines at https://example.org/guide/gastro',
      );
      const link = details.find('a');
      expect(link.attr('href')).toBe('https://example.org/guide/gastro');
      expect(link.attr('rel')).toBe('noopener noreferrer');
      expect(link.attr('target')).toBe('_blank');
      // Labels and the fields they name: every control has one, and the sections are fieldsets or headed.
      for (const control of $('input:not([type=hidden]), select, textarea').toArray()) {
        const id = $(control).attr('id');
        expect($(`label[for="${id}"]`), `label for ${id}`).toHaveLength(1);
      }
    });

    it('refuses a page without a session, with another referral’s session, or with a forged cookie', async () => {
      const a = await newFormSession(t);
      const b = await newFormSession(t);
      const noCookie = await t.app.inject({ method: 'GET', url: `/form/${a.referralId}` });
      expect(noCookie.statusCode).toBe(403);
      expect(cheerio.load(noCookie.body)('h1').text()).toBe('Your session for this referral has ended');
      expectSecurityHeaders(noCookie);
      // B's cookie is named for B: it does not open A.
      expect((await getPage(t, b, `/form/${a.referralId}`)).statusCode).toBe(403);
      // A cookie renamed to A but signed for B, and a cookie with a changed payload.
      const [, value] = b.cookie.split('=');
      expect((await getPage(t, { ...a, cookie: `refhub_form_${a.referralId}=${value}` })).statusCode).toBe(
        403,
      );
      const [version, payload, mac] = a.cookie.split('=')[1]!.split('.');
      const forged = JSON.parse(Buffer.from(payload!, 'base64url').toString()) as Record<string, unknown>;
      forged.e = Number(forged.e) + 86_400;
      const tampered = `${version}.${Buffer.from(JSON.stringify(forged)).toString('base64url')}.${mac}`;
      expect((await getPage(t, { ...a, cookie: `refhub_form_${a.referralId}=${tampered}` })).statusCode).toBe(
        403,
      );
      expect((await getPage(t, a, '/form/not-a-uuid')).statusCode).toBe(404);
      expect((await getPage(t, a)).statusCode).toBe(200);
    });

    it('ends the session 2 hours after the link was opened', async () => {
      const session = await newFormSession(t);
      clockOffset += 2 * 3600_000 - 60_000;
      expect((await getPage(t, session)).statusCode).toBe(200);
      clockOffset += 61_000;
      const res = await getPage(t, session);
      expect(res.statusCode).toBe(403);
      expect(res.body).toContain('Your session for this referral has ended');
    });

    it('hands out no new one-time links while the person uses the form', async () => {
      const session = await newFormSession(t);
      const tokens = () => t.ctx.db.selectFrom('link_tokens').select('id').execute();
      const before = (await tokens()).length;
      await getPage(t, session);
      expect((await postForm(t, session, 'save', { clinicalInfo: 'More detail.' })).statusCode).toBe(303);
      expect((await postForm(t, session, 'submit')).statusCode).toBe(303);
      expect(await tokens()).toHaveLength(before);
    });
  });

  describe('saving a draft', () => {
    it('says the priority a clinic system set decides the urgency, and refuses a change of urgency against it', async () => {
      const session = await newFormSession(t, { priority: 'two-week-wait' });
      const $ = cheerio.load((await getPage(t, session)).body);
      expect($('#section-clinical').parent().text()).toContain(
        'Priority: Two-week wait (suspected cancer), set by your clinic system. It decides the urgency.',
      );
      const res = await postForm(t, session, 'save', { isUrgent: 'false' });
      expect(res.statusCode).toBe(400);
      expect(errorSummaryOf(res.body)).toEqual([
        {
          text: 'Urgency disagrees with the priority Two-week wait (suspected cancer), which decides it',
          href: '#field-isUrgent',
        },
      ]);
      expect(await senderView(t, session.referralId)).toMatchObject({ isUrgent: true });
    });

    it('saves only what changed, with a Manual timeline event naming the requester and an audit row for the key', async () => {
      const session = await newFormSession(t);
      const res = await postForm(t, session, 'save', { clinicalInfo: 'Epigastric pain.\r\nWorse at night.' });
      expect(res.statusCode).toBe(303);
      expect(res.headers.location).toBe(`/form/${session.referralId}?saved=1`);
      expectSecurityHeaders(res);

      const view = await senderView(t, session.referralId);
      expect(view.status).toBe('draft');
      expect(view.clinicalInfo).toBe('Epigastric pain.\nWorse at night.');
      expect((view.patient as { name: string }).name).toBe(PATIENT.patientName);
      const last = (view.timelineEvents as TimelineEvent[]).at(-1);
      expect(last).toEqual(
        expect.objectContaining({
          type: 'referral.updated',
          system: 'Manual',
          description: `${WEB_REQUESTER} (Bukit Timah Family Clinic) updated the referral (Clinical information).`,
        }),
      );

      const audit = await t.ctx.db
        .selectFrom('audit_events')
        .select(['api_key_id', 'system', 'institution_id', 'requester_identifier', 'outcome'])
        .where('action', '=', 'referral.update')
        .where((eb) => eb(eb.val(session.referralId), '=', eb.fn.any('referral_ids')))
        .execute();
      expect(audit).toEqual([
        {
          api_key_id: await apiKeyIdOf(t, t.sender),
          system: 'Manual',
          institution_id: t.sender.institution.institutionId,
          requester_identifier: WEB_REQUESTER,
          outcome: 'success',
        },
      ]);

      const shown = cheerio.load((await getPage(t, session, String(res.headers.location))).body);
      expect(shown('[role=status]').text()).toContain('Draft saved');
      expect(shown('#field-clinicalInfo').text()).toBe('Epigastric pain.\nWorse at night.');
    });

    it('clears a field the person emptied, and changes nothing when nothing changed', async () => {
      const session = await newFormSession(t);
      expect((await postForm(t, session, 'save', { patientPhoneNumber: '' })).statusCode).toBe(303);
      const view = await senderView(t, session.referralId);
      expect((view.patient as { phoneNumber: unknown }).phoneNumber).toBeNull();
      const version = await versionOf(t, session.referralId);
      expect((await postForm(t, session, 'save')).statusCode).toBe(303);
      expect(await versionOf(t, session.referralId)).toBe(version);
    });

    it('shows schema errors next to each field and in a summary, keeps what was typed, and saves nothing', async () => {
      const session = await newFormSession(t);
      const version = await versionOf(t, session.referralId);
      const res = await postForm(t, session, 'save', {
        patientUin: 'X12',
        patientPhoneNumber: '1234',
        referrerEmail: 'not an email',
        clinicalInfo: 'Kept as typed.',
      });
      expect(res.statusCode).toBe(400);
      expectSecurityHeaders(res);
      const $ = cheerio.load(res.body);
      expect($('title').text()).toMatch(/^Error: /);
      expect(errorSummaryOf(res.body)).toEqual([
        {
          text: 'Enter the NRIC or FIN as a letter (S, T, F, G or M), 7 digits and a letter, like S1234567D',
          href: '#field-patientUin',
        },
        {
          text: 'Enter the patient’s phone number as 8 digits starting with 3, 6, 8 or 9',
          href: '#field-patientPhoneNumber',
        },
        { text: 'Enter the clinician’s email address, like name@example.com', href: '#field-referrerEmail' },
      ]);
      expect($('.error-summary').attr('autofocus')).toBeDefined();
      for (const [field, typed] of [
        ['patientUin', 'X12'],
        ['patientPhoneNumber', '1234'],
        ['referrerEmail', 'not an email'],
      ] as const) {
        const input = $(`#field-${field}`);
        expect(input.val()).toBe(typed);
        expect(input.attr('aria-invalid')).toBe('true');
        expect(input.attr('aria-describedby')).toContain(`field-${field}-error`);
        expect($(`#field-${field}-error`).text()).toContain('Error:');
      }
      expect($('#field-patientName').attr('aria-invalid')).toBeUndefined();
      expect($('#field-clinicalInfo').text()).toBe('Kept as typed.');
      expect(await versionOf(t, session.referralId)).toBe(version);
    });

    it('shows the services’ own checks the same way: a date of birth in the future', async () => {
      const session = await newFormSession(t);
      const res = await postForm(t, session, 'save', { dob: '2999-01-01' });
      expect(res.statusCode).toBe(400);
      expect(errorSummaryOf(res.body)).toEqual([
        { text: 'Date of birth must not be in the future', href: '#field-dob' },
      ]);
      expect(cheerio.load(res.body)('#field-dob').val()).toBe('2999-01-01');
    });

    it('refuses names of spaces alone next to their fields, as the API does, rather than clearing them', async () => {
      const session = await newFormSession(t, {
        offeringId: 'cgh-gastro',
        ...PATIENT,
        referrerName: 'Dr Lim',
      });
      const version = await versionOf(t, session.referralId);
      const res = await postForm(t, session, 'save', { patientName: '   ', referrerName: ' \t ' });
      expect(res.statusCode).toBe(400);
      expect(errorSummaryOf(res.body)).toEqual([
        { text: 'Enter the patient’s full name in 200 characters or fewer', href: '#field-patientName' },
        { text: 'Enter the clinician’s name in 200 characters or fewer', href: '#field-referrerName' },
      ]);
      const $ = cheerio.load(res.body);
      expect($('#field-patientName').val()).toBe('   ');
      expect($('#field-patientName').attr('aria-invalid')).toBe('true');
      expect($('#field-referrerName').attr('aria-invalid')).toBe('true');
      expect(await versionOf(t, session.referralId)).toBe(version);
      const view = await senderView(t, session.referralId);
      expect(view.patient).toMatchObject({ name: PATIENT.patientName });
      expect(view.referrer).toMatchObject({ name: 'Dr Lim' });
    });

    it('still clears clinical information of spaces alone, which may be blank', async () => {
      const session = await newFormSession(t, {
        offeringId: 'cgh-gastro',
        ...PATIENT,
        clinicalInfo: 'Fever.',
      });
      expect((await postForm(t, session, 'save', { clinicalInfo: ' \r\n ' })).statusCode).toBe(303);
      expect((await senderView(t, session.referralId)).clinicalInfo).toBeNull();
    });

    it('refuses a character the store cannot hold (NUL) next to its field, and saves nothing', async () => {
      const session = await newFormSession(t);
      const version = await versionOf(t, session.referralId);
      const res = await postForm(t, session, 'save', {
        patientName: 'Tan\u0000Ah Kow',
        clinicalInfo: 'Pain\u0000Quokkamark',
      });
      expect(res.statusCode).toBe(400);
      expect(errorSummaryOf(res.body)).toEqual([
        {
          text: 'Patient’s full name contains an invisible character that cannot be saved; type it again',
          href: '#field-patientName',
        },
        {
          text: 'Clinical information contains an invisible character that cannot be saved; type it again',
          href: '#field-clinicalInfo',
        },
      ]);
      expect(await versionOf(t, session.referralId)).toBe(version);
    });

    it('refuses text-direction and control characters next to their fields, and keeps line breaks in clinical information', async () => {
      const session = await newFormSession(t);
      const version = await versionOf(t, session.referralId);
      const res = await postForm(t, session, 'save', {
        patientName: 'Tan \u202eAh Kow',
        referrerName: 'Dr\u0085Lim',
        clinicalInfo: 'Pain\u001bon the left',
      });
      expect(res.statusCode).toBe(400);
      expect(errorSummaryOf(res.body).map((e) => e.href)).toEqual([
        '#field-patientName',
        '#field-referrerName',
        '#field-clinicalInfo',
      ]);
      expect(errorSummaryOf(res.body)[0]?.text).toBe(
        'Patient’s full name contains an invisible character that cannot be saved; type it again',
      );
      expect(await versionOf(t, session.referralId)).toBe(version);
      const lines = await postForm(t, session, 'save', { clinicalInfo: 'Fever.\r\nCough:\tdry.' });
      expect(lines.statusCode).toBe(303);
      expect((await senderView(t, session.referralId)).clinicalInfo).toBe('Fever.\nCough:\tdry.');
    });

    it('refuses a date of birth before 1900 next to the field', async () => {
      const session = await newFormSession(t);
      for (const dob of ['1800-01-01', '0001-01-01', '1 Jan 1899']) {
        const res = await postForm(t, session, 'save', { dob });
        expect(res.statusCode).toBe(400);
        expect(errorSummaryOf(res.body)).toEqual([
          {
            text: 'Enter the date of birth as a real date from 1 Jan 1900 on, like 29 Feb 1960',
            href: '#field-dob',
          },
        ]);
      }
      expect((await senderView(t, session.referralId)).patient).toMatchObject({ dob: PATIENT.dob });
    });

    it('takes a date of birth as the documents write it, and stores it as YYYY-MM-DD', async () => {
      const session = await newFormSession(t);
      const version = await versionOf(t, session.referralId);
      // Shown as "29 Feb 1960" and posted back unchanged, or typed in another case: no change.
      expect((await postForm(t, session, 'save', { dob: ' 29 feb 1960 ' })).statusCode).toBe(303);
      expect(await versionOf(t, session.referralId)).toBe(version);
      for (const [typed, stored] of [
        ['1 March 1961', '1961-03-01'],
        ['7-Sept-1962', '1962-09-07'],
        ['1963-12-31', '1963-12-31'],
      ] as const) {
        const res = await postForm(t, session, 'save', { dob: typed });
        expect(res.statusCode, typed).toBe(303);
        expect((await senderView(t, session.referralId)).patient, typed).toMatchObject({ dob: stored });
      }
      const page = cheerio.load((await getPage(t, session, `/form/${session.referralId}`)).body);
      expect(page('#field-dob').val()).toBe('31 Dec 1963');
    });

    it('refuses a date of birth that is not a date, or numbers alone, naming the field', async () => {
      const session = await newFormSession(t);
      for (const dob of ['02/29/1960', '29/02/1960', '30 Feb 1960', '29 Fbe 1960', 'yesterday']) {
        const res = await postForm(t, session, 'save', { dob });
        expect(res.statusCode, dob).toBe(400);
        expect(errorSummaryOf(res.body), dob).toEqual([
          {
            text: 'Enter the date of birth as a real date from 1 Jan 1900 on, like 29 Feb 1960',
            href: '#field-dob',
          },
        ]);
        // What was typed comes back, to be corrected.
        expect(cheerio.load(res.body)('#field-dob').val()).toBe(dob);
      }
      expect((await senderView(t, session.referralId)).patient).toMatchObject({ dob: PATIENT.dob });
    });

    it('saves nothing over a change made elsewhere since the page was drawn, and says so', async () => {
      const session = await newFormSession(t);
      const page = formStateOf((await getPage(t, session)).body);
      await call(t, t.sender, 'PATCH', `/api/v1/referrals/${session.referralId}`, {
        clinicalInfo: 'From the API.',
      });
      const res = await postForm(t, session, 'save', { clinicalInfo: 'From the form.' }, { state: page });
      expect(res.statusCode).toBe(409);
      expect(errorSummaryOf(res.body)[0]?.text).toContain(
        'Someone else changed this referral while you were editing',
      );
      const $ = cheerio.load(res.body);
      expect($('#field-clinicalInfo').text()).toBe('From the form.');
      expect($('input[name=version]').val()).toBe(String(await versionOf(t, session.referralId)));
      expect((await senderView(t, session.referralId)).clinicalInfo).toBe('From the API.');
    });
  });

  describe('submitting', () => {
    it('submits nothing over a change made elsewhere, even one the form does not show', async () => {
      const session = await newFormSession(t);
      const page = formStateOf((await getPage(t, session)).body);
      await call(
        t,
        t.sender,
        'POST',
        `/api/v1/referrals/${session.referralId}/notes`,
        { content: 'Added from the clinic system.' },
        201,
      );
      const res = await postForm(t, session, 'submit', {}, { state: page });
      expect(res.statusCode).toBe(409);
      expect(errorSummaryOf(res.body)[0]?.text).toContain('Someone else changed this referral');
      expect((await senderView(t, session.referralId)).status).toBe('draft');
      // The page now carries the current version: submitting again goes through.
      expect((await postForm(t, session, 'submit', {}, { state: formStateOf(res.body) })).statusCode).toBe(
        303,
      );
    });

    it('submits through the same command as the API, and shows the result page', async () => {
      const session = await newFormSession(t);
      const res = await postForm(t, session, 'submit', { isUrgent: 'true' });
      expect(res.statusCode).toBe(303);
      expect(res.headers.location).toBe(`/form/${session.referralId}/submitted`);

      const view = await senderView(t, session.referralId);
      expect(view).toMatchObject({ status: 'pending-acceptance', coreStatus: 'pending', isUrgent: true });
      const events = (view.timelineEvents as TimelineEvent[]).slice(-2);
      expect(events).toEqual([
        expect.objectContaining({ type: 'referral.updated', system: 'Manual' }),
        {
          ...events[1],
          type: 'referral.pending-acceptance',
          system: 'Manual',
          description: `${WEB_REQUESTER} (Bukit Timah Family Clinic) submitted the referral to Central General Hospital; it is awaiting acceptance.`,
        },
      ]);
      const outbox = await t.ctx.db
        .selectFrom('outbox')
        .select('topic')
        .where('referral_id', '=', session.referralId)
        .execute();
      expect(outbox.map((o) => o.topic)).toContain('ehr-forward');

      const result = await getPage(t, session, String(res.headers.location));
      expect(result.statusCode).toBe(200);
      expectSecurityHeaders(result);
      const $ = cheerio.load(result.body);
      expect($('h1').text()).toBe('Referral submitted');
      expect($('.summary').text()).toContain('Submitted, awaiting acceptance');
      expect($('.summary').text()).toContain('Urgent');

      // The form no longer opens: the referral cannot change now.
      const after = await getPage(t, session);
      expect(after.statusCode).toBe(409);
      expect(cheerio.load(after.body)('main').text()).toContain(
        'Its status is now: Submitted, awaiting acceptance.',
      );
    });

    it('lists what submitting still needs, after saving the draft', async () => {
      const session = await newFormSession(t, { ...PATIENT });
      const res = await postForm(t, session, 'submit', { patientUin: '', clinicalInfo: 'Saved anyway.' });
      expect(res.statusCode).toBe(422);
      expect(errorSummaryOf(res.body)).toEqual([
        { text: 'Enter the patient’s NRIC or FIN before you submit', href: '#field-patientUin' },
        { text: 'Choose a service before you submit', href: '#field-offeringId' },
      ]);
      const $ = cheerio.load(res.body);
      expect($('[role=status]').text()).toContain('Your changes are saved as a draft');
      const view = await senderView(t, session.referralId);
      expect(view).toMatchObject({ status: 'draft', clinicalInfo: 'Saved anyway.' });
      // The page now carries the saved version, so the next save goes through.
      const next = await postForm(
        t,
        session,
        'save',
        { patientUin: 'S7654321B', offeringId: 'erh-cardio' },
        {
          state: formStateOf(res.body),
        },
      );
      expect(next.statusCode).toBe(303);
      expect((await postForm(t, session, 'submit')).statusCode).toBe(303);
      expect((await senderView(t, session.referralId)).status).toBe('pending-acceptance');
    });

    it('refuses a service deactivated since it was chosen, next to the service', async () => {
      const session = await newFormSession(t, { offeringId: 'erh-ortho', ...PATIENT });
      await t.ctx.catalog.load({
        systems: [],
        institutions: [],
        offerings: [
          {
            id: 'erh-ortho',
            name: 'Orthopaedic Surgery Specialist Clinic',
            category: 'soc',
            description: 'Musculoskeletal conditions needing specialist orthopaedic review.',
            specialty: 'Orthopaedic Surgery',
            ehrCode: 'ORTHO-SOC',
            institution: { idType: 'hci', id: 'S9002Y' },
            system: 'PartnersBuddy',
            active: false,
          },
        ],
      });
      const page = cheerio.load((await getPage(t, session)).body);
      expect(page('input[name=offeringId][checked]').attr('value')).toBe('erh-ortho');
      expect(page('.option__inactive').text()).toBe('No longer offered');
      const res = await postForm(t, session, 'submit');
      expect(res.statusCode).toBe(400);
      expect(errorSummaryOf(res.body)).toEqual([
        { text: 'Service is no longer offered; choose another', href: '#field-offeringId' },
      ]);
      expect((await senderView(t, session.referralId)).status).toBe('draft');
    });
  });

  describe('responding to the provider', () => {
    it('shows the provider’s request, keeps the service fixed, and resubmits', async () => {
      const referral = await referralIn(t, 'sender-action-required');
      const session = await redeem(t, (await linksOf(t, referral.id)).respond!);
      const res = await getPage(t, session);
      expect(res.statusCode).toBe(200);
      const $ = cheerio.load(res.body);
      expect($('h1').text()).toBe('Respond to the provider’s request');
      expect($('.request').text()).toContain(
        'Central General Hospital asked the sender to act on the referral: Please attach the ECG.',
      );
      expect($('input[name=offeringId]')).toHaveLength(0);
      expect($('.fixed-offering').text()).toContain('Gastroenterology Specialist Clinic');

      // A posted service is ignored: the provider cannot change behind its back.
      const post = await postForm(t, session, 'submit', {
        offeringId: 'erh-cardio',
        clinicalInfo: 'ECG attached.',
      });
      expect(post.statusCode).toBe(303);
      const view = await senderView(t, referral.id);
      expect(view).toMatchObject({ status: 'pending-acceptance', clinicalInfo: 'ECG attached.' });
      expect((view.offering as { id: string }).id).toBe('cgh-gastro');
    });

    it('shows the reason the provider gave, in its words, with its code beside them', async () => {
      const pending = await referralIn(t, 'pending-acceptance');
      await call(t, t.provider, 'POST', `/api/v1/referrals/${pending.id}/request-action`, {
        reasonCode: 'advice-given',
        reason: 'Start omeprazole 20 mg daily and refer again in 8 weeks if symptoms persist.',
      });
      const session = await redeem(t, (await linksOf(t, pending.id)).respond!);
      const $ = cheerio.load((await getPage(t, session)).body);
      const reason = $('.request [data-reason-code]');
      expect(reason.attr('data-reason-code')).toBe('advice-given');
      expect(reason.text().replace(/\s+/g, ' ').trim()).toBe('Reason: Returned to the referrer with advice');
      expect($('.request__text').text()).toContain('Start omeprazole 20 mg daily');
    });

    it('names a service deactivated meanwhile in the summary alone, since it cannot change here', async () => {
      const draft = await call(
        t,
        t.sender,
        'POST',
        '/api/v1/referrals',
        { offeringId: 'erh-cardio', ...PATIENT },
        201,
      );
      const id = String(draft.id);
      await call(t, t.sender, 'POST', `/api/v1/referrals/${id}/submit`, {});
      await call(t, t.otherProvider, 'POST', `/api/v1/referrals/${id}/request-action`, {
        reason: 'Add the ECG.',
      });
      await t.ctx.catalog.load({
        systems: [],
        institutions: [],
        offerings: [
          {
            id: 'erh-cardio',
            name: 'Cardiology Specialist Clinic',
            category: 'soc',
            description: 'Non-urgent cardiology assessments.',
            specialty: 'Cardiology',
            ehrCode: 'CARDIO-SOC',
            institution: { idType: 'hci', id: 'S9002Y' },
            system: 'PartnersBuddy',
            active: false,
          },
        ],
      });
      const session = await redeem(t, (await linksOf(t, id)).respond!);
      const res = await postForm(t, session, 'submit');
      expect(res.statusCode).toBe(400);
      expect(errorSummaryOf(res.body)).toEqual([
        { text: 'Service is no longer offered; choose another', href: undefined },
      ]);
      expect((await senderView(t, id)).status).toBe('sender-action-required');
    });

    it('explains, without a stack trace, a referral cancelled while the form was open', async () => {
      const referral = await referralIn(t, 'sender-action-required');
      const session = await redeem(t, (await linksOf(t, referral.id)).respond!);
      const state = formStateOf((await getPage(t, session)).body);
      await call(t, t.sender, 'POST', `/api/v1/referrals/${referral.id}/cancel`, {
        cancelNote: 'Patient moved away',
      });
      const res = await postForm(t, session, 'save', { clinicalInfo: 'Too late.' }, { state });
      expect(res.statusCode).toBe(409);
      expectSecurityHeaders(res);
      const $ = cheerio.load(res.body);
      expect($('h1').text()).toBe('This referral can no longer be changed here');
      expect($('main').text()).toContain('Its status is now: Cancelled.');
      expect(res.body).not.toMatch(/at \w+ \(|Error:|stack/);
    });

    it('explains a referral deleted while the form was open', async () => {
      const session = await newFormSession(t);
      await call(
        t,
        t.sender,
        'DELETE',
        `/api/v1/referrals/${session.referralId}?institutionIdType=hci&institutionId=S1234A`,
      );
      const res = await getPage(t, session);
      expect(res.statusCode).toBe(404);
      expect(cheerio.load(res.body)('h1').text()).toBe('This referral is not available');
    });
  });

  describe('CSRF and origin', () => {
    let session: WebSession;
    beforeAll(async () => {
      session = await newFormSession(t);
    });

    const refused = async (changes: Record<string, string>, headers: Record<string, string> = {}) => {
      const version = await versionOf(t, session.referralId);
      const res = await postForm(
        t,
        session,
        'save',
        { clinicalInfo: 'Forged change.', ...changes },
        { headers },
      );
      expect(res.statusCode).toBe(403);
      expectSecurityHeaders(res);
      expect(cheerio.load(res.body)('h1').text()).toBe('This form could not be accepted');
      expect(await versionOf(t, session.referralId)).toBe(version);
    };

    it('refuses a post without the token, with a wrong one, or with another session’s', async () => {
      await refused({ _csrf: '' });
      await refused({ _csrf: 'A'.repeat(43) });
      const other = await newFormSession(t);
      const otherToken = formStateOf((await getPage(t, other)).body).csrf;
      await refused({ _csrf: otherToken });
    });

    it('refuses a post from another origin or site', async () => {
      await refused({}, { origin: 'https://evil.example' });
      await refused({}, { 'sec-fetch-site': 'cross-site' });
      await refused({}, { 'sec-fetch-site': 'same-site' });
    });

    it('accepts its own page’s post, including the `Origin: null` that no-referrer pages send', async () => {
      const res = await postForm(
        t,
        session,
        'save',
        { clinicalInfo: 'Genuine change.' },
        {
          headers: { origin: 'null', 'sec-fetch-site': 'same-origin' },
        },
      );
      expect(res.statusCode).toBe(303);
      const ownOrigin = await postForm(
        t,
        session,
        'save',
        { clinicalInfo: 'Again.' },
        {
          headers: { origin: 'http://refhub.test' },
        },
      );
      expect(ownOrigin.statusCode).toBe(303);
    });

    it('refuses a post without a session at all, before reading it', async () => {
      const res = await t.app.inject({
        method: 'POST',
        url: `/form/${session.referralId}`,
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        payload: 'intent=save&clinicalInfo=x',
      });
      expect(res.statusCode).toBe(403);
    });

    it('answers a malformed or oversized post with a page, not a problem document', async () => {
      const state = formStateOf((await getPage(t, session)).body);
      const repeated = await t.app.inject({
        method: 'POST',
        url: `/form/${session.referralId}`,
        headers: { cookie: session.cookie, 'content-type': 'application/x-www-form-urlencoded' },
        payload: `${new URLSearchParams({ ...state.fields, intent: 'save' }).toString()}&patientName=a&patientName=b`,
      });
      expect(repeated.statusCode).toBe(400);
      expect(repeated.headers['content-type']).toBe('text/html; charset=utf-8');
      const large = await t.app.inject({
        method: 'POST',
        url: `/form/${session.referralId}`,
        headers: { cookie: session.cookie, 'content-type': 'application/x-www-form-urlencoded' },
        payload: `clinicalInfo=${'x'.repeat(300 * 1024)}`,
      });
      expect(large.statusCode).toBe(413);
      expect(large.headers['content-type']).toBe('text/html; charset=utf-8');
      expectSecurityHeaders(large);
    });

    it('answers a post that is not UTF-8, or not percent-encoded UTF-8, with a page, and saves nothing', async () => {
      const version = await versionOf(t, session.referralId);
      const fields = new URLSearchParams({
        ...formStateOf((await getPage(t, session)).body).fields,
        intent: 'save',
      });
      for (const payload of [
        Buffer.concat([Buffer.from(`${fields.toString()}&clinicalInfo=Pain `), Buffer.from([0xff, 0xfe])]),
        Buffer.from(`${fields.toString()}&clinicalInfo=Pain%ED%A0%80`),
        Buffer.from(`${fields.toString()}&clinicalInfo=Pain%ZZ`),
      ]) {
        const res = await t.app.inject({
          method: 'POST',
          url: `/form/${session.referralId}`,
          headers: { cookie: session.cookie, 'content-type': 'application/x-www-form-urlencoded' },
          payload,
        });
        expect(res.statusCode).toBe(400);
        expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
        expect(cheerio.load(res.body)('h1').text()).toBe('The form could not be read');
        expectSecurityHeaders(res);
      }
      expect(await versionOf(t, session.referralId)).toBe(version);
    });

    it('answers a page address whose query is not percent-encoded UTF-8 with a page', async () => {
      for (const query of ['x=%ZZ', 'x=%ED%A0%80']) {
        const res = await t.app.inject({
          method: 'GET',
          url: `/form/${session.referralId}?${query}`,
          headers: { cookie: session.cookie },
        });
        expect(res.statusCode).toBe(400);
        expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
        expect(cheerio.load(res.body)('h1').text()).toBe('The address could not be read');
      }
    });

    it('answers a post without the page’s version, or in another media type, with a page', async () => {
      const version = await versionOf(t, session.referralId);
      const withoutVersion = Object.fromEntries(
        Object.entries(formStateOf((await getPage(t, session)).body).fields).filter(
          ([name]) => name !== 'version',
        ),
      );
      const noVersion = await t.app.inject({
        method: 'POST',
        url: `/form/${session.referralId}`,
        headers: { cookie: session.cookie, 'content-type': 'application/x-www-form-urlencoded' },
        payload: new URLSearchParams({ ...withoutVersion, intent: 'save', clinicalInfo: 'x' }).toString(),
      });
      expect(noVersion.statusCode).toBe(400);
      expect(cheerio.load(noVersion.body)('h1').text()).toBe('The form could not be read');
      const text = await t.app.inject({
        method: 'POST',
        url: `/form/${session.referralId}`,
        headers: { cookie: session.cookie, 'content-type': 'text/plain' },
        payload: 'intent=save',
      });
      expect(text.statusCode).toBe(415);
      expect(text.headers['content-type']).toBe('text/html; charset=utf-8');
      expect(await versionOf(t, session.referralId)).toBe(version);
    });
  });

  it('leaves the API as it was: JSON only, problem+json errors', async () => {
    const res = await t.request(t.sender, {
      method: 'POST',
      url: '/api/v1/referrals',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: 'institutionIdType=hci&institutionId=S1234A',
    });
    expect(res.statusCode).toBe(415);
    expect(res.headers['content-type']).toContain('application/problem+json');
    expect(await countRows(t, 'referrals')).toBeGreaterThan(0);
  });
});
