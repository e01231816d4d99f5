// Coded reasons over the API: reject, request-action, cancel and back-to-draft take a `reasonCode` of the
// catalog's list (GET /reason-codes) beside the comment they took before; the timeline gives the code's
// words and quotes the comment, the event feed and the FHIR view carry the code and its words and never
// the comment. An unknown code, a code for another operation or a missing required comment is a 400
// that names the field and changes nothing.
import type { Task } from '@medplum/fhirtypes';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REASON_ACTIONS } from '../../../src/domain/reasons.ts';
import { expectProblem } from '../../support/api-assertions.ts';
import { APP_ENGINES } from '../../support/engines.ts';
import { readFeedToEnd } from '../../support/event-feed.ts';
import { readFhir, resourcesOf } from '../../support/fhir-view.ts';
import { REQUESTER } from '../../support/referral-routes.ts';
import { expectReferralShape, type ReferralBody } from '../../support/referral-shapes.ts';
import { call, referralIn } from '../../support/scenarios.ts';
import { createTestApp, type TestApp, type TestParty } from '../../support/test-app.ts';

// Words a person wrote that name the patient: the timeline quotes them, nothing else may.
const COMMENT = 'Tan Ah Kow (S1234567D) is already under the care of the polyclinic.';
const WRONG_SERVICE = { code: 'wrong-service', display: 'Referred to the wrong service' };

interface ReasonCodeJson {
  readonly code: string;
  readonly display: string;
  readonly actions: string[];
  readonly commentRequired: boolean;
}

