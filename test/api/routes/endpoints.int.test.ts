// The happy path and the full response shape of every endpoint (contract §5 and §6), the headers
// every response carries (§9–§11), versions and ETags (§4), and the limits of §10.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { v7 as uuidv7 } from 'uuid';
import type { Status } from '../../../src/domain/statuses.ts';
import { hashLinkToken } from '../../../src/services/links/minter.ts';
import { API_VERSION, expectApiHeaders, expectProblem } from '../../support/api-assertions.ts';
import { APP_ENGINES } from '../../support/engines.ts';
import { CANARY, CANARY_MARKERS, PATIENT } from '../../support/fixtures/patients.ts';
import {
  CONTRACT_CORE_STATUS,
  SENDER_ACTION_REASONS,
  ISO_MS,
  expectReferralShape,
  expectSummaryShape,
  type NoteJson,
  type PageJson,
  type ReferralBody,
  type SummaryJson,
} from '../../support/referral-shapes.ts';
import { LIVE_STATUSES, createDraft, referralIn } from '../../support/scenarios.ts';
import { createTestApp, type TestApp, type TestParty } from '../../support/test-app.ts';

const REQUESTER = 'dr.tan@example.org';
const SENDER_NAME = 'Bukit Timah Family Clinic';
const PROVIDER_NAME = 'Central General Hospital';
const LINK_URL = /^http:\/\/refhub\.test\/l\/[A-Za-z0-9_-]{43}$/;

const ref = (id: string) => `/api/v1/referrals/${id}`;

/** Contract §6, transcribed: the buttons each party gets, by status. */
function contractLinks(status: Status, party: 'sender' | 'provider'): { type: string; label: string }[] {
  const links: { type: string; label: string }[] = [];
  if (party === 'sender' && status === 'draft') links.push({ type: 'edit', label: 'Continue editing' });
  if (party === 'sender' && status === 'sender-action-required')
    links.push({ type: 'respond', label: 'Respond to request' });
  if (status !== 'draft') links.push({ type: 'print', label: 'Print referral' });
  links.push({ type: 'view', label: 'View referral' });
  return links;
}

/** Contract §4, transcribed: isCancellable for a cancellable offering. */
const CONTRACT_CANCELLABLE: readonly Status[] = ['pending-acceptance', 'accepted', 'sender-action-required'];

