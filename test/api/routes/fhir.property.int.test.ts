// Property: whatever a referral holds and wherever its lifecycle has taken it, its FHIR view is a valid
// FHIR R4 bundle (zero issues from the R4 validator, required bindings and references included), says
// what the documented tables say about its status and its appointments, and carries nothing the API
// does not give the same caller. Referrals are made over the API as clients make them: random fields
// (present or not, blank or not), driven into every status, with appointments in every status, notes
// and attached files from both sides, outcomes with and without a summary and documents, and attempts
// on the EHR ledger, which are recorded through the forwarding service as the forward worker records
// them.
import { randomUUID } from 'node:crypto';
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
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { COUNTRY_CODES } from '../../../src/domain/countries.ts';
import { APPOINTMENT_WINDOW_YEARS } from '../../../src/domain/appointment-window.ts';
import { APPOINTMENT_STATUSES, type AppointmentStatus, type Status } from '../../../src/domain/statuses.ts';
import { CORE_STATUS_DISPLAY } from '../../../src/render/fhir/status-mapping.ts';
import { APP_ENGINES } from '../../support/engines.ts';
import { loadFhirR4 } from '../../support/fhir-validation.ts';
import {
  APPOINTMENT_STATUS,
  REQUEST_STATUS,
  TASK_STATUS,
  attachFile,
  namedInformationOf,
  readFhir,
  resourcesOf,
  type AttachmentJson,
  type FhirRead,
} from '../../support/fhir-view.ts';
import { CATALOG, DOCX, PAGES, PNG, TEXT, pdf } from '../../support/fixtures/attachment-files.ts';
import { REQUESTER } from '../../support/referral-routes.ts';
import { LIVE_STATUSES, call } from '../../support/scenarios.ts';
import { createTestApp, type TestApp, type TestParty } from '../../support/test-app.ts';

/** Referrals per status and engine: 9 statuses × 6 = 54 referrals on each engine. */
const RUNS_PER_STATUS = 6;

type Party = 'sender' | 'provider';

interface AppointmentPlan {
  readonly status: AppointmentStatus;
  readonly startAt: string;
  readonly location: string;
}

interface LedgerPlan {
  readonly outcome: 'delivered' | 'retrying' | 'failed';
  readonly httpStatus: number | null;
  readonly errorCode: string | null;
  readonly sha256: string | null;
  readonly reference: string | null;
  readonly durationMs: number;
}

/** A file of each kind a clinic attaches, with the extension its name must have. */
const FILES = {
  pdf: pdf(CATALOG, PAGES),
  txt: TEXT,
  png: PNG,
  docx: DOCX,
} as const;

interface FilePlan {
  readonly kind: keyof typeof FILES;
  /** The name without its extension. */
  readonly stem: string;
}

/** The outcome codes of the demo catalog; one needs no summary. */
const OUTCOME_CODES = [
  'seen-discharged',
  'seen-follow-up',
  'referred-on',
  'admitted',
  'did-not-attend',
  'declined-after-review',
] as const;

interface OutcomePlan {
  readonly outcomeCode: (typeof OUTCOME_CODES)[number];
  readonly summary?: string;
  /** The provider's files named as part of the outcome, by their place among its files, in this order. */
  readonly documents: readonly number[];
  readonly completedByName?: string;
  readonly acknowledgedByName?: string;
}

/** The outcome, as the API returns it. */
interface OutcomeJson {
  readonly code: string;
  readonly display: string;
  readonly summary: string | null;
  readonly attachmentIds: string[];
  readonly completedAt: string;
}

const COMPLETED: readonly Status[] = ['completed', 'outcome-acknowledged'];

interface ReferralPlan {
  readonly status: Status;
  readonly fields: Record<string, unknown>;
  /** Whether the provider accepts before it rejects, asks the sender to act, or cancels. */
  readonly acceptFirst: boolean;
  readonly cancelledBy: Party;
  readonly appointments: readonly AppointmentPlan[];
  readonly notes: readonly { by: Party; content: string; authorName?: string }[];
  readonly ledger: readonly LedgerPlan[];
  /** Attached by the sender while a draft, and by the provider once it accepted (when it does). */
  readonly files: { readonly sender: readonly FilePlan[]; readonly provider: readonly FilePlan[] };
  /** For a completed referral: what the provider reports. */
  readonly outcome?: OutcomePlan;
}

