// A clinic system and a hospital system work a referral through its whole life with @refhub/client
// alone, against a real listening refhub: typed answers, no casts. Link upsert, create, update,
// submit, read with the EHR form, list page by page; the provider accepts and asks the sender to act;
// the sender updates and resubmits; appointments, notes, and a cancel guarded by the ETag of the last
// read. On another referral: back to draft and delete. A write whose answer is lost is retried with
// the same Idempotency-Key and replayed; a stale If-Match is refused; errors arrive as typed problems.
// On a third: the provider's outcome with its letter, and the sender's acknowledgement.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createRefhubClient,
  RefhubProblemError,
  type AttemptReport,
  type InstitutionClient,
  type ReferralFields,
  type ReferralSummary,
} from '../../../clients/typescript/src/index.ts';
import { APP_ENGINES } from '../../support/engines.ts';
import { startFaultyProxy } from '../../support/faulty-proxy.ts';
import { createTestApp, listeningUrl, type TestApp, type TestParty } from '../../support/test-app.ts';

const PATIENT: ReferralFields = {
  patientName: 'Tan Ah Kow',
  patientUin: 'S1234567D',
  dob: '1960-02-29',
  patientGender: 'Male',
  nationality: 'SG',
  patientPhoneNumber: '91234567',
  residentialStatus: 'SC',
};

/** The problem a call failed with; fails the test if it did not fail with one. */
async function problemOf(call: Promise<unknown>): Promise<RefhubProblemError> {
  try {
    await call;
  } catch (error) {
    if (error instanceof RefhubProblemError) return error;
    throw error;
  }
  throw new Error('the call succeeded, but a problem was expected');
}

