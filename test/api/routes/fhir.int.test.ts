// GET /api/v1/referrals/{id}/fhir: the FHIR R4 view of a referral. It takes the get's query, answers
// the same callers (404, never 403, for an institution that cannot see the referral, and for the
// provider while it is a draft), is audited as a read of its own, and serves a valid R4 Bundle as
// application/fhir+json with the get's ETag and no caching. Files attached over the API appear as
// DocumentReferences whose URL serves the bytes their ni:///sha-256 identifier names.
import { createHash } from 'node:crypto';
import type {
  Appointment,
  AuditEvent,
  Communication,
  DocumentReference,
  Organization,
  Patient,
  ServiceRequest,
  Task,
} from '@medplum/fhirtypes';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { attachmentRepository } from '../../../src/db/attachments.repository.ts';
import { APPOINTMENT_STATUSES } from '../../../src/domain/statuses.ts';
import { errorPaths, expectProblem } from '../../support/api-assertions.ts';
import { APP_ENGINES } from '../../support/engines.ts';
import { loadFhirR4 } from '../../support/fhir-validation.ts';
import {
  APPOINTMENT_STATUS,
  REQUEST_STATUS,
  TASK_STATUS,
  attachFile,
  fhirUrl,
  namedInformationOf,
  readFhir,
  resourcesOf,
  type FhirRead,
} from '../../support/fhir-view.ts';
import { CATALOG, DOCX, PAGES, TEXT, pdf } from '../../support/fixtures/attachment-files.ts';
import { CANARY, CANARY_MARKERS } from '../../support/fixtures/patients.ts';
import { REQUESTER } from '../../support/referral-routes.ts';
import { LIVE_STATUSES, call, createDraft, referralIn } from '../../support/scenarios.ts';
import { apiKeyIdOf, auditRowsOf } from '../../support/store-inspection.ts';
import { createTestApp, type TestApp, type TestParty } from '../../support/test-app.ts';

const ECG_PDF = pdf(CATALOG, PAGES);
const DOCX_TYPE = 'application/vnd.openxmlformats-officedocument.wordprocessingml.document';

beforeAll(() => {
  loadFhirR4();
});

/** The DocumentReference of the attachment `id` (by refhub's attachment-id identifier). */
function documentOf(bundle: FhirRead['bundle'], id: string): DocumentReference | undefined {
  return resourcesOf<DocumentReference>(bundle, 'DocumentReference').find((d) =>
    d.identifier?.some((i) => i.system === 'urn:refhub:fhir:NamingSystem:attachment-id' && i.value === id),
  );
}

/** The resource a bundle reference points at. */
function resolved(bundle: FhirRead['bundle'], reference: { reference?: string } | undefined) {
  return bundle.entry.find((e) => e.fullUrl === reference?.reference)?.resource;
}

/** Follows a DocumentReference's URL as the caller, with the query every call of the caller carries. */
function follow(t: TestApp, as: TestParty, url: string | undefined) {
  return t.request(as, {
    method: 'GET',
    url: url ?? '',
    query: { ...as.institution, requesterIdentifier: REQUESTER },
  });
}