describe.each(APP_ENGINES)('coded reasons on %s', (engine) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp(engine);
  });
  afterAll(async () => {
    await t.close();
  });

  function post(as: TestParty, id: string, op: string, body: Record<string, unknown>) {
    return t.request(as, {
      method: 'POST',
      url: `/api/v1/referrals/${id}/${op}`,
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

  async function reasonCodes(query: Record<string, string> = {}): Promise<ReasonCodeJson[]> {
    const res = await t.request(t.sender, {
      method: 'GET',
      url: '/api/v1/reason-codes',
      query: { ...t.sender.institution, ...query },
    });
    expect(res.statusCode, res.body).toBe(200);
    return res.json<{ data: ReasonCodeJson[] }>().data;
  }

  it('lists the reason codes in use in the catalog order, with their operations, and those of one operation', async () => {
    const all = await reasonCodes();
    expect(all.map((c) => c.code)).toEqual([
      'more-information-needed',
      'advice-given',
      'manage-in-primary-care',
      'wrong-service',
      'service-unavailable',
      'duplicate',
      'no-longer-needed',
      'patient-declined',
      'patient-moved',
      'details-to-correct',
      'other',
    ]);
    expect(all.find((c) => c.code === 'other')).toEqual({
      code: 'other',
      display: 'Another reason',
      actions: [...REASON_ACTIONS],
      commentRequired: true,
    });
    for (const action of REASON_ACTIONS) {
      const some = await reasonCodes({ action });
      expect(some.length, action).toBeGreaterThan(0);
      expect(some, action).toEqual(all.filter((c) => c.actions.includes(action)));
    }
    expectProblem(
      await t.request(t.sender, {
        method: 'GET',
        url: '/api/v1/reason-codes',
        query: { ...t.sender.institution, action: 'accept' },
      }),
      400,
      'validation_failed',
    );
  });

  it('refuses a key that does not act for the institution it names, as every read does', async () => {
    const res = await t.request(t.sender, {
      method: 'GET',
      url: '/api/v1/reason-codes',
      query: { ...t.provider.institution },
    });
    expect(res.statusCode, res.body).toBe(403);
  });

  it('rejects with a code and a comment: the timeline quotes the comment, the feed and FHIR carry the code alone', async () => {
    const pending = await referralIn(t, 'pending-acceptance');
    const res = await post(t.provider, pending.id, 'reject', {
      reasonCode: 'wrong-service',
      reason: COMMENT,
      rejectedByName: 'Dr Wong Mei Ling',
    });
    expect(res.statusCode, res.body).toBe(200);
    const rejected = expectReferralShape(res.json());
    const last = rejected.timelineEvents.at(-1);
    expect(last).toMatchObject({
      type: 'referral.rejected',
      description: expect.stringMatching(
        /rejected the referral \(Referred to the wrong service\): Tan Ah Kow/,
      ) as unknown,
      reason: WRONG_SERVICE,
    });
    // What the sender reads later is what the answer said.
    expect((await read(t.sender, pending.id)).timelineEvents.at(-1)).toEqual(last);

    for (const party of [t.sender, t.provider]) {
      const { events } = await readFeedToEnd(t, party);
      const mine = events.filter((e) => e.referralId === pending.id);
      const event = mine.find((e) => e.type === 'referral.rejected');
      expect(event).toMatchObject({
        reason: WRONG_SERVICE,
        description: expect.stringMatching(
          /rejected the referral \(Referred to the wrong service\)\.$/,
        ) as unknown,
      });
      expect(JSON.stringify(mine)).not.toContain('Tan Ah Kow');
      expect(JSON.stringify(mine)).not.toContain('S1234567D');
    }

    const { bundle } = await readFhir(t, t.sender, pending.id);
    const [task] = resourcesOf<Task>(bundle, 'Task');
    expect(task?.statusReason?.coding).toEqual([
      {
        system: 'urn:refhub:fhir:CodeSystem:reason',
        code: 'wrong-service',
        display: 'Referred to the wrong service',
      },
    ]);
    expect(task?.statusReason?.text).toBe(last?.description);
  });

  it('returns a referral with advice: request-action with advice-given, whose comment is required', async () => {
    const pending = await referralIn(t, 'pending-acceptance');
    const missing = expectProblem(
      await post(t.provider, pending.id, 'request-action', { reasonCode: 'advice-given' }),
      400,
      'validation_failed',
    );
    expect(missing.errors).toEqual([
      { path: 'body.reason', message: 'is required with the reason advice-given' },
    ]);
    const res = await post(t.provider, pending.id, 'request-action', {
      reasonCode: 'advice-given',
      reason: 'Start omeprazole 20 mg daily and refer again in 8 weeks if symptoms persist.',
    });
    expect(res.statusCode, res.body).toBe(200);
    const asked = expectReferralShape(res.json());
    expect(asked.status).toBe('sender-action-required');
    expect(asked.timelineEvents.at(-1)?.reason).toEqual({
      code: 'advice-given',
      display: 'Returned to the referrer with advice',
    });
  });

  it('cancels with a code alone, and returns to draft with a code and a comment', async () => {
    const accepted = await referralIn(t, 'accepted');
    const res = await post(t.sender, accepted.id, 'cancel', { reasonCode: 'no-longer-needed' });
    expect(res.statusCode, res.body).toBe(200);
    const cancelled = await read(t.sender, accepted.id);
    expect(cancelled.timelineEvents.at(-1)).toMatchObject({
      type: 'referral.cancelled',
      description: expect.stringMatching(
        /cancelled the referral \(The patient no longer needs the referral\)\.$/,
      ) as unknown,
      reason: { code: 'no-longer-needed', display: 'The patient no longer needs the referral' },
    });

    const pending = await referralIn(t, 'pending-acceptance');
    const back = await post(t.sender, pending.id, 'back-to-draft', {
      reasonCode: 'details-to-correct',
      comment: 'The date of birth was wrong.',
    });
    expect(back.statusCode, back.body).toBe(200);
    expect((await read(t.sender, pending.id)).timelineEvents.at(-1)).toMatchObject({
      type: 'referral.back-to-draft',
      description: expect.stringMatching(
        /returned the referral to draft \(The referral's details need correcting\): The date of birth was wrong\.$/,
      ) as unknown,
      reason: { code: 'details-to-correct', display: "The referral's details need correcting" },
    });
  });

  it('keeps taking the comment alone, as before reasons had codes, with no reason on the timeline', async () => {
    const pending = await referralIn(t, 'pending-acceptance');
    const res = await post(t.provider, pending.id, 'reject', {
      reason: 'Please refer to the polyclinic first.',
    });
    expect(res.statusCode, res.body).toBe(200);
    const last = expectReferralShape(res.json()).timelineEvents.at(-1);
    expect(last?.description).toMatch(/rejected the referral: Please refer to the polyclinic first\.$/);
    expect(last).not.toHaveProperty('reason');
    const back = await post(t.sender, (await referralIn(t, 'pending-acceptance')).id, 'back-to-draft', {});
    expect(back.statusCode, back.body).toBe(200);
  });

  it('refuses an unknown code, a code of another operation, a missing comment and no reason at all, changing nothing', async () => {
    const pending = await referralIn(t, 'pending-acceptance');
    const cases: [string, TestParty, Record<string, unknown>, { path: string; message: RegExp }][] = [
      [
        'reject',
        t.provider,
        { reasonCode: 'not-a-code' },
        { path: 'body.reasonCode', message: /is not a reason the catalog offers/ },
      ],
      [
        'reject',
        t.provider,
        { reasonCode: 'no-longer-needed' },
        { path: 'body.reasonCode', message: /is a reason for cancel, not for reject/ },
      ],
      [
        'reject',
        t.provider,
        { reasonCode: 'other', reason: '   ' },
        { path: 'body.reason', message: /more than whitespace/ },
      ],
      ['reject', t.provider, {}, { path: 'body.reason', message: /^is required$/ }],
      [
        'request-action',
        t.provider,
        { reasonCode: 'duplicate', reason: 'x' },
        { path: 'body.reasonCode', message: /not for request-action/ },
      ],
      ['cancel', t.sender, {}, { path: 'body.cancelNote', message: /^is required$/ }],
      [
        'cancel',
        t.sender,
        { reasonCode: 'other' },
        { path: 'body.cancelNote', message: /is required with the reason other/ },
      ],
      [
        'back-to-draft',
        t.sender,
        { reasonCode: 'wrong-service' },
        { path: 'body.reasonCode', message: /not for back-to-draft/ },
      ],
      [
        'back-to-draft',
        t.sender,
        { reasonCode: 'other' },
        { path: 'body.comment', message: /is required with the reason other/ },
      ],
    ];
    for (const [op, as, body, expected] of cases) {
      const problem = expectProblem(await post(as, pending.id, op, body), 400, 'validation_failed');
      expect(problem.errors, `${op} ${JSON.stringify(body)}`).toEqual([
        { path: expected.path, message: expect.stringMatching(expected.message) as unknown },
      ]);
    }
    // A code that is not one by its form is refused by the schema, naming the field all the same.
    const malformed = expectProblem(
      await post(t.provider, pending.id, 'reject', { reasonCode: 'Wrong Service!', reason: 'x' }),
      400,
      'validation_failed',
    );
    expect(malformed.errors?.[0]?.path).toBe('body.reasonCode');
    expect((await read(t.provider, pending.id)).version).toBe(pending.version);
  });
});
