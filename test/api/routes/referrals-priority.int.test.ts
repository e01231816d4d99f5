// A referral's priority over the API: the sender sets one of the catalog's priorities that the offering
// takes (GET /priorities), on create or update; it decides isUrgent, shows in the FHIR view and the EHR
// form, and filters the list. A code not in the catalog, one the offering does not take, or an isUrgent
// that disagrees is a 400 that names the field and changes nothing.
import type { ServiceRequest, Task } from '@medplum/fhirtypes';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectProblem } from '../../support/api-assertions.ts';
import { APP_ENGINES } from '../../support/engines.ts';
import { readFeedToEnd } from '../../support/event-feed.ts';
import { readFhir, resourcesOf } from '../../support/fhir-view.ts';
import { REQUESTER } from '../../support/referral-routes.ts';
import { expectReferralShape, type ReferralBody } from '../../support/referral-shapes.ts';
import { call, createDraft, referralIn } from '../../support/scenarios.ts';
import { createTestApp, type TestApp } from '../../support/test-app.ts';

const TWO_WEEK_WAIT = {
  code: 'two-week-wait',
  display: 'Two-week wait (suspected cancer)',
  fhirPriority: 'asap',
};

describe.each(APP_ENGINES)('referral priorities on %s', (engine) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp(engine);
  });
  afterAll(async () => {
    await t.close();
  });

  const url = (id: string) => `/api/v1/referrals/${id}`;

  function patch(id: string, body: Record<string, unknown>) {
    return t.request(t.sender, {
      method: 'PATCH',
      url: url(id),
      payload: { ...t.sender.institution, requesterIdentifier: REQUESTER, ...body },
    });
  }

  async function read(id: string): Promise<ReferralBody> {
    return expectReferralShape(
      await call(
        t,
        t.sender,
        'GET',
        `${url(id)}?requesterIdentifier=${REQUESTER}&institutionIdType=hci&institutionId=${t.sender.institution.institutionId}`,
      ),
    );
  }

  async function formOf(id: string): Promise<string> {
    const body = await call(
      t,
      t.sender,
      'GET',
      `${url(id)}?requesterIdentifier=${REQUESTER}&institutionIdType=hci&institutionId=${t.sender.institution.institutionId}&additionalField=ehrForm`,
    );
    return String(body.ehrForm);
  }

  async function priorities(query: Record<string, string> = {}) {
    return t.request(t.sender, {
      method: 'GET',
      url: '/api/v1/priorities',
      query: { ...t.sender.institution, ...query },
    });
  }

  it('lists the priorities in use, and those an offering takes', async () => {
    const all = await priorities();
    expect(all.statusCode, all.body).toBe(200);
    expect(all.json()).toEqual({
      data: [
        { code: 'routine', display: 'Routine', fhirPriority: 'routine' },
        { code: 'urgent', display: 'Urgent', fhirPriority: 'urgent' },
        TWO_WEEK_WAIT,
      ],
    });
    const ae = await priorities({ offeringId: 'cgh-ae' });
    expect(ae.json()).toEqual({ data: [{ code: 'urgent', display: 'Urgent', fhirPriority: 'urgent' }] });
    const unknown = expectProblem(
      await priorities({ offeringId: 'no-such-service' }),
      400,
      'validation_failed',
    );
    expect(unknown.errors).toEqual([{ path: 'query.offeringId', message: 'is not a known offering' }]);
  });

  it('sets a priority on create and update, which decides isUrgent and the FHIR priority', async () => {
    const draft = await createDraft(t, { priority: 'two-week-wait' });
    const created = await read(draft.id);
    expect(created).toMatchObject({ priority: TWO_WEEK_WAIT, isUrgent: true });

    const res = await patch(created.id, { priority: 'routine' });
    expect(res.statusCode, res.body).toBe(200);
    const routine = await read(created.id);
    expect(routine).toMatchObject({
      priority: { code: 'routine', display: 'Routine', fhirPriority: 'routine' },
      isUrgent: false,
    });
    expect(routine.timelineEvents.at(-1)?.description).toMatch(/updated the referral \(Priority\)\.$/);

    const cleared = await patch(created.id, { priority: null });
    expect(cleared.statusCode, cleared.body).toBe(200);
    expect((await read(created.id)).priority).toBeNull();
  });

  it('gives the priority to the FHIR view and the EHR form', async () => {
    const submitted = await referralIn(t, 'pending-acceptance', { priority: 'two-week-wait' });
    const { bundle } = await readFhir(t, t.sender, submitted.id);
    expect(resourcesOf<ServiceRequest>(bundle, 'ServiceRequest')[0]?.priority).toBe('asap');
    expect(resourcesOf<Task>(bundle, 'Task')[0]?.priority).toBe('asap');
    const form = await formOf(submitted.id);
    expect(form).toContain('data-field="priority"');
    expect(form).toContain('Two-week wait (suspected cancer)');
    expect(form).toContain('data-field="priorityCode"');
  });

  it('keeps the form of a referral without a priority as it was, and isUrgent as the sender set it', async () => {
    const urgent = await referralIn(t, 'pending-acceptance', { isUrgent: true });
    const view = await read(urgent.id);
    expect(view).toMatchObject({ priority: null, isUrgent: true });
    expect(await formOf(urgent.id)).not.toContain('data-field="priority"');
    const { bundle } = await readFhir(t, t.sender, urgent.id);
    expect(resourcesOf<ServiceRequest>(bundle, 'ServiceRequest')[0]?.priority).toBe('urgent');
  });

  it('filters the list by priority', async () => {
    const tww = await referralIn(t, 'pending-acceptance', { priority: 'two-week-wait' });
    const routine = await referralIn(t, 'pending-acceptance', { priority: 'routine' });
    const page = await call(
      t,
      t.sender,
      'GET',
      `/api/v1/institutions/hci/${t.sender.institution.institutionId}/referrals?priority=two-week-wait&pageSize=1000`,
    );
    const ids = (page.data as { id: string; priority: { code: string } | null }[]).map((r) => r.id);
    expect(ids).toContain(tww.id);
    expect(ids).not.toContain(routine.id);
    expect(
      (page.data as { priority: { code: string } | null }[]).every(
        (r) => r.priority?.code === 'two-week-wait',
      ),
    ).toBe(true);
    const both = await call(
      t,
      t.sender,
      'GET',
      `/api/v1/institutions/hci/${t.sender.institution.institutionId}/referrals?priority=two-week-wait&priority=routine&pageSize=1000`,
    );
    expect((both.data as { id: string }[]).map((r) => r.id)).toEqual(
      expect.arrayContaining([tww.id, routine.id]),
    );
  });

  it('refuses a code the catalog does not offer, one the offering does not take, and an urgency that disagrees', async () => {
    const draft = await read((await createDraft(t, { priority: 'urgent' })).id);
    const cases: [Record<string, unknown>, string, RegExp][] = [
      [{ priority: 'soonish' }, 'body.priority', /is not a priority the catalog offers/],
      [{ offeringId: 'cgh-ae', priority: 'routine' }, 'body.priority', /is not a priority .* takes$/],
      [{ priority: 'routine', isUrgent: true }, 'body.isUrgent', /disagrees with the priority Routine/],
      [{ isUrgent: false }, 'body.isUrgent', /disagrees with the priority Urgent/],
      [{ priority: 'Two Week' }, 'body.priority', /pattern|match/],
    ];
    for (const [body, path, message] of cases) {
      const problem = expectProblem(await patch(draft.id, body), 400, 'validation_failed');
      expect(problem.errors?.[0]?.path, JSON.stringify(body)).toBe(path);
      expect(problem.errors?.[0]?.message, JSON.stringify(body)).toMatch(message);
    }
    // A service that does not take the referral's priority: choosing it asks for another.
    const tww = await read((await createDraft(t, { priority: 'two-week-wait' })).id);
    const moved = expectProblem(await patch(tww.id, { offeringId: 'cgh-ae' }), 400, 'validation_failed');
    expect(moved.errors).toEqual([
      { path: 'body.priority', message: expect.stringMatching(/takes; choose another$/) as unknown },
    ]);
    expect((await read(draft.id)).version).toBe(draft.version);
    expect((await read(tww.id)).version).toBe(tww.version);
    // Moving with a priority the new service takes works in one request.
    const ok = await patch(tww.id, { offeringId: 'cgh-ae', priority: 'urgent' });
    expect(ok.statusCode, ok.body).toBe(200);
  });

  it('lets triage accept with another priority, saying why, and puts who changed it from what to what on the timeline', async () => {
    const pending = await referralIn(t, 'pending-acceptance', { priority: 'routine' });
    const accept = (body: Record<string, unknown>) =>
      t.request(t.provider, {
        method: 'POST',
        url: `${url(pending.id)}/accept`,
        payload: { ...t.provider.institution, requesterIdentifier: REQUESTER, ...body },
      });
    const noWhy = expectProblem(await accept({ priority: 'two-week-wait' }), 400, 'validation_failed');
    expect(noWhy.errors).toEqual([
      { path: 'body.comment', message: 'is required when triage changes the priority' },
    ]);
    const notTaken = expectProblem(
      await accept({ priority: 'soonish', comment: 'x' }),
      400,
      'validation_failed',
    );
    expect(notTaken.errors?.[0]?.path).toBe('body.priority');
    expect((await read(pending.id)).status).toBe('pending-acceptance');

    const res = await accept({
      priority: 'two-week-wait',
      comment: 'Weight loss and anaemia: suspected cancer pathway.',
      acceptedByName: 'Dr Wong Mei Ling',
    });
    expect(res.statusCode, res.body).toBe(200);
    const accepted = await read(pending.id);
    expect(accepted).toMatchObject({ status: 'accepted', priority: TWO_WEEK_WAIT, isUrgent: true });
    const last = accepted.timelineEvents.at(-1);
    expect(last?.description).toBe(
      'Dr Wong Mei Ling (Central General Hospital) accepted the referral, changing its priority from Routine to ' +
        'Two-week wait (suspected cancer): Weight loss and anaemia: suspected cancer pathway.',
    );
    const { events } = await readFeedToEnd(t, t.sender);
    const event = events.find((e) => e.id === last?.id);
    expect(event?.description).toBe(
      'Dr Wong Mei Ling (Central General Hospital) accepted the referral, changing its priority from Routine to ' +
        'Two-week wait (suspected cancer).',
    );

    // The same priority is a plain acceptance, with nothing to explain.
    const same = await referralIn(t, 'pending-acceptance', { priority: 'urgent' });
    const plain = await t.request(t.provider, {
      method: 'POST',
      url: `${url(same.id)}/accept`,
      payload: { ...t.provider.institution, requesterIdentifier: REQUESTER, priority: 'urgent' },
    });
    expect(plain.statusCode, plain.body).toBe(200);
    expect((await read(same.id)).timelineEvents.at(-1)?.description).toMatch(/accepted the referral\.$/);
  });
});