describe.each(APP_ENGINES)('the FHIR view on %s', (engine) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp(engine);
  });
  afterAll(async () => {
    await t.close();
  });

  const getUrl = (id: string) =>
    `/api/v1/referrals/${id}?${new URLSearchParams({ requesterIdentifier: REQUESTER, ...t.sender.institution }).toString()}`;

  it('serves a valid R4 collection as application/fhir+json, uncached, with the get’s ETag', async () => {
    const referral = await referralIn(t, 'pending-acceptance', CANARY);
    const { res, bundle } = await readFhir(t, t.sender, referral.id);
    expect(res.headers.etag).toBe(`W/"${referral.version}"`);
    const get = await t.request(t.sender, { method: 'GET', url: getUrl(referral.id) });
    expect(res.headers.etag).toBe(get.headers.etag);
    expect(bundle).toMatchObject({ resourceType: 'Bundle', type: 'collection' });
    expect(Date.parse(bundle.timestamp ?? '')).not.toBeNaN();
    const request = resourcesOf<ServiceRequest>(bundle, 'ServiceRequest')[0];
    expect(request?.identifier?.[0]?.value).toBe(referral.id);
    expect(resourcesOf<Patient>(bundle, 'Patient')[0]?.identifier?.[0]?.value).toBe(CANARY.patientUin);
  });

  it('answers the provider too, with the same resources and ids', async () => {
    const referral = await referralIn(t, 'accepted', CANARY);
    const ids = async (who: typeof t.sender) =>
      (await readFhir(t, who, referral.id)).bundle.entry.map((e) => e.fullUrl);
    expect(await ids(t.provider)).toEqual(await ids(t.sender));
  });

  it.each(LIVE_STATUSES)('maps a referral in %s to its ServiceRequest and Task statuses', async (status) => {
    const referral = await referralIn(t, status, CANARY);
    const { bundle } = await readFhir(t, t.sender, referral.id);
    const [request] = resourcesOf<ServiceRequest>(bundle, 'ServiceRequest');
    const [task] = resourcesOf<Task>(bundle, 'Task');
    expect(request?.status).toBe(REQUEST_STATUS[status]);
    expect(task?.status).toBe(TASK_STATUS[status]);
    expect(task?.businessStatus?.coding?.map((c) => c.code)).toEqual([status, referral.coreStatus]);
    if (['rejected', 'cancelled', 'sender-action-required'].includes(status)) {
      // The reason the provider or sender gave, in the timeline's sentence.
      expect(task?.statusReason?.text).toMatch(
        /Not within our scope|Patient recovered|Please attach the ECG/,
      );
    }
    if (status === 'completed' || status === 'outcome-acknowledged') {
      // The outcome the provider reported, and its consult summary.
      expect(task?.statusReason?.coding?.map((c) => c.code)).toEqual(['seen-discharged']);
      expect(task?.output?.map((o) => o.valueString)).toEqual([
        'Gastroscopy normal. No follow-up needed; continue omeprazole for four weeks.',
      ]);
    }
  });

  it('maps every appointment status', async () => {
    const referral = await referralIn(t, 'accepted', CANARY);
    for (const [i, status] of [...APPOINTMENT_STATUSES].reverse().entries()) {
      await call(t, t.provider, 'PUT', `/api/v1/referrals/${referral.id}/appointments/appt-${status}`, {
        status,
        startAt: `2030-01-1${i}T01:30:00.000Z`,
        location: `Clinic ${i}`,
      });
    }
    const { bundle } = await readFhir(t, t.provider, referral.id);
    const byId = new Map(
      resourcesOf<Appointment>(bundle, 'Appointment').map((a) => [a.identifier?.[0]?.value, a]),
    );
    for (const status of APPOINTMENT_STATUSES) {
      expect(byId.get(`appt-${status}`)?.status, status).toBe(APPOINTMENT_STATUS[status]);
    }
    expect(resourcesOf<Task>(bundle, 'Task')[0]?.status).toBe('in-progress');
  });

  it('carries the notes and the EHR ledger, each attempt with the SHA-256 of its form', async () => {
    const referral = await referralIn(t, 'pending-acceptance', CANARY);
    await call(
      t,
      t.provider,
      'POST',
      `/api/v1/referrals/${referral.id}/notes`,
      {
        content: 'We will call the patient.',
        authorName: 'Dr Wong',
      },
      201,
    );
    const sha256 = 'c'.repeat(64);
    await t.ctx.ehrForwarding.recordAttempt({
      referralId: referral.id,
      messageId: `${referral.id}.v${referral.version}`,
      version: referral.version,
      attempt: 1,
      startedAt: t.ctx.clock.now(),
      durationMs: 30,
      sha256,
      outcome: 'delivered',
      httpStatus: 201,
      errorCode: null,
      reference: 'EHR-42',
      requestId: 'fhir-test-ledger',
    });
    const { bundle } = await readFhir(t, t.sender, referral.id);
    const [note] = resourcesOf<Communication>(bundle, 'Communication');
    expect(note?.payload).toEqual([{ contentString: 'We will call the patient.' }]);
    const [event] = resourcesOf<AuditEvent>(bundle, 'AuditEvent');
    expect(event?.outcome).toBe('0');
    const details = event?.entity?.flatMap((e) => e.detail ?? []);
    expect(details).toContainEqual({ type: 'sha256', valueString: sha256 });
    // The same hash the ledger endpoint shows.
    const ledger = await call(
      t,
      t.sender,
      'GET',
      `/api/v1/referrals/${referral.id}/ehr-submissions?institutionIdType=hci&institutionId=S1234A`,
    );
    expect((ledger as { data: { sha256: string }[] }).data[0]?.sha256).toBe(sha256);
  });

  describe('attachments', () => {
    it('shows each file as a DocumentReference: the sender’s supporting the request, the provider’s the Task’s output', async () => {
      const draft = await createDraft(t, CANARY);
      const ecg = await attachFile(t, t.sender, draft.id, ECG_PDF, 'ecg-report.pdf');
      await call(t, t.sender, 'POST', `/api/v1/referrals/${draft.id}/submit`, {});
      await call(t, t.provider, 'POST', `/api/v1/referrals/${draft.id}/accept`, {});
      const letter = await attachFile(t, t.provider, draft.id, DOCX, 'consultation-letter.docx');

      for (const who of [t.sender, t.provider]) {
        const { bundle } = await readFhir(t, who, draft.id);
        expect(resourcesOf<DocumentReference>(bundle, 'DocumentReference')).toHaveLength(2);
        for (const [file, bytes, contentType, author] of [
          [ecg, ECG_PDF, 'application/pdf', 'S1234A'],
          [letter, DOCX, DOCX_TYPE, 'S9001Z'],
        ] as const) {
          const document = documentOf(bundle, file.id);
          expect(document).toMatchObject({
            status: 'current',
            docStatus: 'final',
            date: file.createdAt,
            content: [
              {
                attachment: {
                  contentType,
                  size: bytes.length,
                  title: file.fileName,
                  url: `/api/v1/referrals/${draft.id}/attachments/${file.id}/content`,
                },
              },
            ],
          });
          // The SHA-256 the API shows, as an RFC 6920 name; never as R4's SHA-1 hash.
          const named = document?.identifier?.find((i) => i.system === 'urn:ietf:rfc:3986')?.value;
          expect(named).toBe(namedInformationOf(file.sha256));
          expect(named).toBe(`ni:///sha-256;${createHash('sha256').update(bytes).digest('base64url')}`);
          expect(document?.content[0]?.attachment.hash).toBeUndefined();
          expect(resolved(bundle, document?.subject)?.resourceType).toBe('Patient');
          expect(resolved(bundle, document?.context?.related?.[0])?.resourceType).toBe('ServiceRequest');
          const organization = resolved(bundle, document?.author?.[0]) as Organization | undefined;
          expect(organization?.identifier?.[0]?.value).toBe(author);
          // The URL serves the bytes that name, to either party.
          const content = await follow(t, who, document?.content[0]?.attachment.url);
          expect(content.statusCode, content.body).toBe(200);
          expect(content.rawPayload.equals(bytes)).toBe(true);
        }
        const [request] = resourcesOf<ServiceRequest>(bundle, 'ServiceRequest');
        expect(request?.supportingInfo?.map((r) => resolved(bundle, r))).toEqual([
          documentOf(bundle, ecg.id),
        ]);
        const [task] = resourcesOf<Task>(bundle, 'Task');
        expect(task?.output?.map((o) => resolved(bundle, o.valueReference))).toEqual([
          documentOf(bundle, letter.id),
        ]);
      }
    });

    it('shows the outcome: its code as the Task’s statusReason, its summary and documents first among the outputs, each file once', async () => {
      const referral = await referralIn(t, 'accepted', CANARY);
      const url = (op: string) => `/api/v1/referrals/${referral.id}/${op}`;
      const scan = await attachFile(t, t.provider, referral.id, ECG_PDF, 'scan.pdf');
      const letter = await attachFile(t, t.provider, referral.id, DOCX, 'consultation-letter.docx');
      const summary = 'Gastroscopy normal.\nContinue omeprazole for four weeks.';
      const completed = await call(t, t.provider, 'POST', url('complete'), {
        outcomeCode: 'seen-follow-up',
        summary,
        attachmentIds: [letter.id],
        completedByName: 'Dr Wong',
      });
      const { completedAt } = completed.outcome as { completedAt: string };
      const outputType = (code: string, display: string) => ({
        coding: [{ system: 'urn:refhub:fhir:CodeSystem:task-output-type', code, display }],
      });

      const views: FhirRead['bundle'][] = [];
      for (const who of [t.sender, t.provider]) {
        const { bundle } = await readFhir(t, who, referral.id);
        views.push(bundle);
        const [task] = resourcesOf<Task>(bundle, 'Task');
        expect(task?.status).toBe('completed');
        expect(task?.statusReason).toEqual({
          coding: [
            {
              system: 'urn:refhub:fhir:CodeSystem:outcome',
              code: 'seen-follow-up',
              display: 'Seen, follow-up arranged with the provider',
            },
          ],
          text: 'Seen, follow-up arranged with the provider',
        });
        expect(task?.executionPeriod).toEqual({ end: completedAt });
        expect(task?.output?.map(({ type, valueString }) => ({ type, valueString }))).toEqual([
          { type: outputType('consult-summary', 'Consult summary'), valueString: summary },
          { type: outputType('outcome-document', 'Outcome document'), valueString: undefined },
          { type: outputType('attachment', 'Attachment'), valueString: undefined },
        ]);
        expect(task?.output?.slice(1).map((o) => resolved(bundle, o.valueReference))).toEqual([
          documentOf(bundle, letter.id),
          documentOf(bundle, scan.id),
        ]);
        // The outcome's document serves the letter.
        const content = await follow(t, who, documentOf(bundle, letter.id)?.content[0]?.attachment.url);
        expect(content.rawPayload.equals(DOCX)).toBe(true);
      }

      // The sender's acknowledgement changes refhub's status only; the outcome reads the same.
      await call(t, t.sender, 'POST', url('acknowledge-outcome'), { acknowledgedByName: 'Dr Lim' });
      const { bundle } = await readFhir(t, t.sender, referral.id);
      const [before] = resourcesOf<Task>(views[0]!, 'Task');
      const [after] = resourcesOf<Task>(bundle, 'Task');
      expect(after?.status).toBe('completed');
      expect(after?.businessStatus?.coding?.map((c) => c.code)).toEqual([
        'outcome-acknowledged',
        'completed',
      ]);
      expect(before?.businessStatus?.coding?.map((c) => c.code)).toEqual(['completed', 'completed']);
      expect(after?.statusReason).toEqual(before?.statusReason);
      expect(after?.output).toEqual(before?.output);
      expect(after?.executionPeriod).toEqual(before?.executionPeriod);
    });

    it('has none for a referral without files', async () => {
      const referral = await referralIn(t, 'accepted', CANARY);
      const { bundle } = await readFhir(t, t.provider, referral.id);
      expect(resourcesOf(bundle, 'DocumentReference')).toEqual([]);
      expect(resourcesOf<ServiceRequest>(bundle, 'ServiceRequest')[0]?.supportingInfo).toBeUndefined();
      expect(resourcesOf<Task>(bundle, 'Task')[0]?.output).toBeUndefined();
    });

    it('marks a file the scanner rejected entered-in-error with no URL, and keeps one waiting for its scan current', async () => {
      const scanned = await createTestApp(engine, { env: { ATTACHMENT_SCANNER: 'clamd://127.0.0.1:9' } });
      try {
        const draft = await createDraft(scanned, CANARY);
        const infected = await attachFile(scanned, scanned.sender, draft.id, TEXT, 'notes.txt');
        const waiting = await attachFile(scanned, scanned.sender, draft.id, ECG_PDF, 'ecg-report.pdf');
        const clean = await attachFile(scanned, scanned.sender, draft.id, ECG_PDF, 'ecg-copy.pdf');
        const repo = attachmentRepository(scanned.ctx.db);
        const at = scanned.ctx.clock.now();
        await repo.recordScan(infected.id, { kind: 'infected', signature: 'Refhub.Test.EICAR' }, at);
        await repo.recordScan(clean.id, { kind: 'clean' }, at);

        const { bundle, res } = await readFhir(scanned, scanned.sender, draft.id);
        const rejected = documentOf(bundle, infected.id);
        expect(rejected).toMatchObject({
          status: 'entered-in-error',
          content: [{ attachment: { contentType: 'text/plain; charset=utf-8', title: 'notes.txt' } }],
        });
        expect(rejected?.docStatus).toBeUndefined();
        expect(rejected?.content[0]?.attachment).not.toHaveProperty('url');
        expect(res.body).not.toContain('EICAR');

        const pending = documentOf(bundle, waiting.id);
        expect(pending).toMatchObject({ status: 'current', docStatus: 'final' });
        const early = await follow(scanned, scanned.sender, pending?.content[0]?.attachment.url);
        expect(early.statusCode).toBe(409);
        expect(early.headers['retry-after']).toBe('5');
        const ready = documentOf(bundle, clean.id);
        expect(ready).toMatchObject({ status: 'current', docStatus: 'final' });
        expect((await follow(scanned, scanned.sender, ready?.content[0]?.attachment.url)).statusCode).toBe(
          200,
        );

        // The rejected file supports nothing.
        const [request] = resourcesOf<ServiceRequest>(bundle, 'ServiceRequest');
        expect(request?.supportingInfo?.map((r) => resolved(bundle, r))).toEqual([
          documentOf(bundle, waiting.id),
          documentOf(bundle, clean.id),
        ]);
      } finally {
        await scanned.close();
      }
    });
  });

  describe('tenancy', () => {
    it('is 404, never 403, for institutions that cannot see the referral', async () => {
      const referral = await referralIn(t, 'accepted', CANARY);
      for (const who of [t.otherSender, t.otherProvider]) {
        const res = await t.request(who, { method: 'GET', url: fhirUrl(referral.id, who) });
        const problem = expectProblem(res, 404, 'referral_not_found');
        for (const marker of CANARY_MARKERS) expect(res.body).not.toContain(marker);
        expect(problem.detail).toContain(referral.id);
      }
    });

    it('is 404 for the provider while the referral is a draft, and 200 once submitted', async () => {
      const draft = await createDraft(t, CANARY);
      expectProblem(
        await t.request(t.provider, { method: 'GET', url: fhirUrl(draft.id, t.provider) }),
        404,
        'referral_not_found',
      );
      await call(t, t.sender, 'POST', `/api/v1/referrals/${draft.id}/submit`, {});
      await readFhir(t, t.provider, draft.id);
    });

    it('is 404 for a deleted draft and for an unknown ID', async () => {
      const draft = await createDraft(t, CANARY);
      await call(
        t,
        t.sender,
        'DELETE',
        `/api/v1/referrals/${draft.id}?institutionIdType=hci&institutionId=S1234A`,
      );
      for (const id of [draft.id, '0197a2b0-0000-7000-8000-00000000dead']) {
        expectProblem(
          await t.request(t.sender, { method: 'GET', url: fhirUrl(id, t.sender) }),
          404,
          'referral_not_found',
        );
      }
    });

    it('is 403 for an institution the key may not act for, and 401 without a key', async () => {
      const referral = await referralIn(t, 'accepted', CANARY);
      const url = fhirUrl(referral.id, t.otherSender);
      expectProblem(await t.request(t.sender, { method: 'GET', url }), 403, 'institution_not_permitted');
      expectProblem(await t.request(null, { method: 'GET', url }), 401, 'unauthorized');
    });
  });

  describe('bad requests', () => {
    it('names a missing parameter, an unknown one and a malformed ID', async () => {
      const referral = await referralIn(t, 'accepted', CANARY);
      const base = `/api/v1/referrals/${referral.id}/fhir`;
      let res = await t.request(t.sender, {
        method: 'GET',
        url: `${base}?institutionIdType=hci&institutionId=S1234A`,
      });
      expect(errorPaths(expectProblem(res, 400, 'validation_failed'))).toEqual(['query.requesterIdentifier']);
      res = await t.request(t.sender, {
        method: 'GET',
        url: `${fhirUrl(referral.id, t.sender)}&_format=xml`,
      });
      expect(errorPaths(expectProblem(res, 400, 'validation_failed'))).toEqual(['query._format']);
      res = await t.request(t.sender, { method: 'GET', url: fhirUrl('not-a-uuid', t.sender) });
      expect(errorPaths(expectProblem(res, 400, 'validation_failed'))).toEqual(['path.referralId']);
    });
  });

  describe('audit', () => {
    it('writes the view’s own read row, and the ledger and attachment reads it includes', async () => {
      const referral = await referralIn(t, 'accepted', CANARY);
      const { res } = await readFhir(t, t.provider, referral.id);
      const row = {
        request_id: res.headers['x-request-id'],
        api_key_id: await apiKeyIdOf(t, t.provider),
        system: 'Epic',
        institution_id_type: 'hci',
        institution_id: 'S9001Z',
        requester_identifier: REQUESTER,
        outcome: 'success',
        referral_ids: [referral.id],
      };
      expect(await auditRowsOf(t, res)).toEqual([
        { ...row, action: 'referral.read-fhir' },
        { ...row, action: 'ehr.submissions.read' },
        { ...row, action: 'referral.read-attachments' },
      ]);
    });

    it('records a turned-away read as denied, under the view’s action', async () => {
      const referral = await referralIn(t, 'accepted', CANARY);
      const res = await t.request(t.otherProvider, {
        method: 'GET',
        url: fhirUrl(referral.id, t.otherProvider),
      });
      expect(res.statusCode).toBe(404);
      expect(await auditRowsOf(t, res)).toEqual([
        expect.objectContaining({
          action: 'referral.read-fhir',
          outcome: 'denied',
          referral_ids: [referral.id],
        }),
      ]);
    });
  });

  describe('privacy', () => {
    it('mints no one-time links, and logs no patient data', async () => {
      const referral = await referralIn(t, 'sender-action-required', CANARY);
      const tokens = async () =>
        (
          await t.ctx.db
            .selectFrom('link_tokens')
            .select(sql<number>`count(*)::int`.as('n'))
            .where('referral_id', '=', referral.id)
            .executeTakeFirstOrThrow()
        ).n;
      const before = await tokens();
      const logsBefore = t.logs.length;
      const { res } = await readFhir(t, t.sender, referral.id);
      expect(await tokens()).toBe(before);
      expect(res.body).not.toContain('/l/');
      const logged = t.logs.slice(logsBefore).join('\n');
      expect(logged).toContain(String(res.headers['x-request-id']));
      for (const marker of CANARY_MARKERS) expect(logged).not.toContain(marker);
    });
  });
});