describe.each(APP_ENGINES)('@refhub/client against refhub on %s', (engine) => {
  let t: TestApp;
  let baseUrl: string;
  let clinic: InstitutionClient;
  let hospital: InstitutionClient;
  const actingAs = (party: TestParty, requesterIdentifier: string) =>
    createRefhubClient({ baseUrl, apiKey: party.key }).actingFor({
      ...party.institution,
      requesterIdentifier,
    });

  beforeAll(async () => {
    t = await createTestApp(engine);
    baseUrl = await listeningUrl(t);
    clinic = actingAs(t.sender, 'dr.lim@bukittimah.example');
    hospital = actingAs(t.provider, 'dr.wong@cgh.example');
  });
  afterAll(async () => {
    await t.close();
  });

  it('walks a referral through its whole life', async () => {
    // A link into the web form, with a draft prefilled behind it.
    const link = await clinic.upsertLink({
      offeringId: 'cgh-gastro',
      ...PATIENT,
      clinicalInfo: 'Dyspepsia.',
    });
    expect(link.type).toBe('upsert');
    expect(link.url).toMatch(/^http:\/\/refhub\.test\/l\/[A-Za-z0-9_-]{43}$/);
    expect(new Date(link.expiresAt).getTime()).toBeGreaterThan(Date.now());
    const linked = await clinic.referral(link.referralId).read();
    expect(linked.coreStatus).toBe('draft');

    // Create, update, submit.
    const created = await clinic.createReferral({ offeringId: 'cgh-gastro', ...PATIENT });
    expect(created.coreStatus).toBe('draft');
    expect(created.submittedAt).toBeUndefined();
    const referral = clinic.referral(created);
    expect(referral.etag).toBe(`W/"${created.version}"`);
    const updated = await referral.update({ clinicalInfo: 'Dyspepsia for 3 months.', isUrgent: true });
    expect(updated.version).toBe(created.version + 1);
    expect(referral.etag).toBe(`W/"${updated.version}"`);
    const submitted = await referral.submit();
    expect(submitted.coreStatus).toBe('pending');
    expect(submitted.submittedAt).toEqual(expect.any(String));

    // Read it with the EHR form, as a client does right before forwarding it.
    const withForm = await referral.read({ ehrForm: true });
    expect(withForm.ehrForm).toMatch(/^<!DOCTYPE html>/i);
    expect(withForm.ehrFormType).toBeTruthy();
    expect(withForm.timelineEvents.map((event) => event.type)).toContain('referral.pending-acceptance');

    // The provider accepts, then asks the sender to act.
    const received = hospital.referral(created.id);
    expect((await received.read()).coreStatus).toBe('pending');
    const accepted = await received.accept({ acceptedByName: 'Dr Wong' });
    expect(accepted.timelineEvents.at(-1)?.type).toBe('referral.accepted');
    const asked = await received.requestAction({ reason: 'Please attach the ECG.' });
    expect(asked.coreStatus).toBe('sender-action-required');

    // The sender sees it in its list of referrals that need it, updates and resubmits.
    const waiting: ReferralSummary[] = [];
    for await (const summary of clinic.referrals({ status: ['sender-action-required'] }))
      waiting.push(summary);
    expect(waiting.map((summary) => summary.id)).toEqual([created.id]);
    await referral.read();
    await referral.update({ clinicalInfo: 'Dyspepsia for 3 months. ECG attached.' });
    expect((await referral.submit()).coreStatus).toBe('pending');

    // The provider accepts again and books an appointment; both sides add notes.
    await received.read();
    await received.accept();
    const booked = await received.upsertAppointment('appt-1', {
      status: 'scheduled',
      startAt: '2030-01-15T01:30:00.000Z',
      location: 'Clinic 3B, Level 3',
    });
    expect(booked.coreStatus).toBe('confirmed');
    expect(booked.appointments).toEqual([expect.objectContaining({ id: 'appt-1', status: 'scheduled' })]);
    const note = await received.addNote({
      content: 'We will call the patient this week.',
      authorName: 'Dr Wong',
    });
    expect(note.authorInstitution.id).toBe(t.provider.institution.institutionId);
    expect(received.etag).toBeUndefined();
    // The sender's last ETag is from before the provider's changes: its note is refused until it reads.
    expect((await problemOf(referral.addNote({ content: 'The patient prefers mornings.' }))).status).toBe(
      412,
    );
    await referral.read();
    await referral.addNote({ content: 'The patient prefers mornings.' });

    // The provider cancels, guarded by the ETag of its last read.
    const current = await received.read();
    expect(received.etag).toBe(`W/"${current.version}"`);
    const cancelled = await received.cancel({ cancelNote: 'Patient recovered', cancelledByName: 'Dr Wong' });
    expect(cancelled.coreStatus).toBe('cancelled');
    expect(cancelled.version).toBe(current.version + 1);
    const final = await referral.read();
    expect(final.notes).toHaveLength(2);
    expect(final.appointments[0]?.status).toBe('cancelled');
    expect(final.timelineEvents.map((event) => event.description).join('\n')).toContain('Patient recovered');
  });

  it('closes the loop: the provider completes with its outcome and letter, the sender acknowledges it', async () => {
    const created = await clinic.createReferral({ offeringId: 'cgh-gastro', ...PATIENT });
    const referral = clinic.referral(created);
    await referral.submit();
    const received = hospital.referral(created.id);
    await received.read();
    await received.accept();

    // The provider picks an outcome from the catalog's list and attaches its letter first.
    const codes = await hospital.outcomeCodes();
    const followUp = codes.find((code) => code.code === 'seen-follow-up');
    expect(followUp).toEqual({
      code: 'seen-follow-up',
      display: 'Seen, follow-up arranged with the provider',
      summaryRequired: true,
    });
    const letter = await received.attach({
      content: new Blob(['Consultation letter: review in 3 months.'], { type: 'text/plain' }),
      fileName: 'letter.txt',
      mediaType: 'text/plain',
    });
    await received.read();
    const completed = await received.complete({
      outcomeCode: followUp!.code,
      summary: 'Gastroscopy normal. Review in clinic in 3 months.',
      attachmentIds: [letter.id],
      completedByName: 'Dr Wong',
    });
    expect(completed.coreStatus).toBe('completed');
    expect(completed.outcome).toMatchObject({
      code: 'seen-follow-up',
      display: followUp!.display,
      attachmentIds: [letter.id],
      completedByName: 'Dr Wong',
    });

    // The sender's worklist has it, with the reason, until it acknowledges the outcome.
    const worklist: ReferralSummary[] = [];
    for await (const summary of clinic.referrals({ status: ['sender-action-required'] }))
      worklist.push(summary);
    expect(worklist.find((summary) => summary.id === created.id)?.actionRequired?.reason).toBe(
      'outcome-to-acknowledge',
    );
    const read = await referral.read();
    expect(read.allowedActions).toContain('acknowledge-outcome');
    const acknowledged = await referral.acknowledgeOutcome({ acknowledgedByName: 'Dr Lim' });
    expect(acknowledged.coreStatus).toBe('completed');
    expect(acknowledged.outcome?.acknowledgedByName).toBe('Dr Lim');
    expect(acknowledged.outcome?.acknowledgedAt).toEqual(expect.any(String));
    expect(acknowledged.actionRequired).toBeUndefined();

    // Acknowledged once; a second time is a typed 409 naming the status.
    const again = await problemOf(referral.acknowledgeOutcome());
    expect(again.status).toBe(409);
    expect(again.problem.code).toBe('invalid_transition');
  });

  it('returns another referral to draft and deletes it', async () => {
    const created = await clinic.createReferral({ offeringId: 'cgh-gastro', ...PATIENT });
    const referral = clinic.referral(created);
    await referral.submit();
    const again = await referral.returnToDraft();
    expect(again.coreStatus).toBe('draft');
    expect(again.submittedAt).toBeUndefined();
    const deleted = await referral.delete();
    expect(deleted.id).toBe(created.id);
    const gone = await problemOf(referral.read());
    expect(gone.status).toBe(404);
    expect(gone.problem.code).toBe('referral_not_found');
  });

  it('pages through the list with offset, pageSize and hasNext, each referral once', async () => {
    const other = actingAs(t.otherSender, 'dr.ng@tampines.example');
    const mine = new Set<string>();
    for (let i = 0; i < 5; i++) mine.add((await other.createReferral({ offeringId: 'cgh-gastro' })).id);
    const pages = [];
    for await (const page of other.referralPages({ pageSize: 2 })) pages.push(page);
    expect(pages.map((page) => page.data.length)).toEqual([2, 2, 1]);
    expect(pages.map((page) => page.metadata.hasNext)).toEqual([true, true, false]);
    expect(pages.map((page) => page.metadata.offset)).toEqual([0, 2, 4]);
    const walked: ReferralSummary[] = [];
    for await (const summary of other.referrals({ pageSize: 2 })) walked.push(summary);
    expect(new Set(walked.map((summary) => summary.id))).toEqual(mine);
    expect(walked).toHaveLength(5);
    // Newest first, by creation.
    const created = walked.map((summary) => summary.createdAt);
    expect([...created].sort().reverse()).toEqual(created);
  });

  it("walks a worklist in its order, each item with its due time, and reads every list's count", async () => {
    const ids: string[] = [];
    for (const priority of ['routine', 'two-week-wait', 'urgent']) {
      const referral = clinic.referral(
        await clinic.createReferral({ offeringId: 'cgh-gastro', ...PATIENT, priority }),
      );
      await referral.submit();
      ids.push(referral.id);
    }
    const counts = await hospital.worklists();
    expect(counts.map((c) => c.name)).toEqual([
      'to-triage',
      'overdue',
      'to-book',
      'needs-action',
      'outcomes-to-read',
      'rejected',
    ]);
    const toTriage = counts.find((c) => c.name === 'to-triage')?.count ?? 0;
    const walked = [];
    for await (const item of hospital.worklist('to-triage')) walked.push(item);
    expect(walked).toHaveLength(toTriage);
    // The most pressing first: the due times never go back.
    const due = walked.map((item) => item.dueAt ?? '9999');
    expect([...due].sort()).toEqual(due);
    expect(walked.map((item) => item.id)).toEqual(expect.arrayContaining(ids));
    expect(walked.every((item) => typeof item.overdue === 'boolean')).toBe(true);
  });

  it('walks a patient’s access report page by page as the first page saw it, each entry once', async () => {
    const patientUin = 'S2468024C';
    const created = await clinic.createReferral({ offeringId: 'cgh-gastro', ...PATIENT, patientUin });
    const referral = clinic.referral(created);
    for (let i = 0; i < 3; i++) await referral.read();
    const pages = [];
    for await (const page of clinic.accessReportPages(patientUin, { pageSize: 2 })) pages.push(page);
    // The create and three reads. Each page asked for is an access too, but the later pages leave out
    // what was written after the first.
    expect(pages.map((page) => page.metadata.total)).toEqual([4, 4]);
    expect(pages.map((page) => page.data.map((entry) => entry.action))).toEqual([
      ['referral.read', 'referral.read'],
      ['referral.read', 'referral.create'],
    ]);
    const walked = [];
    for await (const entry of clinic.accessReport(patientUin, { pageSize: 2 })) walked.push(entry);
    expect(walked.map((entry) => entry.action)).toEqual([
      ...Array<string>(2).fill('patient.access-report'),
      ...Array<string>(3).fill('referral.read'),
      'referral.create',
    ]);
    expect(new Set(walked.map((entry) => entry.referralId))).toEqual(new Set([created.id]));
    expect(walked[walked.length - 1]).toMatchObject({
      channel: 'api',
      institution: { idType: 'hci', id: 'S1234A', name: 'Bukit Timah Family Clinic' },
      system: 'HAS',
      client: { kind: 'api-key' },
    });
    // A hospital that has not received it (a draft) finds nothing.
    const seen = [];
    for await (const page of hospital.accessReportPages(patientUin)) seen.push(...page.data);
    expect(seen).toEqual([]);
  });

  it('retries a create whose answer was lost with the same Idempotency-Key, and the answer is replayed', async () => {
    let creates = 0;
    const proxy = await startFaultyProxy(baseUrl, (request) =>
      request.method === 'POST' && request.path === '/api/v1/referrals' && creates++ === 0
        ? { kind: 'lose-answer' }
        : { kind: 'forward' },
    );
    try {
      const attempts: AttemptReport[] = [];
      const flaky = createRefhubClient({
        baseUrl: proxy.url,
        apiKey: t.sender.key,
        retry: { baseDelayMs: 10 },
        onAttempt: (attempt) => attempts.push(attempt),
      }).actingFor({ ...t.sender.institution, requesterIdentifier: 'dr.lim@bukittimah.example' });
      const patientUin = 'S7654321B';
      const created = await flaky.createReferral({ offeringId: 'cgh-gastro', ...PATIENT, patientUin });

      const posts = proxy.seen.filter((request) => request.method === 'POST');
      expect(posts).toHaveLength(2);
      expect(posts[0]?.headers['idempotency-key']).toEqual(expect.any(String));
      expect(posts[1]?.headers['idempotency-key']).toBe(posts[0]?.headers['idempotency-key']);
      expect(
        attempts.map(({ attempt, error, status, replayed }) => ({ attempt, error, status, replayed })),
      ).toEqual([
        { attempt: 1, error: 'network', status: undefined, replayed: false },
        { attempt: 2, error: undefined, status: 201, replayed: true },
      ]);
      expect(attempts[0]?.retryInMs).toBeGreaterThan(0);
      // One referral, whatever happened on the way.
      const found: string[] = [];
      for await (const summary of clinic.search({ patientUin })) found.push(summary.id);
      expect(found).toEqual([created.id]);
    } finally {
      await proxy.close();
    }
  });

  it('refuses a change guarded by a stale ETag with a typed 412', async () => {
    const created = await clinic.createReferral({ offeringId: 'cgh-gastro', ...PATIENT });
    const mine = clinic.referral(created.id);
    await mine.read();
    const someoneElse = clinic.referral(created.id);
    await someoneElse.read();
    await someoneElse.update({ clinicalInfo: 'Changed elsewhere.' });

    const stale = await problemOf(mine.update({ clinicalInfo: 'My change.' }));
    expect(stale.status).toBe(412);
    expect(stale.code).toBe('version_mismatch');
    expect(stale.problem.currentVersion).toBe(created.version + 1);
    expect((await mine.read()).clinicalInfo).toBe('Changed elsewhere.');
    expect((await mine.update({ clinicalInfo: 'My change.' })).clinicalInfo).toBe('My change.');
  });

  it("reads an offering's wait times, typed, and a typed 404 for an offering the catalog does not have", async () => {
    expect(await clinic.waitTimes('cgh-gastro')).toEqual({
      offeringId: 'cgh-gastro',
      computed: false,
      detail: expect.stringContaining('not been computed yet') as unknown,
    });
    await t.ctx.waitTimes.recompute();
    const computed = await clinic.waitTimes('cgh-gastro');
    expect(computed.computed).toBe(true);
    // The referrals of the tests above are too few for a figure.
    expect(computed.accepted?.enoughData).toBe(false);
    expect(computed.accepted?.p50Days).toBeUndefined();
    const unknown = await problemOf(clinic.waitTimes('no-such-offering'));
    expect(unknown.status).toBe(404);
    expect(unknown.problem.code).toBe('not_found');
  });

  it('surfaces refusals as typed problem+json errors', async () => {
    const invalid = await problemOf(
      clinic.createReferral({ offeringId: 'cgh-gastro', patientUin: 'not a UIN' }),
    );
    expect(invalid.status).toBe(400);
    expect(invalid.problem.code).toBe('validation_failed');
    expect(invalid.problem.errors).toEqual([expect.objectContaining({ path: 'body.patientUin' })]);
    expect(invalid.problem.requestId).toEqual(expect.any(String));

    const draft = clinic.referral(await clinic.createReferral({ offeringId: 'cgh-gastro' }));
    const incomplete = await problemOf(draft.submit());
    expect(incomplete.status).toBe(422);
    expect(incomplete.problem.missing).toEqual(expect.arrayContaining(['patientName', 'patientUin']));

    const notYours = await problemOf(hospital.referral(draft.id).accept());
    expect(notYours.status).toBe(404);

    const wrongState = await problemOf(draft.cancel({ cancelNote: 'Not needed' }));
    expect(wrongState.status).toBe(409);
    expect(wrongState.problem.code).toBe('invalid_transition');
    expect(wrongState.problem.currentStatus).toBe('draft');

    const unknownKey = createRefhubClient({ baseUrl, apiKey: 'rfh_test_unknown' }).actingFor({
      ...t.sender.institution,
      requesterIdentifier: 'dr.lim@bukittimah.example',
    });
    const unauthorized = await problemOf(unknownKey.referral(draft.id).read());
    expect(unauthorized.status).toBe(401);
    expect(unauthorized.problem.code).toBe('unauthorized');
  });
});
