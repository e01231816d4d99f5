// The link upsert fills the referring clinician from what the clinic system knows: when neither the
// body nor the referral names one and `requesterIdentifier` is an email address, the referrer's email
// (and ID, of type `email`) come from it, and the EHR form's letter is signed with it. It never
// overrides a referrer the body or the referral names, and never takes a requester that is not an
// email address.
import * as cheerio from 'cheerio';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { APP_ENGINES } from '../../support/engines.ts';
import { PATIENT } from '../../support/fixtures/patients.ts';
import { call, createDraft } from '../../support/scenarios.ts';
import { createTestApp, type TestApp } from '../../support/test-app.ts';

const EMAIL = 'dr.lim@bukittimah.example';
const NOBODY = { id: null, idType: null, name: null, email: null, contactNumber: null };

interface Referral {
  version: number;
  referrer: Record<string, unknown>;
  timelineEvents: { type: string; description: string }[];
  ehrForm: string;
}

describe.each(APP_ENGINES)('the link upsert’s referring clinician on %s', (engine) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp(engine);
  });
  afterAll(async () => {
    await t.close();
  });

  const upsert = async (requesterIdentifier: string, body: Record<string, unknown> = {}) =>
    (await call(t, t.sender, 'POST', '/api/v1/links/upsert', {
      requesterIdentifier,
      offeringId: 'cgh-gastro',
      ...PATIENT,
      ...body,
    })) as { referralId: string };

  const read = async (id: string) =>
    (await call(
      t,
      t.sender,
      'GET',
      `/api/v1/referrals/${id}?requesterIdentifier=${EMAIL}&institutionIdType=hci&institutionId=S1234A&additionalField=ehrForm`,
    )) as unknown as Referral;

  it('takes an email requester as the referrer of a new draft, and signs the letter with it', async () => {
    const { referralId } = await upsert(EMAIL);
    const referral = await read(referralId);
    expect(referral.referrer).toEqual({ ...NOBODY, id: EMAIL, idType: 'email', email: EMAIL });
    expect(referral.version).toBe(1);
    const $ = cheerio.load(referral.ehrForm);
    expect($('[data-field="signOff.name"]').text()).toBe(EMAIL);
    expect($('[data-field="referrer.email"]').text()).toBe(EMAIL);
    expect($('[data-field="referrer.idType"]').text()).toBe('Email');
  });

  it('takes only the email when it is too long to be an ID', async () => {
    const long = `${'a'.repeat(60)}@bukittimah.example`;
    const { referralId } = await upsert(long);
    expect((await read(referralId)).referrer).toEqual({ ...NOBODY, email: long });
  });

  it('leaves the referrer alone when the body names one, even by name alone or by clearing it', async () => {
    for (const named of [
      { referrerName: 'Dr Tan' },
      { referrerId: 'M12345A', referrerIdType: 'mcr' },
      { referrerEmail: 'nurse.ong@bukittimah.example' },
      { referrerEmail: null },
    ]) {
      const { referralId } = await upsert(EMAIL, named);
      const referrer = (await read(referralId)).referrer;
      expect(referrer.email, JSON.stringify(named)).toBe(named.referrerEmail ?? null);
      expect(referrer.idType, JSON.stringify(named)).toBe(named.referrerIdType ?? null);
    }
  });

  it('takes nothing from a requester that is not an email address', async () => {
    for (const requester of ['HAS-user-4711', 'dr lim@bukittimah.example', 'M12345A']) {
      const { referralId } = await upsert(requester);
      expect((await read(referralId)).referrer, requester).toEqual(NOBODY);
    }
  });

  it('fills an existing draft that names nobody, and says so on its timeline', async () => {
    const draft = await createDraft(t);
    const { referralId } = await upsert(EMAIL, { referralId: draft.id });
    expect(referralId).toBe(draft.id);
    const referral = await read(draft.id);
    expect(referral.referrer).toEqual({ ...NOBODY, id: EMAIL, idType: 'email', email: EMAIL });
    expect(referral.version).toBe(draft.version + 1);
    const last = referral.timelineEvents.at(-1);
    expect(last?.type).toBe('referral.updated');
    expect(last?.description).toContain('Clinician’s email');
  });

  it('never replaces the referrer an existing referral already names', async () => {
    const draft = await createDraft(t, {
      referrerName: 'Dr Tan',
      referrerEmail: 'dr.tan@bukittimah.example',
    });
    await upsert('dr.lee@bukittimah.example', { referralId: draft.id });
    const referral = await read(draft.id);
    expect(referral.referrer).toMatchObject({ name: 'Dr Tan', email: 'dr.tan@bukittimah.example', id: null });
  });
});