/**
 * Text that says something (the API refuses whitespace alone), with stray whitespace around it. One
 * line, as the API takes names and identifiers, unless `lines`: clinical information and notes may
 * hold line breaks and tabs.
 */
const text = (maxLength: number, { lines = false } = {}) =>
  fc
    .oneof(
      fc.string({ minLength: 1, maxLength, unit: 'grapheme' }),
      fc.constantFrom(
        ' Tan Ah Kow',
        lines ? 'Nur Aisyah\n\tbinte Rahman ' : 'Nur Aisyah  binte Rahman ',
        '陳大文',
        "O'Brien & <Sons>",
      ),
    )
    .filter((s) => s.trim() !== '');
const yearsFromNow = (years: number) => {
  const date = new Date();
  date.setUTCFullYear(date.getUTCFullYear() + years);
  return date.toISOString();
};
const phone = fc.stringMatching(/^[3689][0-9]{7}$/);
const isoDate = (min: string, max: string) =>
  fc.date({ min: new Date(min), max: new Date(max), noInvalidDate: true }).map((d) => d.toISOString());

/** The sender's fields: everything optional, except what submitting needs when the plan submits. */
const fieldsFor = (status: Status) =>
  fc
    .record(
      {
        offeringId: fc.constantFrom('cgh-gastro', 'cgh-gpfirst', 'cgh-ae'),
        patientName: text(60),
        patientUin: fc.stringMatching(/^[STFGM][0-9]{7}[A-Z]$/),
        dob: isoDate('1920-01-01', '2020-12-31').map((d) => d.slice(0, 10)),
        patientGender: fc.constantFrom('Male', 'Female'),
        nationality: fc.constantFrom(...COUNTRY_CODES),
        patientPhoneNumber: phone,
        residentialStatus: fc.constantFrom('SC', 'PR', 'Foreigner'),
        referrerId: text(20),
        referrerIdType: fc.constantFrom('mcr', 'nric', 'email', 'brightUserId', 'dcr'),
        referrerName: text(60),
        referrerEmail: fc.constantFrom('dr.tan@clinic.example', 'a.b+c@sub.clinic.example'),
        referrerContactNumber: phone,
        clinicalInfo: fc.oneof(fc.constant(''), text(300, { lines: true })),
        isUrgent: fc.boolean(),
      },
      {
        requiredKeys: status === 'draft' ? [] : ['offeringId', 'patientName', 'patientUin'],
      },
    )
    .map((fields) => fields as Record<string, unknown>);

const appointment = (status: AppointmentStatus) =>
  fc.record({
    status: fc.constant(status),
    // Within the window the API takes appointments in (APPOINTMENT_WINDOW_YEARS around now).
    startAt: isoDate(
      yearsFromNow(-(APPOINTMENT_WINDOW_YEARS - 1)),
      yearsFromNow(APPOINTMENT_WINDOW_YEARS - 1),
    ),
    location: fc.oneof(text(60), fc.constant('Clinic 3B, Level 3')),
  });

/** For a scheduled referral, an appointment in every status (so the referral stays scheduled), and more. */
const appointmentsFor = (status: Status, acceptFirst: boolean, cancelledBy: Party) => {
  if (status === 'scheduled') {
    return fc
      .tuple(
        fc.tuple(...APPOINTMENT_STATUSES.map(appointment)),
        fc.array(fc.constantFrom(...APPOINTMENT_STATUSES).chain(appointment), { maxLength: 2 }),
      )
      .chain(([every, more]) =>
        fc.shuffledSubarray([...every, ...more], { minLength: every.length + more.length }),
      );
  }
  // A provider may cancel a referral it has already scheduled, and complete one whether scheduled or not.
  if ((status === 'cancelled' && acceptFirst && cancelledBy === 'provider') || COMPLETED.includes(status)) {
    return fc.array(fc.constantFrom(...APPOINTMENT_STATUSES).chain(appointment), { maxLength: 3 });
  }
  return fc.constant([]);
};