describe.each(APP_ENGINES)('endpoints on %s', (engine) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp(engine);
  });
  afterAll(async () => {
    await t.close();
  });

  /** Every response, success or error, carries the common headers. */
  async function api(who: TestParty | null, options: InjectOptions): Promise<LightMyRequestResponse> {
    const res = await t.request(who, options);
    expectApiHeaders(res);
    return res;
  }

  function ok(res: LightMyRequestResponse, status = 200): unknown {
    expect(res.statusCode, res.body).toBe(status);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    return res.json();
  }

  /** A full Referral response: exactly its fields, and its ETag is its version. */
  function okReferral(res: LightMyRequestResponse, status = 200, options: { ehrForm?: boolean } = {}) {
    const body = expectReferralShape(ok(res, status), options);
    expect(res.headers.etag).toBe(`W/"${body.version}"`);
    return body;
  }

  /** A ReferralSummary response (cancel, back-to-draft): exactly its fields, with its ETag. */
  function okSummary(res: LightMyRequestResponse): SummaryJson {
    const body = expectSummaryShape(ok(res));
    expect(res.headers.etag).toBe(`W/"${body.version}"`);
    return body;
  }

  /** A page of the list or search: `{ data: [ReferralSummary], metadata }`. */
  function okPage(res: LightMyRequestResponse): PageJson {
    const page = ok(res) as PageJson;
    expect(Object.keys(page).sort()).toEqual(['data', 'metadata']);
    expect(Object.keys(page.metadata).sort()).toEqual(['hasNext', 'offset', 'pageSize', 'total']);
    page.data.forEach(expectSummaryShape);
    return page;
  }

  const query = (who: TestParty, extra: Record<string, string | string[]> = {}) => ({
    requesterIdentifier: REQUESTER,
    ...who.institution,
    ...extra,
  });

  async function getReferral(who: TestParty, id: string): Promise<ReferralBody> {
    const res = await api(who, { method: 'GET', url: ref(id), query: query(who) });
    return okReferral(res);
  }

  function post(who: TestParty, url: string, body: Record<string, unknown> = {}) {
    return api(who, { method: 'POST', url, payload: { ...who.institution, ...body } });
  }

  function put(who: TestParty, url: string, body: Record<string, unknown>) {
    return api(who, { method: 'PUT', url, payload: { ...who.institution, ...body } });
  }

  const lastEvent = (r: ReferralBody) => r.timelineEvents[r.timelineEvents.length - 1]!;

  describe('GET /institutions/{type}/{id}/referrals and POST .../referrals/search', () => {
    // Their own sender and provider (S2345B → S9002Y), so counts do not depend on other tests.
    const listUrl = (who: TestParty) => `/api/v1/institutions/hci/${who.institution.institutionId}/referrals`;
    const SEARCH_UIN = 'F1234567N';
    const ids: Record<'draft' | 'pending' | 'accepted' | 'rejected' | 'sar', string> = {
      draft: '',
      pending: '',
      accepted: '',
      rejected: '',
      sar: '',
    };

    beforeAll(async () => {
      const create = async (fields: Record<string, unknown> = {}) =>
        okReferral(
          await post(t.otherSender, '/api/v1/referrals', { offeringId: 'erh-cardio', ...PATIENT, ...fields }),
          201,
        ).id;
      const submit = async (id: string) => ok(await post(t.otherSender, `${ref(id)}/submit`));
      ids.draft = await create();
      ids.pending = await create();
      await submit(ids.pending);
      ids.accepted = await create();
      await submit(ids.accepted);
      ok(await post(t.otherProvider, `${ref(ids.accepted)}/accept`));
      ids.rejected = await create();
      await submit(ids.rejected);
      ok(await post(t.otherProvider, `${ref(ids.rejected)}/reject`, { reason: 'Out of scope' }));
      ids.sar = await create({ patientUin: SEARCH_UIN });
      await submit(ids.sar);
      ok(await post(t.otherProvider, `${ref(ids.sar)}/request-action`, { reason: 'Attach the ECG' }));
      // Touch the draft last, so that updatedAt and createdAt order differently.
      await new Promise((resolve) => setTimeout(resolve, 5));
      ok(
        await api(t.otherSender, {
          method: 'PATCH',
          url: ref(ids.draft),
          payload: { ...t.otherSender.institution, clinicalInfo: 'Touched' },
        }),
      );
    });

    async function list(who: TestParty, search = ''): Promise<PageJson> {
      return okPage(await api(who, { method: 'GET', url: `${listUrl(who)}${search}` }));
    }

    const idsOf = (page: PageJson) => page.data.map((r) => r.id);

    it('lists what the institution sends, as ReferralSummary, newest update first, with default paging', async () => {
      const page = await list(t.otherSender);
      expect(page.metadata).toEqual({ offset: 0, pageSize: 10, hasNext: false, total: 5 });
      expect(idsOf(page)).toEqual([ids.draft, ids.sar, ids.rejected, ids.accepted, ids.pending]);
      const updated = page.data.map((r) => r.updatedAt);
      expect(updated).toEqual([...updated].sort().reverse());
      const draft = page.data[0]!;
      expect(draft).toMatchObject({
        status: 'draft',
        coreStatus: 'draft',
        senderSystem: 'Epic',
        sender: { idType: 'hci', id: 'S2345B', name: 'Tampines Medical Centre' },
        clinicalInfo: 'Touched',
      });
      expect(draft).not.toHaveProperty('submittedAt');
    });

    it('sorts by createdAt or submittedAt, always descending, drafts last for submittedAt', async () => {
      const byCreated = await list(t.otherSender, '?sort=createdAt');
      expect(idsOf(byCreated)).toEqual([ids.sar, ids.rejected, ids.accepted, ids.pending, ids.draft]);
      const bySubmitted = await list(t.otherSender, '?sort=submittedAt');
      expect(idsOf(bySubmitted)).toEqual([ids.sar, ids.rejected, ids.accepted, ids.pending, ids.draft]);
      const submitted = bySubmitted.data.slice(0, 4).map((r) => r.submittedAt!);
      expect(submitted).toEqual([...submitted].sort().reverse());
      expect(idsOf(await list(t.otherSender, '?sort=updatedAt'))[0]).toBe(ids.draft);
    });

    it('filters by coreStatus; the filter may be repeated', async () => {
      const draftOrPending = await list(t.otherSender, '?status=draft&status=pending');
      expect(idsOf(draftOrPending).sort()).toEqual([ids.draft, ids.pending, ids.accepted].sort());
      expect(draftOrPending.metadata.total).toBe(3);
      expect(idsOf(await list(t.otherSender, '?status=pending')).sort()).toEqual(
        [ids.pending, ids.accepted].sort(),
      );
      expect(idsOf(await list(t.otherSender, '?status=rejected'))).toEqual([ids.rejected]);
      expect(idsOf(await list(t.otherSender, '?status=confirmed'))).toEqual([]);
      expect(idsOf(await list(t.otherSender, '?status=cancelled'))).toEqual([]);
    });

    it('status=sender-action-required means the referrals that need the caller to act', async () => {
      expect(idsOf(await list(t.otherSender, '?status=sender-action-required'))).toEqual([ids.sar]);
      // The provider is not the one asked to act.
      expect(idsOf(await list(t.otherProvider, '?status=sender-action-required'))).toEqual([]);
    });

    it('the provider sees what it receives once submitted, never drafts; role narrows the side', async () => {
      const received = await list(t.otherProvider);
      expect(idsOf(received).sort()).toEqual([ids.pending, ids.accepted, ids.rejected, ids.sar].sort());
      expect(received.metadata.total).toBe(4);
      expect(idsOf(await list(t.otherProvider, '?role=provider')).sort()).toEqual(idsOf(received).sort());
      expect(await list(t.otherProvider, '?role=sender')).toMatchObject({ data: [], metadata: { total: 0 } });
      expect((await list(t.otherSender, '?role=sender')).metadata.total).toBe(5);
      expect(await list(t.otherSender, '?role=provider')).toMatchObject({ data: [], metadata: { total: 0 } });
    });

    it('pages with offset and pageSize, saying whether there is more and how many in all', async () => {
      const all = idsOf(await list(t.otherSender));
      const first = await list(t.otherSender, '?pageSize=2');
      expect(first.metadata).toEqual({ offset: 0, pageSize: 2, hasNext: true, total: 5 });
      expect(idsOf(first)).toEqual(all.slice(0, 2));
      const second = await list(t.otherSender, '?pageSize=2&offset=2');
      expect(second.metadata).toEqual({ offset: 2, pageSize: 2, hasNext: true, total: 5 });
      expect(idsOf(second)).toEqual(all.slice(2, 4));
      const last = await list(t.otherSender, '?pageSize=2&offset=4');
      expect(last.metadata).toEqual({ offset: 4, pageSize: 2, hasNext: false, total: 5 });
      expect(idsOf(last)).toEqual(all.slice(4));
      const beyond = await list(t.otherSender, '?offset=10');
      expect(beyond).toEqual({ data: [], metadata: { offset: 10, pageSize: 10, hasNext: false, total: 5 } });
      const exact = await list(t.otherSender, '?pageSize=5');
      expect(exact.metadata.hasNext).toBe(false);
      expect(exact.data).toHaveLength(5);
    });

    it('never lists another institution’s referrals', async () => {
      const page = await list(t.sender, '?pageSize=1000');
      for (const id of Object.values(ids)) expect(idsOf(page)).not.toContain(id);
    });

    it('POST search finds by patientUin in the body, with the same filters and page', async () => {
      const search = (who: TestParty, body: Record<string, unknown>) =>
        api(who, {
          method: 'POST',
          url: `${listUrl(who)}/search`,
          payload: { requesterIdentifier: REQUESTER, ...body },
        });
      const found = okPage(await search(t.otherSender, { patientUin: SEARCH_UIN }));
      found.data.forEach(expectSummaryShape);
      expect(found).toMatchObject({ metadata: { offset: 0, pageSize: 10, hasNext: false, total: 1 } });
      expect(idsOf(found)).toEqual([ids.sar]);
      expect(found.data[0]!.patient.uin).toBe(SEARCH_UIN);
      const filtered = okPage(
        await search(t.otherSender, { patientUin: PATIENT.patientUin, status: ['draft', 'rejected'] }),
      );
      expect(idsOf(filtered).sort()).toEqual([ids.draft, ids.rejected].sort());
      const paged = okPage(
        await search(t.otherSender, { patientUin: PATIENT.patientUin, pageSize: 1, sort: 'createdAt' }),
      );
      expect(paged.metadata).toEqual({ offset: 0, pageSize: 1, hasNext: true, total: 4 });
      expect(idsOf(paged)).toEqual([ids.rejected]);
      expect(idsOf(okPage(await search(t.otherProvider, { patientUin: SEARCH_UIN })))).toEqual([ids.sar]);
      expect(okPage(await search(t.sender, { patientUin: SEARCH_UIN })).data).toEqual([]);
    });
  });

  describe('GET /referrals/{id}', () => {
    it('returns the full Referral with its ETag, and no ehrForm unless asked', async () => {
      const submitted = await referralIn(t, 'pending-acceptance');
      const referral = await getReferral(t.sender, submitted.id);
      expect(referral).toMatchObject({ id: submitted.id, version: submitted.version });
      expect(referral).not.toHaveProperty('ehrForm');
      expect(referral).not.toHaveProperty('ehrFormType');
      const asProvider = await getReferral(t.provider, submitted.id);
      expect(asProvider.id).toBe(submitted.id);
    });

    it('adds ehrForm and ehrFormType for additionalField=ehrForm, repeated or comma-separated', async () => {
      const { id, version } = await referralIn(t, 'pending-acceptance');
      const forms: string[] = [];
      for (const additionalField of [
        ['ehrForm'],
        ['ehrForm', 'ehrForm'],
        ['ehrForm,ehrForm'],
        [' ehrForm ,'],
      ]) {
        const res = await api(t.sender, {
          method: 'GET',
          url: ref(id),
          query: query(t.sender, { additionalField }),
        });
        const body = okReferral(res, 200, { ehrForm: true });
        expect(body.version).toBe(version);
        expect(body.ehrForm).toMatch(/^<!doctype html>/i);
        expect(body.ehrFormType).toBe('Specialist Referral|Patient Summary');
        forms.push(body.ehrForm!);
      }
      // The same version gives the same bytes.
      expect(new Set(forms).size).toBe(1);
    });

    it('an unknown additionalField → 400', async () => {
      const { id } = await createDraft(t);
      for (const additionalField of [['patientSummary'], ['ehrForm,patientSummary'], ['ehrForm', 'other']]) {
        const res = await api(t.sender, {
          method: 'GET',
          url: ref(id),
          query: query(t.sender, { additionalField }),
        });
        expect(expectProblem(res, 400, 'validation_failed').errors).toEqual([
          { path: 'query.additionalField', message: 'must be one of: ehrForm' },
        ]);
      }
    });

    it('is 404 for an institution that is not on the referral, and for the provider of a draft', async () => {
      const { id } = await createDraft(t);
      for (const who of [t.otherSender, t.provider, t.otherProvider]) {
        const res = await api(who, { method: 'GET', url: ref(id), query: query(who) });
        expect(expectProblem(res, 404, 'referral_not_found').detail).toContain(id);
      }
    });
  });

  describe('POST /referrals', () => {
    it('creates a draft: 201, Location, ETag "1", the full Referral', async () => {
      const res = await post(t.sender, '/api/v1/referrals', {
        requesterIdentifier: REQUESTER,
        offeringId: 'cgh-gastro',
        ...PATIENT,
        referrerId: 'M12345A',
        referrerIdType: 'mcr',
        referrerName: 'Dr Tan',
        referrerEmail: 'dr.tan@example.org',
        referrerContactNumber: '61234567',
        clinicalInfo: 'Epigastric pain for 3 weeks.',
        isUrgent: true,
      });
      const body = okReferral(res, 201);
      expect(res.headers.location).toBe(`/api/v1/referrals/${body.id}`);
      expect(res.headers.etag).toBe('W/"1"');
      expect(body).toMatchObject({
        version: 1,
        status: 'draft',
        coreStatus: 'draft',
        isCancellable: false,
        senderSystem: 'HAS',
        sender: { idType: 'hci', id: 'S1234A', name: SENDER_NAME },
        offering: {
          id: 'cgh-gastro',
          name: 'Gastroenterology Specialist Clinic',
          category: 'soc',
          description: 'Please read the referral guidelines at https://example.org/guide/gastro first.',
          specialty: 'Gastroenterology',
          ehrCode: 'GASTRO-SOC',
          institution: { idType: 'hci', id: 'S9001Z', name: PROVIDER_NAME },
          system: 'Epic',
        },
        patient: {
          uin: PATIENT.patientUin,
          name: PATIENT.patientName,
          dob: PATIENT.dob,
          gender: PATIENT.patientGender,
          nationality: PATIENT.nationality,
          phoneNumber: PATIENT.patientPhoneNumber,
          residentialStatus: PATIENT.residentialStatus,
        },
        referrer: {
          id: 'M12345A',
          idType: 'mcr',
          name: 'Dr Tan',
          email: 'dr.tan@example.org',
          contactNumber: '61234567',
        },
        clinicalInfo: 'Epigastric pain for 3 weeks.',
        isUrgent: true,
        appointments: [],
        notes: [],
        ehrForwarding: { state: 'not-sent', attempts: 0 },
      });
      expect(body.createdAt).toBe(body.updatedAt);
      expect(body.links.map(({ type, label }) => ({ type, label }))).toEqual(
        contractLinks('draft', 'sender'),
      );
      for (const link of body.links) expect(link.url).toMatch(LINK_URL);
      expect(body.timelineEvents).toEqual([
        {
          id: expect.any(String) as unknown,
          type: 'referral.created',
          system: 'HAS',
          description: `${SENDER_NAME} created the referral as a draft.`,
          producedAt: body.createdAt,
        },
      ]);
    });

    it('creates an empty draft; without a requesterIdentifier there are no links to mint', async () => {
      const body = okReferral(await post(t.sender, '/api/v1/referrals'), 201);
      expect(body).toMatchObject({
        offering: null,
        patient: { uin: null, name: null, dob: null },
        referrer: { id: null, name: null },
        clinicalInfo: null,
        isUrgent: false,
        links: [],
      });
    });
  });

  describe('PATCH /referrals/{id}', () => {
    it('updates the draft, increments version and ETag, and says what changed', async () => {
      const draft = await createDraft(t, { referrerName: 'Dr Tan' });
      const res = await api(t.sender, {
        method: 'PATCH',
        url: ref(draft.id),
        payload: {
          ...t.sender.institution,
          clinicalInfo: 'Now vomiting.',
          isUrgent: true,
          referrerName: null,
        },
      });
      const body = okReferral(res);
      expect(body).toMatchObject({
        version: draft.version + 1,
        status: 'draft',
        clinicalInfo: 'Now vomiting.',
        isUrgent: true,
        referrer: { name: null },
        patient: { name: PATIENT.patientName },
      });
      expect(lastEvent(body)).toMatchObject({
        type: 'referral.updated',
        system: 'HAS',
        description: `${SENDER_NAME} updated the referral (Referring clinician’s name, Clinical information, Urgency).`,
      });
    });

    it('honours If-Match: a stale version → 412, the current one succeeds', async () => {
      const draft = await createDraft(t);
      const patch = (ifMatch: string) =>
        api(t.sender, {
          method: 'PATCH',
          url: ref(draft.id),
          headers: { 'if-match': ifMatch },
          payload: { ...t.sender.institution, clinicalInfo: 'x' },
        });
      const stale = expectProblem(await patch(`"${draft.version + 5}"`), 412, 'version_mismatch');
      expect(stale.currentVersion).toBe(draft.version);
      expect(okReferral(await patch(`"${draft.version}"`)).version).toBe(draft.version + 1);
    });

    it('changes the offering (and so the provider) only while the referral is a draft', async () => {
      const draft = await createDraft(t);
      const moved = okReferral(
        await api(t.sender, {
          method: 'PATCH',
          url: ref(draft.id),
          payload: { ...t.sender.institution, offeringId: 'erh-cardio' },
        }),
      );
      expect(moved.offering).toMatchObject({ id: 'erh-cardio', institution: { id: 'S9002Y' } });

      const waiting = await referralIn(t, 'sender-action-required');
      const change = (offeringId: string) =>
        api(t.sender, {
          method: 'PATCH',
          url: ref(waiting.id),
          payload: { ...t.sender.institution, offeringId, clinicalInfo: 'ECG attached.' },
        });
      const refused = expectProblem(await change('erh-cardio'), 409, 'invalid_transition');
      expect(refused.currentStatus).toBe('sender-action-required');
      // The provider that asked for action keeps the referral; the same offering may be resent.
      expect(okReferral(await change('cgh-gastro')).offering).toMatchObject({ id: 'cgh-gastro' });
    });
  });

  describe('DELETE /referrals/{id}', () => {
    it('returns the ReferralSummary as it was, then the referral is gone', async () => {
      const draft = await createDraft(t);
      const before = await getReferral(t.sender, draft.id);
      const res = await api(t.sender, {
        method: 'DELETE',
        url: ref(draft.id),
        query: { ...t.sender.institution },
      });
      const summary = expectSummaryShape(ok(res));
      const referralOnly = ['appointments', 'links', 'notes', 'timelineEvents', 'ehrForwarding'];
      const asItWas = Object.fromEntries(
        Object.entries(before).filter(([key]) => !referralOnly.includes(key)),
      );
      expect(summary).toEqual(asItWas);

      const gone = await api(t.sender, { method: 'GET', url: ref(draft.id), query: query(t.sender) });
      expectProblem(gone, 404, 'referral_not_found');
      const again = await api(t.sender, {
        method: 'DELETE',
        url: ref(draft.id),
        query: { ...t.sender.institution },
      });
      expectProblem(again, 404, 'referral_not_found');
      const page = okPage(
        await api(t.sender, {
          method: 'GET',
          url: '/api/v1/institutions/hci/S1234A/referrals?pageSize=1000',
        }),
      );
      expect(page.data.map((r) => r.id)).not.toContain(draft.id);
    });
  });

  describe('POST /referrals/{id}/submit', () => {
    it('submits: pending-acceptance, submittedAt set, EHR forwarding queued, reminders scheduled', async () => {
      const draft = await createDraft(t);
      const res = await post(t.sender, `${ref(draft.id)}/submit`, { requesterIdentifier: REQUESTER });
      const body = okReferral(res);
      expect(body).toMatchObject({
        version: draft.version + 1,
        status: 'pending-acceptance',
        coreStatus: 'pending',
        isCancellable: true,
        ehrForwarding: { state: 'queued', attempts: 0 },
      });
      expect(body.submittedAt).toBe(body.updatedAt);
      expect(body.links.map((l) => l.type)).toEqual(['print', 'view']);
      expect(body.timelineEvents.map((e) => [e.type, e.system, e.description])).toEqual([
        ['referral.created', 'HAS', `${SENDER_NAME} created the referral as a draft.`],
        [
          'referral.pending-acceptance',
          'HAS',
          `${SENDER_NAME} submitted the referral to ${PROVIDER_NAME}; it is awaiting acceptance.`,
        ],
      ]);
      const outbox = await t.ctx.db
        .selectFrom('outbox')
        .select(['topic', 'version'])
        .where('referral_id', '=', draft.id)
        .orderBy('topic')
        .execute();
      expect(outbox).toEqual([
        { topic: 'ehr-forward', version: body.version },
        { topic: 'reminders', version: body.version },
      ]);
    });
  });

  describe('POST /referrals/{id}/cancel', () => {
    it('the sender cancels: ReferralSummary, cancelled, the note quoted in the timeline', async () => {
      const submitted = await referralIn(t, 'pending-acceptance');
      const res = await post(t.sender, `${ref(submitted.id)}/cancel`, {
        cancelNote: 'Patient recovered',
        cancelledByName: 'Dr Tan',
      });
      const summary = okSummary(res);
      expect(summary).toMatchObject({
        version: submitted.version + 1,
        status: 'cancelled',
        coreStatus: 'cancelled',
        isCancellable: false,
      });
      const after = await getReferral(t.sender, submitted.id);
      expect(lastEvent(after)).toMatchObject({
        type: 'referral.cancelled',
        system: 'HAS',
        description: `Dr Tan (${SENDER_NAME}) cancelled the referral: Patient recovered`,
      });
      expect(after.ehrForwarding.state).toBe('queued');
    });

    it('the provider cancels a scheduled referral: scheduled appointments become cancelled', async () => {
      const scheduled = await referralIn(t, 'scheduled');
      const withTwo = okReferral(
        await put(t.provider, `${ref(scheduled.id)}/appointments/appt-2`, {
          status: 'actualized',
          startAt: '2029-12-01T08:00:00.000Z',
          location: 'Clinic 1A',
        }),
      );
      expect(withTwo.appointments.map((a) => [a.id, a.status])).toEqual([
        ['appt-2', 'actualized'],
        ['appt-1', 'scheduled'],
      ]);
      const res = await post(t.provider, `${ref(scheduled.id)}/cancel`, { cancelNote: 'Clinic closed' });
      expect(okSummary(res)).toMatchObject({
        status: 'cancelled',
        version: withTwo.version + 1,
      });
      const after = await getReferral(t.provider, scheduled.id);
      expect(after.appointments.map((a) => [a.id, a.status])).toEqual([
        ['appt-2', 'actualized'],
        ['appt-1', 'cancelled'],
      ]);
      expect(after.timelineEvents.slice(-2).map((e) => [e.type, e.system, e.description])).toEqual([
        ['referral.cancelled', 'Epic', `${PROVIDER_NAME} cancelled the referral: Clinic closed`],
        [
          'appt.cancelled',
          'Epic',
          'The appointment on Tue 15 Jan 2030, 09:30 SGT at Clinic 3B, Level 3 was cancelled.',
        ],
      ]);
    });
  });

  describe('POST /referrals/{id}/back-to-draft', () => {
    it.each(['pending-acceptance', 'sender-action-required'] as const)(
      'returns a %s referral to draft, without submittedAt',
      async (status) => {
        const before = await referralIn(t, status);
        const res = await post(t.sender, `${ref(before.id)}/back-to-draft`);
        const summary = okSummary(res);
        expect(summary).toMatchObject({ version: before.version + 1, status: 'draft', coreStatus: 'draft' });
        expect(summary).not.toHaveProperty('submittedAt');
        const after = await getReferral(t.sender, before.id);
        expect(lastEvent(after)).toMatchObject({
          type: 'referral.back-to-draft',
          system: 'HAS',
          description: `${SENDER_NAME} returned the referral to draft.`,
        });
        expect(after.links.map((l) => l.type)).toEqual(['edit', 'view']);
        // The provider no longer sees it.
        const res404 = await api(t.provider, {
          method: 'GET',
          url: ref(before.id),
          query: query(t.provider),
        });
        expectProblem(res404, 404, 'referral_not_found');
      },
    );
  });

  describe('POST /referrals/{id}/notes', () => {
    it('adds immutable plain-text notes from either side: 201 Note, in order, on the timeline', async () => {
      const submitted = await referralIn(t, 'pending-acceptance');
      const content = 'Family prefers <b>morning</b> slots & calls in Hokkien.\nThanks.';
      const first = ok(await post(t.sender, `${ref(submitted.id)}/notes`, { content }), 201) as NoteJson;
      expect(Object.keys(first).sort()).toEqual([
        'authorInstitution',
        'authorName',
        'content',
        'createdAt',
        'id',
      ]);
      expect(first).toMatchObject({
        content,
        authorName: null,
        authorInstitution: { idType: 'hci', id: 'S1234A', name: SENDER_NAME },
      });
      expect(first.createdAt).toMatch(ISO_MS);
      const second = ok(
        await post(t.provider, `${ref(submitted.id)}/notes`, { content: 'Noted.', authorName: 'Dr Lim' }),
        201,
      ) as NoteJson;
      expect(second).toMatchObject({
        authorName: 'Dr Lim',
        authorInstitution: { idType: 'hci', id: 'S9001Z', name: PROVIDER_NAME },
      });
      const after = await getReferral(t.sender, submitted.id);
      expect(after.notes).toEqual([first, second]);
      expect(after.version).toBe(submitted.version + 2);
      expect(after.timelineEvents.slice(-2).map((e) => [e.type, e.system, e.description])).toEqual([
        ['note.created', 'HAS', `${SENDER_NAME} added a note.`],
        ['note.created', 'Epic', `Dr Lim (${PROVIDER_NAME}) added a note.`],
      ]);
    });
  });

  describe('POST /links/upsert', () => {
    const upsert = (body: Record<string, unknown>) =>
      api(t.sender, {
        method: 'POST',
        url: '/api/v1/links/upsert',
        payload: { requesterIdentifier: REQUESTER, ...t.sender.institution, ...body },
      });

    interface UpsertJson {
      referralId: string;
      url: string;
      type: string;
      expiresAt: string;
    }

    async function tokenRow(url: string) {
      const token = url.slice(url.lastIndexOf('/') + 1);
      return t.ctx.db
        .selectFrom('link_tokens')
        .select(['referral_id', 'action', 'institution_id', 'requester_identifier', 'used_at'])
        .where('token_hash', '=', hashLinkToken(token))
        .executeTakeFirstOrThrow();
    }

    it('without referralId creates a draft from the prefill and returns a one-time URL without patient data', async () => {
      const started = Date.now();
      const body = ok(await upsert({ offeringId: 'cgh-gastro', ...CANARY, nationality: 'SG' })) as UpsertJson;
      const finished = Date.now();
      expect(Object.keys(body).sort()).toEqual(['expiresAt', 'referralId', 'type', 'url']);
      expect(body.type).toBe('upsert');
      expect(body.url).toMatch(LINK_URL);
      for (const marker of CANARY_MARKERS) expect(body.url).not.toContain(marker);
      expect(body.expiresAt).toMatch(ISO_MS);
      const expires = Date.parse(body.expiresAt);
      expect(expires).toBeGreaterThanOrEqual(started + 900_000);
      expect(expires).toBeLessThanOrEqual(finished + 900_000);
      expect(await tokenRow(body.url)).toEqual({
        referral_id: body.referralId,
        action: 'edit',
        institution_id: 'S1234A',
        requester_identifier: REQUESTER,
        used_at: null,
      });

      const draft = await getReferral(t.sender, body.referralId);
      expect(draft).toMatchObject({
        version: 1,
        status: 'draft',
        senderSystem: 'HAS',
        offering: { id: 'cgh-gastro' },
        patient: { uin: CANARY.patientUin, name: CANARY.patientName, dob: CANARY.dob, nationality: 'SG' },
        clinicalInfo: CANARY.clinicalInfo,
      });
      expect(draft.timelineEvents.map((e) => [e.type, e.system])).toEqual([['referral.created', 'HAS']]);
    });

    it('with the referralId of a draft applies the prefill and returns a fresh link', async () => {
      const first = ok(await upsert({ patientName: 'Lim Bee Hoon' })) as UpsertJson;
      const second = ok(
        await upsert({ referralId: first.referralId, clinicalInfo: 'Fever for 2 days.', isUrgent: true }),
      ) as UpsertJson;
      expect(second.referralId).toBe(first.referralId);
      expect(second.url).toMatch(LINK_URL);
      expect(second.url).not.toBe(first.url);
      const after = await getReferral(t.sender, first.referralId);
      expect(after).toMatchObject({
        version: 2,
        patient: { name: 'Lim Bee Hoon' },
        clinicalInfo: 'Fever for 2 days.',
        isUrgent: true,
      });
      expect(lastEvent(after).type).toBe('referral.updated');
    });

    it('with the referralId of a referral that awaits the sender returns a respond link', async () => {
      const sar = await referralIn(t, 'sender-action-required');
      const body = ok(await upsert({ referralId: sar.id, clinicalInfo: 'ECG attached.' })) as UpsertJson;
      expect(body.referralId).toBe(sar.id);
      expect((await tokenRow(body.url)).action).toBe('respond');
      expect(await getReferral(t.sender, sar.id)).toMatchObject({
        status: 'sender-action-required',
        clinicalInfo: 'ECG attached.',
        version: sar.version + 1,
      });
    });

    it('with the referralId of a submitted referral → 409 invalid_transition', async () => {
      const submitted = await referralIn(t, 'pending-acceptance');
      const problem = expectProblem(await upsert({ referralId: submitted.id }), 409, 'invalid_transition');
      expect(problem.currentStatus).toBe('pending-acceptance');
    });
  });

  describe('provider operations', () => {
    it('accept → accepted (coreStatus pending), named after the person when given', async () => {
      const submitted = await referralIn(t, 'pending-acceptance');
      const res = await post(t.provider, `${ref(submitted.id)}/accept`, {
        requesterIdentifier: 'dr.lim@cgh.example.org',
        acceptedByName: 'Dr Lim',
      });
      const body = okReferral(res);
      expect(body).toMatchObject({
        version: submitted.version + 1,
        status: 'accepted',
        coreStatus: 'pending',
        isCancellable: true,
      });
      expect(body.links.map(({ type, label }) => ({ type, label }))).toEqual(
        contractLinks('accepted', 'provider'),
      );
      expect(lastEvent(body)).toMatchObject({
        type: 'referral.accepted',
        system: 'Epic',
        description: `Dr Lim (${PROVIDER_NAME}) accepted the referral.`,
      });
    });

    it('reject → rejected, with the reason in the timeline', async () => {
      const accepted = await referralIn(t, 'accepted');
      const body = okReferral(
        await post(t.provider, `${ref(accepted.id)}/reject`, { reason: 'Out of scope' }),
      );
      expect(body).toMatchObject({ status: 'rejected', coreStatus: 'rejected', isCancellable: false });
      expect(lastEvent(body)).toMatchObject({
        type: 'referral.rejected',
        system: 'Epic',
        description: `${PROVIDER_NAME} rejected the referral: Out of scope`,
      });
    });

    it('request-action → sender-action-required; the sender gets a respond link', async () => {
      const submitted = await referralIn(t, 'pending-acceptance');
      const body = okReferral(
        await post(t.provider, `${ref(submitted.id)}/request-action`, { reason: 'Attach the ECG' }),
      );
      expect(body).toMatchObject({
        status: 'sender-action-required',
        coreStatus: 'sender-action-required',
        isCancellable: true,
      });
      expect(lastEvent(body)).toMatchObject({
        type: 'referral.sender-action-required',
        system: 'Epic',
        description: `${PROVIDER_NAME} asked the sender to act on the referral: Attach the ECG`,
      });
      const asSender = await getReferral(t.sender, submitted.id);
      expect(asSender.links.map(({ type, label }) => ({ type, label }))).toEqual(
        contractLinks('sender-action-required', 'sender'),
      );
    });
  });

  describe('PUT /referrals/{id}/appointments/{appointmentId}', () => {
    it('creates, then updates the same appointment; the referral status follows', async () => {
      const accepted = await referralIn(t, 'accepted');
      const url = `${ref(accepted.id)}/appointments/EPIC.appt_77-1`;
      let version = accepted.version;
      const steps = [
        { status: 'scheduled', referral: 'scheduled', core: 'confirmed', event: 'appt.scheduled' },
        { status: 'actualized', referral: 'scheduled', core: 'confirmed', event: 'appt.actualized' },
        { status: 'no-show', referral: 'scheduled', core: 'confirmed', event: 'appt.no-show' },
        { status: 'cancelled', referral: 'accepted', core: 'pending', event: 'appt.cancelled' },
        { status: 'scheduled', referral: 'scheduled', core: 'confirmed', event: 'appt.scheduled' },
      ];
      const descriptions: string[] = [];
      for (const step of steps) {
        const res = await put(t.provider, url, {
          status: step.status,
          startAt: '2030-03-04T05:06:00.000Z',
          location: 'Clinic 2C',
        });
        const body = okReferral(res);
        version += 1;
        expect(body, step.status).toMatchObject({ version, status: step.referral, coreStatus: step.core });
        expect(body.appointments).toEqual([
          {
            id: 'EPIC.appt_77-1',
            status: step.status,
            startAt: '2030-03-04T05:06:00.000Z',
            location: 'Clinic 2C',
            updatedAt: body.updatedAt,
          },
        ]);
        expect(lastEvent(body)).toMatchObject({ type: step.event, system: 'Epic' });
        descriptions.push(lastEvent(body).description);
      }
      expect(descriptions.slice(0, 4)).toEqual([
        `${PROVIDER_NAME} scheduled an appointment for Mon 4 Mar 2030, 13:06 SGT at Clinic 2C.`,
        'The appointment on Mon 4 Mar 2030, 13:06 SGT at Clinic 2C took place.',
        'The patient missed the appointment on Mon 4 Mar 2030, 13:06 SGT at Clinic 2C.',
        'The appointment on Mon 4 Mar 2030, 13:06 SGT at Clinic 2C was cancelled.',
      ]);

      // The same PUT again changes nothing.
      const repeat = okReferral(
        await put(t.provider, url, {
          status: 'scheduled',
          startAt: '2030-03-04T05:06:00.000Z',
          location: 'Clinic 2C',
        }),
      );
      expect(repeat.version).toBe(version);
      // Moving it keeps one appointment.
      const moved = okReferral(
        await put(t.provider, url, {
          status: 'scheduled',
          startAt: '2030-03-05T01:00:00.000Z',
          location: 'Clinic 2D',
        }),
      );
      expect(moved.version).toBe(version + 1);
      expect(moved.appointments.map((a) => [a.id, a.startAt, a.location])).toEqual([
        ['EPIC.appt_77-1', '2030-03-05T01:00:00.000Z', 'Clinic 2D'],
      ]);
      // The sender sees the appointment too.
      expect((await getReferral(t.sender, accepted.id)).appointments).toEqual(moved.appointments);
    });

    it('keeps the referral scheduled while any appointment is not cancelled', async () => {
      const accepted = await referralIn(t, 'accepted');
      const at = (id: string, status: string) =>
        put(t.provider, `${ref(accepted.id)}/appointments/${id}`, {
          status,
          startAt: '2030-05-01T01:00:00.000Z',
          location: 'Clinic 1',
        });
      okReferral(await at('a', 'scheduled'));
      okReferral(await at('b', 'scheduled'));
      expect(okReferral(await at('a', 'cancelled')).status).toBe('scheduled');
      expect(okReferral(await at('b', 'cancelled')).status).toBe('accepted');
    });
  });

  describe('status, coreStatus, isCancellable, submittedAt and links per status and party', () => {
    it.each(LIVE_STATUSES)('%s', async (status) => {
      const { id } = await referralIn(t, status);
      const asSender = await getReferral(t.sender, id);
      expect(asSender.status).toBe(status);
      expect(asSender.coreStatus).toBe(CONTRACT_CORE_STATUS[status]);
      expect(asSender.isCancellable).toBe(CONTRACT_CANCELLABLE.includes(status));
      expect('submittedAt' in asSender).toBe(status !== 'draft');
      expect(asSender.ehrForwarding.state).toBe(status === 'draft' ? 'not-sent' : 'queued');
      expect(asSender.links.map(({ type, label }) => ({ type, label }))).toEqual(
        contractLinks(status, 'sender'),
      );
      for (const link of asSender.links) expect(link.url).toMatch(LINK_URL);
      expect(new Set(asSender.links.map((l) => l.url)).size).toBe(asSender.links.length);

      const res = await api(t.provider, { method: 'GET', url: ref(id), query: query(t.provider) });
      if (status === 'draft') {
        expectProblem(res, 404, 'referral_not_found');
        return;
      }
      const asProvider = okReferral(res);
      const { links: senderLinks } = asSender;
      const { links: providerLinks } = asProvider;
      // The same referral, with buttons and actions for each party
      // (actions: test/api/routes/referrals-actions.int.test.ts).
      const perCaller = new Set([
        'links',
        'allowedActions',
        'blockedActions',
        'isCancellable',
        'actionRequired',
      ]);
      const shared = (view: object) => Object.entries(view).filter(([field]) => !perCaller.has(field));
      expect(shared(asProvider)).toEqual(shared(asSender));
      // Only the sender is asked to act, with the reason its worklist shows.
      expect(asSender.actionRequired?.reason).toBe(SENDER_ACTION_REASONS[status]);
      expect(asProvider).not.toHaveProperty('actionRequired');
      expect(senderLinks.length).toBeGreaterThan(0);
      expect(providerLinks.map(({ type, label }) => ({ type, label }))).toEqual(
        contractLinks(status, 'provider'),
      );
      // The provider may cancel from every status the sender may, and from scheduled.
      expect(asProvider.isCancellable).toBe(CONTRACT_CANCELLABLE.includes(status) || status === 'scheduled');
    });
  });

  describe('headers', () => {
    it('echoes a valid X-Request-Id, also into problem documents', async () => {
      const ok200 = await api(t.sender, {
        method: 'GET',
        url: '/api/v1/institutions/hci/S1234A/referrals',
        headers: { 'x-request-id': 'client-42.a:b_c' },
      });
      expect(ok200.headers['x-request-id']).toBe('client-42.a:b_c');
      const missing = await api(t.sender, {
        method: 'GET',
        url: ref(uuidv7()),
        query: query(t.sender),
        headers: { 'x-request-id': 'client-43' },
      });
      expect(expectProblem(missing, 404, 'referral_not_found').requestId).toBe('client-43');
    });

    it('replaces an X-Request-Id that is not valid with its own', async () => {
      for (const bad of ['has spaces', 'x'.repeat(129), 'semi;colon']) {
        const res = await api(t.sender, {
          method: 'GET',
          url: '/api/v1/institutions/hci/S1234A/referrals',
          headers: { 'x-request-id': bad },
        });
        expect(res.headers['x-request-id']).not.toBe(bad);
        expect(res.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
      }
    });

    it('sends API-Version, X-Request-Id and Cache-Control on errors too, even without a key', async () => {
      const res = await api(null, { method: 'GET', url: '/api/v1/institutions/hci/S1234A/referrals' });
      expectProblem(res, 401, 'unauthorized');
      expect(res.headers['api-version']).toBe(API_VERSION);
      expect(res.headers['www-authenticate']).toBe('ApiKey, Bearer');
    });
  });

  describe('version', () => {
    it('increments with every change, and ETag follows it', async () => {
      const draft = await createDraft(t);
      const id = draft.id;
      const versions = [draft.version];
      const track = async (res: LightMyRequestResponse, status = 200) => {
        const body = ok(res, status) as { version?: number };
        if (body.version !== undefined) expect(res.headers.etag).toBe(`W/"${body.version}"`);
        versions.push((await getReferral(t.sender, id)).version);
      };
      await track(
        await api(t.sender, {
          method: 'PATCH',
          url: ref(id),
          payload: { ...t.sender.institution, isUrgent: true },
        }),
      );
      await track(await post(t.sender, `${ref(id)}/submit`));
      await track(await post(t.sender, `${ref(id)}/notes`, { content: 'n' }), 201);
      await track(await post(t.provider, `${ref(id)}/accept`));
      await track(
        await put(t.provider, `${ref(id)}/appointments/a1`, {
          status: 'scheduled',
          startAt: '2030-01-01T00:00:00.000Z',
          location: 'L1',
        }),
      );
      await track(await post(t.provider, `${ref(id)}/cancel`, { cancelNote: 'Closed' }));
      expect(versions).toEqual([1, 2, 3, 4, 5, 6, 7]);
    });
  });

  describe('limits', () => {
    it('a referral holds at most 200 notes: the 201st → 409 limit_exceeded', async () => {
      const draft = await createDraft(t);
      const now = new Date();
      await t.ctx.db
        .insertInto('notes')
        .values(
          Array.from({ length: 199 }, (_, i) => ({
            id: uuidv7(),
            referral_id: draft.id,
            content: `Note ${i + 1}`,
            author_name: null,
            author_institution_id_type: 'hci',
            author_institution_id: 'S1234A',
            requester_identifier: null,
            system: 'HAS',
            created_at: now,
          })),
        )
        .execute();
      ok(await post(t.sender, `${ref(draft.id)}/notes`, { content: 'The 200th' }), 201);
      const before = await getReferral(t.sender, draft.id);
      expect(before.notes).toHaveLength(200);
      const problem = expectProblem(
        await post(t.sender, `${ref(draft.id)}/notes`, { content: 'The 201st' }),
        409,
        'limit_exceeded',
      );
      expect(problem.detail).toContain('200');
      const after = await getReferral(t.sender, draft.id);
      expect(after.notes).toHaveLength(200);
      expect(after.version).toBe(before.version);
    });

    it('a referral holds at most 50 appointments: the 51st → 409, updating one still works', async () => {
      const accepted = await referralIn(t, 'accepted');
      const now = new Date();
      await t.ctx.db
        .insertInto('appointments')
        .values(
          Array.from({ length: 49 }, (_, i) => ({
            referral_id: accepted.id,
            id: `pre-${i}`,
            status: 'cancelled',
            start_at: new Date(Date.UTC(2030, 0, 1 + i)),
            location: 'Clinic',
            created_at: now,
            updated_at: now,
          })),
        )
        .execute();
      const body = { status: 'scheduled', startAt: '2031-01-01T00:00:00.000Z', location: 'Clinic 9' };
      const fiftieth = okReferral(await put(t.provider, `${ref(accepted.id)}/appointments/appt-50`, body));
      expect(fiftieth.appointments).toHaveLength(50);
      expect(fiftieth.status).toBe('scheduled');
      const problem = expectProblem(
        await put(t.provider, `${ref(accepted.id)}/appointments/appt-51`, body),
        409,
        'limit_exceeded',
      );
      expect(problem.detail).toContain('50');
      const unchanged = await getReferral(t.provider, accepted.id);
      expect(unchanged.version).toBe(fiftieth.version);
      expect(unchanged.appointments.map((a) => a.id)).not.toContain('appt-51');
      const updated = okReferral(
        await put(t.provider, `${ref(accepted.id)}/appointments/appt-50`, { ...body, status: 'actualized' }),
      );
      expect(updated.appointments).toHaveLength(50);
    });
  });

  describe('an offering that is not cancellable (cgh-ae)', () => {
    it('the sender may not cancel (409, isCancellable false); the provider may', async () => {
      const submitted = await referralIn(t, 'pending-acceptance', { offeringId: 'cgh-ae' });
      const before = await getReferral(t.sender, submitted.id);
      expect(before).toMatchObject({ offering: { id: 'cgh-ae' }, isCancellable: false });

      const refused = expectProblem(
        await post(t.sender, `${ref(submitted.id)}/cancel`, { cancelNote: 'Changed my mind' }),
        409,
        'invalid_transition',
      );
      expect(refused.currentStatus).toBe('pending-acceptance');
      expect(refused.detail).toMatch(/isCancellable/);
      expect(await getReferral(t.sender, submitted.id)).toMatchObject({
        status: 'pending-acceptance',
        version: before.version,
      });

      const res = await post(t.provider, `${ref(submitted.id)}/cancel`, {
        cancelNote: 'Patient did not attend',
      });
      expect(okSummary(res)).toMatchObject({
        status: 'cancelled',
        version: before.version + 1,
      });
    });
  });
});
