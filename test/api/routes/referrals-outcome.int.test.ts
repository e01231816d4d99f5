// The provider's outcome over the API: POST …/complete with a code of the catalog's list, the consult
// summary and the provider's own files; the sender's worklist until it acknowledges the outcome
// (POST …/acknowledge-outcome); GET /outcome-codes. Every refusal names the field and changes nothing.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectProblem } from '../../support/api-assertions.ts';
import { APP_ENGINES } from '../../support/engines.ts';
import { readFeedToEnd } from '../../support/event-feed.ts';
import { attachFile } from '../../support/fhir-view.ts';
import { REQUESTER } from '../../support/referral-routes.ts';
import { ISO_MS, expectReferralShape, type ReferralBody } from '../../support/referral-shapes.ts';
import { call, referralIn, type ReferralJson } from '../../support/scenarios.ts';
import { createTestApp, type TestApp, type TestParty } from '../../support/test-app.ts';

const SUMMARY =
  'Seen in clinic on 14 January. Gastroscopy: mild antral gastritis, CLO test negative.\n' +
  'Plan: omeprazole 20 mg daily for 8 weeks; no follow-up needed here.';

describe.each(APP_ENGINES)('the provider outcome on %s', (engine) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp(engine);
  });
  afterAll(async () => {
    await t.close();
  });

  const url = (id: string, op: string) => `/api/v1/referrals/${id}/${op}`;

  function post(as: TestParty, id: string, op: string, body: Record<string, unknown>) {
    return t.request(as, {
      method: 'POST',
      url: url(id, op),
      payload: { ...as.institution, requesterIdentifier: REQUESTER, ...body },
    });
  }

  async function read(as: TestParty, id: string): Promise<ReferralBody> {
    return expectReferralShape(
      await call(
        t,
        as,
        'GET',
        `/api/v1/referrals/${id}?requesterIdentifier=${REQUESTER}&institutionIdType=hci&institutionId=${as.institution.institutionId}`,
      ),
    );
  }

  async function worklist(as: TestParty, status: string): Promise<string[]> {
    const page = await call(
      t,
      as,
      'GET',
      `/api/v1/institutions/hci/${as.institution.institutionId}/referrals?status=${status}&pageSize=1000`,
    );
    return (page.data as { id: string }[]).map((r) => r.id);
  }

  it('completes a scheduled referral with an outcome, its summary and the letter the provider attached', async () => {
    const scheduled = await referralIn(t, 'scheduled');
    const letter = await attachFile(
      t,
      t.provider,
      scheduled.id,
      Buffer.from('Consultation letter: gastritis, omeprazole for 8 weeks.'),
      'consult-letter.txt',
    );
    const before = await read(t.provider, scheduled.id);
    const res = await post(t.provider, scheduled.id, 'complete', {
      outcomeCode: 'seen-follow-up',
      summary: SUMMARY,
      attachmentIds: [letter.id],
      completedByName: 'Dr Wong Mei Ling',
    });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.headers.etag).toBe(`W/"${before.version + 1}"`);
    const completed = expectReferralShape(res.json());
    expect(completed).toMatchObject({ status: 'completed', coreStatus: 'completed' });
    expect(completed.outcome).toEqual({
      code: 'seen-follow-up',
      display: 'Seen, follow-up arranged with the provider',
      summary: SUMMARY,
      attachmentIds: [letter.id],
      completedByName: 'Dr Wong Mei Ling',
      completedAt: expect.stringMatching(ISO_MS) as unknown,
    });
    // The timeline says in words what happened, without the summary (it goes to webhooks and the feed).
    const last = completed.timelineEvents.at(-1)!;
    expect(last.type).toBe('referral.completed');
    expect(last.description).toBe(
      'Dr Wong Mei Ling (Central General Hospital) completed the referral: Seen, follow-up arranged ' +
        'with the provider. One file is part of the outcome.',
    );
    // The national record gets the form again, with the outcome.
    expect(completed.ehrForwarding.state).toBe('queued');
    // A read gives the same outcome, to either side; the sender now has something to do.
    const asSender = await read(t.sender, scheduled.id);
    expect(asSender.outcome).toEqual(completed.outcome);
    expect(asSender.allowedActions).toContain('acknowledge-outcome');
    expect(asSender.actionRequired).toEqual({
      reason: 'outcome-to-acknowledge',
      description:
        'The provider completed the referral and reported its outcome: read it and acknowledge it.',
    });
    expect(completed.allowedActions).toEqual(['add-note']);
  });

  it('lists a completed referral under the sender-action-required worklist until the sender acknowledges it', async () => {
    const completed = await referralIn(t, 'completed');
    expect(await worklist(t.sender, 'sender-action-required')).toContain(completed.id);
    expect(await worklist(t.sender, 'completed')).toContain(completed.id);
    // The provider is not asked to act.
    expect(await worklist(t.provider, 'sender-action-required')).not.toContain(completed.id);
    expect(await worklist(t.provider, 'completed')).toContain(completed.id);

    const res = await post(t.sender, completed.id, 'acknowledge-outcome', { acknowledgedByName: 'Dr Lim' });
    expect(res.statusCode, res.body).toBe(200);
    const acknowledged = expectReferralShape(res.json());
    expect(acknowledged).toMatchObject({ status: 'outcome-acknowledged', coreStatus: 'completed' });
    expect(acknowledged).not.toHaveProperty('actionRequired');
    expect(acknowledged.outcome).toMatchObject({
      code: 'seen-discharged',
      acknowledgedByName: 'Dr Lim',
      acknowledgedAt: expect.stringMatching(ISO_MS) as unknown,
    });
    expect(acknowledged.timelineEvents.at(-1)).toMatchObject({
      type: 'referral.outcome-acknowledged',
      description: 'Dr Lim (Bukit Timah Family Clinic) acknowledged the outcome of the referral.',
    });
    expect(await worklist(t.sender, 'sender-action-required')).not.toContain(completed.id);
    expect(await worklist(t.sender, 'completed')).toContain(completed.id);
    expect(await read(t.provider, completed.id)).toMatchObject({
      outcome: { acknowledgedByName: 'Dr Lim' },
    });

    // Once is enough; the provider never acknowledges.
    const again = expectProblem(
      await post(t.sender, completed.id, 'acknowledge-outcome', {}),
      409,
      'invalid_transition',
    );
    expect(again.currentStatus).toBe('outcome-acknowledged');
  });

  it('takes an outcome without a summary only where the code says so', async () => {
    const accepted = await referralIn(t, 'accepted');
    const refused = expectProblem(
      await post(t.provider, accepted.id, 'complete', { outcomeCode: 'seen-discharged' }),
      400,
      'validation_failed',
    );
    expect(refused.errors).toEqual([
      { path: 'body.summary', message: 'is required with outcome seen-discharged' },
    ]);
    const blank = expectProblem(
      await post(t.provider, accepted.id, 'complete', { outcomeCode: 'seen-discharged', summary: '  \n ' }),
      400,
      'validation_failed',
    );
    expect(blank.errors?.[0]?.path).toBe('body.summary');
    expect((await read(t.provider, accepted.id)).version).toBe(accepted.version);

    const res = await post(t.provider, accepted.id, 'complete', { outcomeCode: 'did-not-attend' });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json<ReferralJson>().outcome).toMatchObject({
      code: 'did-not-attend',
      display: 'Patient did not attend',
      summary: null,
      completedByName: null,
    });
  });

  it.each([
    ['an unknown code', { outcomeCode: 'cured' }, 'body.outcomeCode', /not an outcome the catalog offers/],
    ['a code in capitals', { outcomeCode: 'Seen' }, 'body.outcomeCode', /pattern/],
    ['no code', { summary: SUMMARY }, 'body.outcomeCode', /required/],
    [
      'a summary over 8,000 characters',
      { outcomeCode: 'seen-discharged', summary: 'x'.repeat(8001) },
      'body.summary',
      /8000/,
    ],
    [
      'an attachment of no referral',
      {
        outcomeCode: 'seen-discharged',
        summary: SUMMARY,
        attachmentIds: ['018f0000-0000-7000-8000-000000000000'],
      },
      'body.attachmentIds.0',
      /not an attachment of this referral/,
    ],
  ])('refuses %s, naming the field, and changes nothing', async (_what, body, path, message) => {
    const accepted = await referralIn(t, 'accepted');
    const problem = expectProblem(
      await post(t.provider, accepted.id, 'complete', body),
      400,
      'validation_failed',
    );
    const error = problem.errors?.find((e) => e.path === path);
    expect(error, JSON.stringify(problem.errors)).toBeDefined();
    expect(`${error!.message} ${problem.detail}`).toMatch(message);
    const after = await read(t.provider, accepted.id);
    expect(after).toMatchObject({ version: accepted.version, status: 'accepted' });
    expect(after).not.toHaveProperty('outcome');
  });

  it("refuses the sender's file, a file named twice and a file the scan rejected as the outcome's", async () => {
    const accepted = await referralIn(t, 'accepted');
    const theirs = await attachFile(
      t,
      t.sender,
      (await referralIn(t, 'draft')).id,
      Buffer.from('x'),
      'a.txt',
    );
    const mine = await attachFile(t, t.provider, accepted.id, Buffer.from('Letter.'), 'letter.txt');
    const infected = await attachFile(t, t.provider, accepted.id, Buffer.from('Other.'), 'other.txt');
    await t.ctx.db
      .updateTable('attachments')
      .set({ scan_state: 'rejected', scan_signature: 'Eicar-Test-Signature', scanned_at: new Date() })
      .where('id', '=', infected.id)
      .execute();
    const { version } = await read(t.provider, accepted.id);
    const complete = (attachmentIds: string[]) =>
      post(t.provider, accepted.id, 'complete', {
        outcomeCode: 'referred-on',
        summary: SUMMARY,
        attachmentIds,
      });

    const twice = expectProblem(await complete([mine.id, mine.id]), 400, 'validation_failed');
    expect(twice.errors?.[0]?.path).toMatch(/attachmentIds/);
    const other = expectProblem(await complete([theirs.id]), 400, 'validation_failed');
    expect(other.errors).toEqual([
      { path: 'body.attachmentIds.0', message: 'is not an attachment of this referral' },
    ]);
    const rejected = expectProblem(await complete([mine.id, infected.id]), 400, 'validation_failed');
    expect(rejected.errors).toEqual([
      { path: 'body.attachmentIds.1', message: 'was rejected by the malware scan' },
    ]);
    expect((await read(t.provider, accepted.id)).version).toBe(version);
  });

  it("refuses the sender's own file on its referral as the provider's outcome", async () => {
    const draft = await referralIn(t, 'draft');
    const ecg = await attachFile(t, t.sender, draft.id, Buffer.from('ECG: sinus rhythm.'), 'ecg.txt');
    await call(t, t.sender, 'POST', url(draft.id, 'submit'), {});
    await call(t, t.provider, 'POST', url(draft.id, 'accept'), {});
    const problem = expectProblem(
      await post(t.provider, draft.id, 'complete', {
        outcomeCode: 'seen-discharged',
        summary: SUMMARY,
        attachmentIds: [ecg.id],
      }),
      400,
      'validation_failed',
    );
    expect(problem.errors).toEqual([
      { path: 'body.attachmentIds.0', message: "is the sender's attachment; name the provider's own files" },
    ]);
  });

  it('lets only the provider complete, and only once it took the referral on', async () => {
    const pending = await referralIn(t, 'pending-acceptance');
    const early = expectProblem(
      await post(t.provider, pending.id, 'complete', { outcomeCode: 'seen-discharged', summary: SUMMARY }),
      409,
      'invalid_transition',
    );
    expect(early.currentStatus).toBe('pending-acceptance');
    const accepted = await referralIn(t, 'accepted');
    expectProblem(
      await post(t.sender, accepted.id, 'complete', { outcomeCode: 'seen-discharged', summary: SUMMARY }),
      403,
      'forbidden_role',
    );
    // Another provider does not see the referral at all.
    expectProblem(
      await post(t.otherProvider, accepted.id, 'complete', {
        outcomeCode: 'seen-discharged',
        summary: SUMMARY,
      }),
      404,
      'referral_not_found',
    );
  });

  it('puts the outcome on the event feed of both sides in words, without the summary', async () => {
    const completed = await referralIn(t, 'completed');
    for (const party of [t.sender, t.provider]) {
      const { events } = await readFeedToEnd(t, party);
      const mine = events.filter((e) => e.referralId === completed.id);
      const event = mine.find((e) => e.type === 'referral.completed');
      expect(event?.description).toMatch(
        /completed the referral: Seen and discharged to the referring clinic\./,
      );
      expect(JSON.stringify(mine)).not.toContain('omeprazole');
    }
  });

  it('lists the outcome codes in use, in the catalog order, for a key acting for its institution', async () => {
    const res = await t.request(t.provider, {
      method: 'GET',
      url: '/api/v1/outcome-codes',
      query: { ...t.provider.institution },
    });
    expect(res.statusCode, res.body).toBe(200);
    const { data } = res.json<{ data: { code: string; display: string; summaryRequired: boolean }[] }>();
    expect(data.map((c) => c.code)).toEqual([
      'seen-discharged',
      'seen-follow-up',
      'referred-on',
      'admitted',
      'did-not-attend',
      'declined-after-review',
    ]);
    expect(data.find((c) => c.code === 'did-not-attend')).toEqual({
      code: 'did-not-attend',
      display: 'Patient did not attend',
      summaryRequired: false,
    });
    expectProblem(
      await t.request(t.provider, {
        method: 'GET',
        url: '/api/v1/outcome-codes',
        query: { ...t.otherProvider.institution },
      }),
      403,
      'institution_not_permitted',
    );
  });
});