const ledgerEntry: fc.Arbitrary<LedgerPlan> = fc
  .constantFrom('delivered', 'retrying', 'failed')
  .chain((outcome) =>
    fc.record({
      outcome: fc.constant(outcome),
      httpStatus:
        outcome === 'delivered'
          ? fc.constantFrom(200, 201, 202)
          : fc.option(fc.constantFrom(...(outcome === 'retrying' ? [408, 429, 503] : [400, 409, 422])), {
              nil: null,
            }),
      errorCode: fc.constantFrom('ECONNRESET', 'UND_ERR_CONNECT_TIMEOUT'),
      sha256: fc.option(fc.stringMatching(/^[0-9a-f]{64}$/), { nil: null }),
      reference:
        outcome === 'delivered'
          ? fc.option(fc.stringMatching(/^EHR-[0-9]{1,8}$/), { nil: null })
          : fc.constant(null),
      durationMs: fc.nat({ max: 60_000 }),
    }),
  );

const filePlan: fc.Arbitrary<FilePlan> = fc.record({
  kind: fc.constantFrom(...(Object.keys(FILES) as (keyof typeof FILES)[])),
  stem: fc.oneof(
    fc.constantFrom('ecg-report', 'Tan Ah Kow referral letter', '心電図', "O'Brien & <Sons>"),
    fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9 ._-]{0,30}$/),
  ),
});

/** Whether the provider accepts the referral on its way to the plan's status, and so may attach. */
const providerAccepts = (status: Status, acceptFirst: boolean) =>
  status === 'accepted' ||
  status === 'scheduled' ||
  COMPLETED.includes(status) ||
  (acceptFirst &&
    (status === 'rejected' ||
      status === 'sender-action-required' ||
      status === 'cancelled' ||
      status === 'redirected'));

/** An outcome naming some of the provider's `files` in any order; a summary unless the code needs none. */
const outcomeFor = (files: number): fc.Arbitrary<OutcomePlan> =>
  fc.constantFrom(...OUTCOME_CODES).chain((outcomeCode) =>
    fc.record(
      {
        outcomeCode: fc.constant(outcomeCode),
        summary: text(300, { lines: true }),
        documents: fc.shuffledSubarray([...Array(files).keys()]),
        completedByName: text(40),
        acknowledgedByName: text(40),
      },
      {
        requiredKeys:
          outcomeCode === 'did-not-attend'
            ? ['outcomeCode', 'documents']
            : ['outcomeCode', 'summary', 'documents'],
      },
    ),
  );

const planFor = (status: Status): fc.Arbitrary<ReferralPlan> =>
  fc
    .record({
      fields: fieldsFor(status),
      acceptFirst: fc.boolean(),
      cancelledBy: fc.constantFrom<Party>('sender', 'provider'),
    })
    .chain(({ fields, acceptFirst, cancelledBy }) =>
      fc.record({
        status: fc.constant(status),
        fields: fc.constant(fields),
        acceptFirst: fc.constant(acceptFirst),
        // cgh-ae's offering is not cancellable by the sender.
        cancelledBy: fc.constant(fields.offeringId === 'cgh-ae' ? 'provider' : cancelledBy),
        appointments: appointmentsFor(status, acceptFirst, cancelledBy),
        notes: fc.array(
          fc.record(
            {
              by: fc.constantFrom<Party>(
                ...(status === 'draft' ? ['sender' as const] : (['sender', 'provider'] as const)),
              ),
              content: text(200, { lines: true }),
              authorName: text(40),
            },
            { requiredKeys: ['by', 'content'] },
          ),
          { maxLength: 3 },
        ),
        ledger: status === 'draft' ? fc.constant([]) : fc.array(ledgerEntry, { maxLength: 3 }),
        files: fc.record({
          sender: fc.array(filePlan, { maxLength: 2 }),
          provider: providerAccepts(status, acceptFirst)
            ? fc.array(filePlan, { maxLength: 2 })
            : fc.constant([]),
        }),
      }),
    )
    .chain((plan) =>
      COMPLETED.includes(status)
        ? outcomeFor(plan.files.provider.length).map((outcome) => ({ ...plan, outcome }))
        : fc.constant(plan),
    );

/** Every string in a JSON value, and every number as text. */
function leaves(value: unknown, into = new Set<string>()): Set<string> {
  if (typeof value === 'string') into.add(value);
  else if (typeof value === 'number') into.add(String(value));
  else if (Array.isArray(value)) for (const item of value) leaves(item, into);
  else if (value !== null && typeof value === 'object')
    for (const item of Object.values(value)) leaves(item, into);
  return into;
}

/** The values under the data-bearing keys of a bundle: identifiers, contacts, texts, contents, dates, titles. */
function dataValues(value: unknown, into: string[] = []): string[] {
  if (Array.isArray(value)) for (const item of value) dataValues(item, into);
  else if (value !== null && typeof value === 'object') {
    for (const [key, item] of Object.entries(value)) {
      if (
        ['value', 'text', 'contentString', 'valueString', 'birthDate', 'title'].includes(key) &&
        typeof item === 'string'
      )
        into.push(item);
      else dataValues(item, into);
    }
  }
  return into;
}

describe.each(APP_ENGINES)('the FHIR view of random referrals on %s', (engine) => {
  let t: TestApp;
  beforeAll(async () => {
    loadFhirR4();
    t = await createTestApp(engine);
  });
  afterAll(async () => {
    await t.close();
  });

  const partyOf = (who: Party): TestParty => (who === 'sender' ? t.sender : t.provider);

  /** Drives a new referral through the API into the plan's status; returns its ID. */
  async function make(plan: ReferralPlan): Promise<string> {
    const draft = await call(t, t.sender, 'POST', '/api/v1/referrals', plan.fields, 201);
    const id = draft.id as string;
    const op = (who: Party, name: string, body: Record<string, unknown> = {}) =>
      call(t, partyOf(who), 'POST', `/api/v1/referrals/${id}/${name}`, body, name === 'notes' ? 201 : 200);
    const attach = async (who: Party, files: readonly FilePlan[]) => {
      const ids: string[] = [];
      for (const file of files) {
        ids.push((await attachFile(t, partyOf(who), id, FILES[file.kind], `${file.stem}.${file.kind}`)).id);
      }
      return ids;
    };
    await attach('sender', plan.files.sender);
    if (plan.status !== 'draft') await op('sender', 'submit');
    let providerFiles: string[] = [];
    if (providerAccepts(plan.status, plan.acceptFirst)) {
      await op('provider', 'accept');
      providerFiles = await attach('provider', plan.files.provider);
    }
    for (const [i, a] of plan.appointments.entries()) {
      await call(t, t.provider, 'PUT', `/api/v1/referrals/${id}/appointments/appt-${i}`, { ...a });
    }
    if (plan.status === 'rejected') await op('provider', 'reject', { reason: 'Not within our scope.' });
    if (plan.status === 'sender-action-required')
      await op('provider', 'request-action', { reason: 'Attach the ECG.' });
    if (plan.status === 'cancelled')
      await op(plan.cancelledBy, 'cancel', { cancelNote: 'Patient recovered' });
    // The provider hands it on to another service that takes its priority.
    if (plan.status === 'redirected')
      await op('provider', 'redirect', {
        offeringId: plan.fields.offeringId === 'cgh-gastro' ? 'erh-cardio' : 'cgh-gastro',
        reasonCode: 'wrong-service',
      });
    if (plan.outcome !== undefined) {
      const { documents, acknowledgedByName, ...outcome } = plan.outcome;
      await op('provider', 'complete', {
        ...outcome,
        ...(documents.length === 0 ? {} : { attachmentIds: documents.map((i) => providerFiles[i]) }),
      });
      if (plan.status === 'outcome-acknowledged')
        await op(
          'sender',
          'acknowledge-outcome',
          acknowledgedByName === undefined ? {} : { acknowledgedByName },
        );
    }
    for (const note of plan.notes) {
      await op(note.by, 'notes', {
        content: note.content,
        ...(note.authorName ? { authorName: note.authorName } : {}),
      });
    }
    for (const [i, entry] of plan.ledger.entries()) {
      const current = await readAsSender(id);
      await t.ctx.ehrForwarding.recordAttempt({
        referralId: id,
        messageId: `${id}.v${String(current.version)}`,
        version: current.version as number,
        attempt: i + 1,
        startedAt: t.ctx.clock.now(),
        durationMs: entry.durationMs,
        sha256: entry.sha256,
        outcome: entry.outcome,
        httpStatus: entry.httpStatus,
        errorCode: entry.httpStatus === null ? entry.errorCode : null,
        reference: entry.reference,
        requestId: `fhir-property-${randomUUID()}`,
      });
    }
    return id;
  }

  const readAsSender = (id: string) =>
    call(
      t,
      t.sender,
      'GET',
      `/api/v1/referrals/${id}?requesterIdentifier=${REQUESTER}&institutionIdType=hci&institutionId=S1234A`,
    );

  /** What the API gives the caller: the referral (with its ETag), its forwarding ledger and its files. */
  async function apiView(who: TestParty, id: string) {
    const query = new URLSearchParams({ requesterIdentifier: REQUESTER, ...who.institution }).toString();
    const get = await t.request(who, { method: 'GET', url: `/api/v1/referrals/${id}?${query}` });
    expect(get.statusCode, get.body).toBe(200);
    const ledger = await call(t, who, 'GET', `/api/v1/referrals/${id}/ehr-submissions?${query}`);
    const attachments = await call(t, who, 'GET', `/api/v1/referrals/${id}/attachments?${query}`);
    return {
      attachments: (attachments as { data: AttachmentJson[] }).data,
      etag: get.headers.etag,
      referral: get.json<
        Record<string, unknown> & {
          status: Status;
          coreStatus: string;
          outcome?: OutcomeJson;
          appointments: { id: string; status: AppointmentStatus }[];
          notes: { content: string }[];
          patient: Record<string, string | null>;
          links: { url: string }[];
        }
      >(),
      ledger: (ledger as { data: { sha256?: string; messageId: string }[] }).data,
    };
  }

  function expectFaithful(read: FhirRead, api: Awaited<ReturnType<typeof apiView>>, plan: ReferralPlan) {
    const { bundle, res } = read;
    const { referral, ledger, attachments } = api;
    expect(res.headers.etag).toBe(api.etag);
    expect(referral.status).toBe(plan.status);
    const [request] = resourcesOf<ServiceRequest>(bundle, 'ServiceRequest');
    const [task] = resourcesOf<Task>(bundle, 'Task');
    expect(request?.status).toBe(REQUEST_STATUS[plan.status]);
    expect(task?.status).toBe(TASK_STATUS[plan.status]);
    expect(task?.businessStatus?.coding?.map((c) => c.code)).toEqual([plan.status, referral.coreStatus]);
    expect(request?.priority).toBe(referral.isUrgent === true ? 'urgent' : 'routine');

    const appointments = resourcesOf<Appointment>(bundle, 'Appointment');
    expect(appointments.map((a) => [a.identifier?.[0]?.value, a.status]).sort()).toEqual(
      referral.appointments.map((a) => [a.id, APPOINTMENT_STATUS[a.status]]).sort(),
    );
    expect(
      resourcesOf<Communication>(bundle, 'Communication').map((c) => c.payload?.[0]?.contentString ?? null),
    ).toEqual(referral.notes.map((n) => (n.content.trim() === '' ? null : n.content)));
    const hashes = resourcesOf<AuditEvent>(bundle, 'AuditEvent').map(
      (e) => e.entity?.flatMap((x) => x.detail ?? []).find((d) => d.type === 'sha256')?.valueString,
    );
    expect(hashes).toEqual(ledger.map((l) => l.sha256));

    // Each file, in the order it was added, as the list gives it; no scanner runs here, so all are current.
    expect(attachments).toHaveLength(plan.files.sender.length + plan.files.provider.length);
    const documents = resourcesOf<DocumentReference>(bundle, 'DocumentReference');
    expect(documents.map((d) => d.identifier?.[0]?.value)).toEqual(attachments.map((a) => a.id));
    for (const [i, file] of attachments.entries()) {
      expect(documents[i]).toMatchObject({
        status: 'current',
        docStatus: 'final',
        date: file.createdAt,
        identifier: [
          { value: file.id },
          { system: 'urn:ietf:rfc:3986', value: namedInformationOf(file.sha256) },
        ],
        content: [
          {
            attachment: {
              contentType: file.mediaType === 'text/plain' ? 'text/plain; charset=utf-8' : file.mediaType,
              size: file.sizeBytes,
              title: file.fileName,
              url: `/api/v1/referrals/${file.referralId}/attachments/${file.id}/content`,
            },
          },
        ],
      });
    }
    const urlOf = (attachmentId: string) =>
      bundle.entry.find((e) => e.resource === documents[attachments.findIndex((a) => a.id === attachmentId)])
        ?.fullUrl;
    const idsBy = (party: Party) => attachments.filter((a) => a.addedBy === party).map((a) => a.id);
    expect(request?.supportingInfo?.map((r) => r.reference) ?? []).toEqual(idsBy('sender').map(urlOf));

    // The outcome: its code is why the Task is completed, its summary and documents come first among
    // the outputs, and the provider's other files follow, each file once.
    const { outcome } = referral;
    expect(outcome === undefined).toBe(plan.outcome === undefined);
    const named = outcome?.attachmentIds ?? [];
    expect(
      task?.output?.map((o) => [o.type.coding?.[0]?.code, o.valueString ?? o.valueReference?.reference]) ??
        [],
    ).toEqual([
      ...(outcome?.summary == null ? [] : [['consult-summary', outcome.summary]]),
      ...named.map((fileId) => ['outcome-document', urlOf(fileId)]),
      ...idsBy('provider')
        .filter((fileId) => !named.includes(fileId))
        .map((fileId) => ['attachment', urlOf(fileId)]),
    ]);
    if (outcome === undefined) {
      expect(task?.executionPeriod).toBeUndefined();
    } else {
      expect(task?.statusReason).toEqual({
        coding: [
          { system: 'urn:refhub:fhir:CodeSystem:outcome', code: outcome.code, display: outcome.display },
        ],
        text: outcome.display,
      });
      expect(task?.executionPeriod).toEqual({ end: outcome.completedAt });
    }

    const [patient] = resourcesOf<Patient>(bundle, 'Patient');
    expect(patient?.identifier?.[0]?.value).toBe(referral.patient.uin ?? undefined);
    expect(patient?.birthDate).toBe(referral.patient.dob ?? undefined);
    expect(patient?.gender).toBe(referral.patient.gender?.toLowerCase());
    const hci = resourcesOf<Organization>(bundle, 'Organization').map((o) => o.identifier?.[0]?.value);
    expect(hci).toContain('S1234A');
    if (plan.fields.offeringId !== undefined) expect(hci).toContain('S9001Z');

    // Nothing the API does not give this caller: every identifier, contact, text, content and title
    // comes from the referral, its ledger or its files as the API returns them (or names a status the
    // referral has, or is the name of a file's SHA-256 in RFC 6920's form).
    const given = leaves([referral, ledger, attachments]);
    for (const display of Object.values(CORE_STATUS_DISPLAY)) given.add(display);
    for (const file of attachments) given.add(namedInformationOf(file.sha256));
    for (const value of dataValues(bundle)) expect(given.has(value), value).toBe(true);
    for (const link of referral.links) expect(res.body).not.toContain(link.url);
    expect(res.body).not.toContain('fhir-property-');
  }

  it.each(LIVE_STATUSES)('is valid and faithful for referrals in %s', async (status) => {
    await fc.assert(
      fc.asyncProperty(planFor(status), async (plan) => {
        const id = await make(plan);
        const asSender = await readFhir(t, t.sender, id);
        expectFaithful(asSender, await apiView(t.sender, id), plan);
        if (status !== 'draft') {
          const asProvider = await readFhir(t, t.provider, id);
          expectFaithful(asProvider, await apiView(t.provider, id), plan);
          expect(asProvider.bundle.entry.map((e) => e.fullUrl)).toEqual(
            asSender.bundle.entry.map((e) => e.fullUrl),
          );
        }
      }),
      // Each run makes a referral over the API; a failure is reported as found, without shrinking.
      { numRuns: RUNS_PER_STATUS, endOnFailure: true },
    );
  });
});
