// The FHIR view as a pure function of what the API returns: each refhub field lands in the element
// docs/fhir.md names, each status and appointment status maps as its table says, ids are stable, and
// every bundle passes the R4 validator with required bindings and references checked.
import type {
  Appointment,
  ExtractResource,
  ResourceType,
  AuditEvent,
  Communication,
  DocumentReference,
  Organization,
  Patient,
  Practitioner,
  PractitionerRole,
  Resource,
  ServiceRequest,
  Task,
} from '@medplum/fhirtypes';
import { beforeAll, describe, expect, it } from 'vitest';
import type { OutcomeView } from '../../../src/domain/outcome.ts';
import type { NoteView } from '../../../src/domain/referral-view.ts';
import { APPOINTMENT_STATUSES, CORE_STATUS_OF, STATUSES, type Status } from '../../../src/domain/statuses.ts';
import type {
  AttachmentSource,
  EhrDeliveryAttempt,
  ReferralSource,
} from '../../../src/render/fhir/fhir-view-source.ts';
import { referralBundleOf, type ReferralBundle } from '../../../src/render/fhir/referral-bundle.mapping.ts';
import { bundleIssues, loadFhirR4 } from '../../support/fhir-validation.ts';
import { sampleEhrFormSource, sampleOffering } from '../../support/fixtures/ehr-form-source.ts';

const ASSEMBLED_AT = new Date('2026-06-05T00:00:00.000Z');
const SENDER = { idType: 'hci', id: '10C0001', name: 'Bukit Clinic' };
const PROVIDER = { idType: 'hci', id: '20M0001', name: 'Tan Tock Seng Hospital' };

function bundleOf(
  referral: ReferralSource,
  deliveries: readonly EhrDeliveryAttempt[] = [],
  attachments: readonly AttachmentSource[] = [],
): ReferralBundle {
  const bundle = referralBundleOf({ referral, deliveries, attachments, assembledAt: ASSEMBLED_AT });
  expect(bundleIssues(bundle)).toEqual([]);
  return bundle;
}

function all<T extends Resource>(bundle: ReferralBundle, type: T['resourceType']): T[] {
  return bundle.entry.map((e) => e.resource).filter((r) => r.resourceType === type) as unknown as T[];
}

function one<T extends Resource>(bundle: ReferralBundle, type: T['resourceType']): T {
  const found = all<T>(bundle, type);
  expect(found, type).toHaveLength(1);
  return found[0]!;
}

/** The entry a reference points at, which must be of `type`. */
function resolve<K extends ResourceType>(
  bundle: ReferralBundle,
  reference: { reference?: string } | undefined,
  type: K,
): ExtractResource<K> {
  const entry = bundle.entry.find((e) => e.fullUrl === reference?.reference);
  expect(entry?.resource.resourceType, reference?.reference).toBe(type);
  return entry!.resource as ExtractResource<K>;
}

/** The entry a reference points at, of whatever type. */
function resolveAny(bundle: ReferralBundle, reference: { reference?: string } | undefined): Resource {
  const entry = bundle.entry.find((e) => e.fullUrl === reference?.reference);
  expect(entry, reference?.reference).toBeDefined();
  return entry!.resource;
}

function inStatus(status: Status, overrides: Partial<ReferralSource> = {}): ReferralSource {
  return sampleEhrFormSource({
    status,
    coreStatus: CORE_STATUS_OF[status],
    ...(status === 'draft' ? { submittedAt: undefined } : {}),
    appointments: status === 'scheduled' ? sampleEhrFormSource().appointments : [],
    ...overrides,
  });
}

const attempt = (overrides: Partial<EhrDeliveryAttempt> = {}): EhrDeliveryAttempt => ({
  id: '0197a2b0-4000-7000-8000-000000000001',
  messageId: '0197a2b0-1234-7abc-8def-0123456789ab.v3',
  version: 3,
  attempt: 1,
  attemptedAt: '2026-06-04T03:15:00.000Z',
  outcome: 'delivered',
  httpStatus: 201,
  sha256: 'ab'.repeat(32),
  ehrReference: 'EHR-0001',
  durationMs: 1250,
  ...overrides,
});

beforeAll(() => {
  loadFhirR4();
});

describe('the referral bundle', () => {
  it('is a collection, stamped when assembled, the ServiceRequest first, each entry at urn:uuid:<id>', () => {
    const bundle = bundleOf(sampleEhrFormSource());
    expect(bundle).toMatchObject({
      resourceType: 'Bundle',
      type: 'collection',
      timestamp: ASSEMBLED_AT.toISOString(),
    });
    expect(bundle.entry[0]?.resource.resourceType).toBe('ServiceRequest');
    expect(bundle.entry[1]?.resource.resourceType).toBe('Task');
    for (const { fullUrl, resource } of bundle.entry) expect(fullUrl).toBe(`urn:uuid:${resource.id}`);
    expect(new Set(bundle.entry.map((e) => e.fullUrl)).size).toBe(bundle.entry.length);
  });

  it('gives every resource the same id in every read, and other referrals other ids', () => {
    const source = sampleEhrFormSource({ notes: sampleEhrFormSource().notes });
    const ids = (b: ReferralBundle) => b.entry.map((e) => `${e.resource.resourceType}/${e.resource.id}`);
    const first = bundleOf(source);
    expect(ids(bundleOf(source))).toEqual(ids(first));
    expect(bundleOf(source).id).toBe(first.id);
    const other = bundleOf({ ...source, id: '0197a2b0-9999-7abc-8def-0123456789ab' });
    const byType = (b: ReferralBundle, type: string) =>
      b.entry.find((e) => e.resource.resourceType === type)?.resource.id;
    for (const type of [
      'ServiceRequest',
      'Task',
      'Patient',
      'Practitioner',
      'PractitionerRole',
      'Appointment',
    ]) {
      expect(byType(other, type), type).not.toBe(byType(first, type));
    }
    // An institution is one Organization everywhere; a patient is one per referral, whatever the NRIC.
    expect(all<Organization>(other, 'Organization').map((o) => o.id)).toEqual(
      all<Organization>(first, 'Organization').map((o) => o.id),
    );
    expect(one<Patient>(other, 'Patient').identifier).toEqual(one<Patient>(first, 'Patient').identifier);
  });
});

describe('the ServiceRequest and the Task', () => {
  const EXPECTED: Readonly<Record<Status, readonly [request: string, task: string]>> = {
    draft: ['draft', 'draft'],
    'pending-acceptance': ['active', 'requested'],
    accepted: ['active', 'accepted'],
    'sender-action-required': ['active', 'on-hold'],
    scheduled: ['active', 'in-progress'],
    rejected: ['revoked', 'rejected'],
    cancelled: ['revoked', 'cancelled'],
    completed: ['completed', 'completed'],
    'outcome-acknowledged': ['completed', 'completed'],
    redirected: ['revoked', 'cancelled'],
    archived: ['unknown', 'completed'],
  };

  it.each(STATUSES)(
    'map %s as the status table says, with refhub status and coreStatus as businessStatus',
    (status) => {
      const bundle = bundleOf(inStatus(status));
      const request = one<ServiceRequest>(bundle, 'ServiceRequest');
      const task = one<Task>(bundle, 'Task');
      expect([request.status, task.status]).toEqual(EXPECTED[status]);
      expect(request.intent).toBe('order');
      expect(task.intent).toBe('order');
      expect(task.businessStatus?.coding).toEqual([
        expect.objectContaining({ system: 'urn:refhub:fhir:CodeSystem:referral-status', code: status }),
        expect.objectContaining({
          system: 'urn:refhub:fhir:CodeSystem:core-status',
          code: CORE_STATUS_OF[status],
        }),
      ]);
      expect(resolve(bundle, task.focus, 'ServiceRequest')).toBe(request);
      expect(resolve(bundle, task.basedOn?.[0], 'ServiceRequest')).toBe(request);
      expect(resolve(bundle, task.for, 'Patient').resourceType).toBe('Patient');
      expect(task.code?.coding?.[0]).toMatchObject({ code: 'fulfill' });
    },
  );

  it('carry the offering, urgency, clinical information, submission time and referral ID', () => {
    const source = sampleEhrFormSource({ isUrgent: true });
    const request = one<ServiceRequest>(bundleOf(source), 'ServiceRequest');
    expect(request.identifier).toEqual([
      { use: 'official', system: 'urn:refhub:fhir:NamingSystem:referral-id', value: source.id },
    ]);
    expect(request.category).toEqual([
      { coding: [{ system: 'http://snomed.info/sct', code: '3457005', display: 'Patient referral' }] },
      {
        coding: [
          {
            system: 'urn:refhub:fhir:CodeSystem:offering-category',
            code: 'soc',
            display: 'Specialist Outpatient Clinic',
          },
        ],
      },
    ]);
    expect(request.code).toEqual({
      coding: [{ system: 'urn:refhub:fhir:CodeSystem:ehr-service-code', code: source.offering?.ehrCode }],
      text: source.offering?.specialty,
    });
    expect(request.priority).toBe('urgent');
    expect(one<Task>(bundleOf(source), 'Task').priority).toBe('urgent');
    expect(
      one<ServiceRequest>(bundleOf(sampleEhrFormSource({ isUrgent: false })), 'ServiceRequest').priority,
    ).toBe('routine');
    expect(request.reasonCode).toEqual([{ text: source.clinicalInfo }]);
    expect(request.authoredOn).toBe(source.submittedAt);
    expect(request.meta).toEqual({ versionId: String(source.version), lastUpdated: source.updatedAt });
  });

  it('send the request from the referring clinician at the sender to the provider', () => {
    const bundle = bundleOf(sampleEhrFormSource());
    const request = one<ServiceRequest>(bundle, 'ServiceRequest');
    const role = resolve(bundle, request.requester, 'PractitionerRole');
    expect(role.resourceType).toBe('PractitionerRole');
    expect(resolve(bundle, role.organization, 'Organization').identifier).toEqual([
      { use: 'official', system: 'https://fhir.synapxe.sg/NamingSystem/hci-code', value: SENDER.id },
    ]);
    expect(resolve(bundle, role.practitioner, 'Practitioner')).toMatchObject({
      name: [{ text: 'Dr Lim Mei Ling' }],
      identifier: [{ system: 'https://fhir.synapxe.sg/NamingSystem/mcr', value: 'M12345A' }],
    });
    expect(role.telecom).toEqual([
      { system: 'email', value: 'mei.ling@bukitclinic.example', use: 'work' },
      { system: 'phone', value: '+65 6123 4567', use: 'work' },
    ]);
    const performer = resolve(bundle, request.performer?.[0], 'Organization');
    expect(performer).toMatchObject({ name: PROVIDER.name, identifier: [{ value: PROVIDER.id }] });
    const task = one<Task>(bundle, 'Task');
    expect(resolve(bundle, task.requester, 'Organization').name).toBe(SENDER.name);
    expect(resolve(bundle, task.owner, 'Organization')).toBe(performer);
  });

  it('name the sender as requester when no clinician is known, and a role without a Practitioner for contacts only', () => {
    const none = { id: null, idType: null, name: null, email: null, contactNumber: null };
    let bundle = bundleOf(sampleEhrFormSource({ referrer: none }));
    expect(
      resolve(bundle, one<ServiceRequest>(bundle, 'ServiceRequest').requester, 'Organization').name,
    ).toBe(SENDER.name);
    expect(all(bundle, 'PractitionerRole')).toEqual([]);
    expect(all(bundle, 'Practitioner')).toEqual([]);
    bundle = bundleOf(sampleEhrFormSource({ referrer: { ...none, email: 'desk@clinic.example' } }));
    expect(one<PractitionerRole>(bundle, 'PractitionerRole').practitioner).toBeUndefined();
    expect(all(bundle, 'Practitioner')).toEqual([]);
  });

  it.each([
    ['mcr', 'https://fhir.synapxe.sg/NamingSystem/mcr'],
    ['dcr', 'https://fhir.synapxe.sg/NamingSystem/dcr'],
    ['nric', 'https://fhir.synapxe.sg/NamingSystem/nric'],
    ['email', 'urn:refhub:fhir:NamingSystem:referrer-email'],
    ['brightUserId', 'urn:refhub:fhir:NamingSystem:bright-user-id'],
  ])('identify a referrer by %s under %s', (idType, system) => {
    const referrer = { ...sampleEhrFormSource().referrer, idType, id: 'X-1' };
    expect(one<Practitioner>(bundleOf(sampleEhrFormSource({ referrer })), 'Practitioner').identifier).toEqual(
      [{ system, value: 'X-1' }],
    );
  });

  it('date the Task by the referral: created, and last changed unless the stored times disagree', () => {
    const source = sampleEhrFormSource();
    expect(one<Task>(bundleOf(source), 'Task')).toMatchObject({
      authoredOn: source.createdAt,
      lastModified: source.updatedAt,
    });
    // R4 wants lastModified ≥ authoredOn (inv-1): a clock that was behind leaves lastModified out.
    const skewed = one<Task>(bundleOf({ ...source, updatedAt: '2026-05-31T23:59:59.999Z' }), 'Task');
    expect(skewed.authoredOn).toBe(source.createdAt);
    expect(skewed.lastModified).toBeUndefined();
  });

  it('leave out what a draft without an offering does not have', () => {
    const bundle = bundleOf(inStatus('draft', { offering: null, clinicalInfo: null }));
    const request = one<ServiceRequest>(bundle, 'ServiceRequest');
    expect(request.performer).toBeUndefined();
    expect(request.code).toBeUndefined();
    expect(request.authoredOn).toBeUndefined();
    expect(request.reasonCode).toBeUndefined();
    expect(request.category).toHaveLength(1);
    expect(one<Task>(bundle, 'Task').owner).toBeUndefined();
    expect(all(bundle, 'Organization')).toHaveLength(1);
  });

  it.each(['rejected', 'cancelled', 'sender-action-required'] as const)(
    'give the reason of the latest %s event as the Task statusReason',
    (status) => {
      const event = (n: number, type: string) => ({
        id: `0197a2b0-5000-7000-8000-00000000000${n}`,
        type,
        system: 'Epic',
        description: `Sentence ${n}.`,
        producedAt: `2026-06-0${n}T00:00:00.000Z`,
      });
      // The event the lifecycle table writes on entering the status.
      const type = `referral.${status}`;
      const task = one<Task>(
        bundleOf(
          inStatus(status, { timelineEvents: [event(1, type), event(2, type), event(3, 'note.created')] }),
        ),
        'Task',
      );
      expect(task.statusReason).toEqual({ text: 'Sentence 2.' });
      expect(one<Task>(bundleOf(inStatus('accepted')), 'Task').statusReason).toBeUndefined();
    },
  );
});

describe('the Patient', () => {
  it('carries NRIC/FIN, name, birth date, gender, phone, nationality and residential status', () => {
    const patient = one<Patient>(bundleOf(sampleEhrFormSource()), 'Patient');
    expect(patient).toEqual({
      resourceType: 'Patient',
      id: patient.id,
      extension: [
        {
          url: 'http://hl7.org/fhir/StructureDefinition/patient-nationality',
          extension: [
            {
              url: 'code',
              valueCodeableConcept: {
                coding: [{ system: 'urn:iso:std:iso:3166', code: 'SG', display: 'Singapore' }],
              },
            },
          ],
        },
        {
          url: 'urn:refhub:fhir:StructureDefinition:residential-status',
          valueCoding: {
            system: 'urn:refhub:fhir:CodeSystem:residential-status',
            code: 'SC',
            display: 'Singapore Citizen',
          },
        },
      ],
      identifier: [
        { use: 'official', system: 'https://fhir.synapxe.sg/NamingSystem/nric', value: 'S1234567D' },
      ],
      name: [{ text: 'Tan Ah Kow' }],
      telecom: [{ system: 'phone', value: '+65 9123 4567' }],
      gender: 'male',
      birthDate: '1958-03-14',
    });
    const female = sampleEhrFormSource({ patient: { ...sampleEhrFormSource().patient, gender: 'Female' } });
    expect(one<Patient>(bundleOf(female), 'Patient').gender).toBe('female');
  });

  it('is present, and valid, when the referral knows nothing about the patient', () => {
    const patient = {
      uin: null,
      name: null,
      dob: null,
      gender: null,
      nationality: null,
      phoneNumber: null,
      residentialStatus: null,
    };
    expect(one<Patient>(bundleOf(inStatus('draft', { patient })), 'Patient')).toEqual({
      resourceType: 'Patient',
      id: expect.any(String) as unknown,
    });
  });
});

describe('the appointments', () => {
  const EXPECTED = {
    scheduled: 'booked',
    actualized: 'fulfilled',
    'no-show': 'noshow',
    cancelled: 'cancelled',
  };

  it.each(APPOINTMENT_STATUSES)('map %s, at a Location of the provider, with the patient', (status) => {
    const view = { ...sampleEhrFormSource().appointments[0]!, status };
    const bundle = bundleOf(inStatus('scheduled', { appointments: [view] }));
    const appointment = one<Appointment & { _end?: unknown }>(bundle, 'Appointment');
    expect(appointment.status).toBe(EXPECTED[status]);
    expect(appointment.start).toBe(view.startAt);
    // refhub records no end: R4 wants one with a start, so it is there as unknown.
    expect(appointment.end).toBeUndefined();
    expect(appointment._end).toEqual({
      extension: [
        { url: 'http://hl7.org/fhir/StructureDefinition/data-absent-reason', valueCode: 'unknown' },
      ],
    });
    expect(appointment.identifier).toEqual([expect.objectContaining({ value: view.id })]);
    expect(resolve(bundle, appointment.basedOn?.[0], 'ServiceRequest').resourceType).toBe('ServiceRequest');
    const [patient, place] = appointment.participant.map((p) => resolveAny(bundle, p.actor));
    expect(patient?.resourceType).toBe('Patient');
    expect(place).toMatchObject({ resourceType: 'Location', name: view.location, mode: 'instance' });
    expect(
      resolve(bundle, (place as { managingOrganization?: object }).managingOrganization, 'Organization').name,
    ).toBe(PROVIDER.name);
  });

  it('keeps one Appointment and one Location per appointment', () => {
    const [first] = sampleEhrFormSource().appointments;
    const appointments = ['a-1', 'a-2', 'a-3'].map((id) => ({ ...first!, id }));
    const bundle = bundleOf(inStatus('scheduled', { appointments }));
    expect(all(bundle, 'Appointment')).toHaveLength(3);
    expect(all(bundle, 'Location')).toHaveLength(3);
  });
});

describe('the notes', () => {
  const note = (overrides: Partial<NoteView>): NoteView => ({
    id: '0197a2b0-3000-7000-8000-000000000009',
    content: 'Please bring the old scans.',
    authorName: 'Dr Wong',
    authorInstitution: PROVIDER,
    createdAt: '2026-06-03T05:00:00.000Z',
    ...overrides,
  });

  it('are Communications from the author institution to the other party, about the referral', () => {
    const notes = [
      note({ authorInstitution: PROVIDER }),
      note({ id: '0197a2b0-3000-7000-8000-00000000000a', authorInstitution: SENDER, authorName: null }),
    ];
    const bundle = bundleOf(sampleEhrFormSource({ notes }));
    const [fromProvider, fromSender] = all<Communication>(bundle, 'Communication');
    expect(fromProvider).toMatchObject({
      status: 'completed',
      sent: notes[0]!.createdAt,
      payload: [{ contentString: notes[0]!.content }],
      extension: [{ url: 'urn:refhub:fhir:StructureDefinition:note-author-name', valueString: 'Dr Wong' }],
    });
    expect(resolve(bundle, fromProvider?.sender, 'Organization').name).toBe(PROVIDER.name);
    expect(resolve(bundle, fromProvider?.recipient?.[0], 'Organization').name).toBe(SENDER.name);
    expect(resolve(bundle, fromProvider?.about?.[0], 'ServiceRequest').resourceType).toBe('ServiceRequest');
    expect(fromSender?.extension).toBeUndefined();
    expect(resolve(bundle, fromSender?.sender, 'Organization').name).toBe(SENDER.name);
    expect(resolve(bundle, fromSender?.recipient?.[0], 'Organization').name).toBe(PROVIDER.name);
    expect(all(bundle, 'Organization')).toHaveLength(2);
  });

  it('keep a note of blanks without a payload, since a FHIR string needs a character', () => {
    const bundle = bundleOf(sampleEhrFormSource({ notes: [note({ content: ' \n\t ' })] }));
    expect(one<Communication>(bundle, 'Communication').payload).toBeUndefined();
  });
});

describe('the EHR deliveries', () => {
  it.each([
    ['delivered', '0', 'Delivered to the national EHR: the EHR answered HTTP 201, reference EHR-0001.'],
    ['retrying', '4', 'Not delivered: the EHR answered HTTP 503. refhub tries again.'],
    ['failed', '8', 'Not delivered: the EHR answered HTTP 422. refhub gave up on this forward.'],
  ] as const)('record a %s attempt as an AuditEvent with outcome %s', (outcome, code, description) => {
    const httpStatus = { delivered: 201, retrying: 503, failed: 422 }[outcome];
    const ledger = [
      attempt({ outcome, httpStatus, ...(outcome === 'delivered' ? {} : { ehrReference: undefined }) }),
    ];
    const bundle = bundleOf(sampleEhrFormSource(), ledger);
    const event = one<AuditEvent>(bundle, 'AuditEvent');
    expect(event).toMatchObject({
      type: { system: 'http://dicom.nema.org/resources/ontology/DCM', code: '110106', display: 'Export' },
      outcome: code,
      outcomeDesc: description,
      period: { start: '2026-06-04T03:15:00.000Z', end: '2026-06-04T03:15:01.250Z' },
      recorded: '2026-06-04T03:15:01.250Z',
    });
    const form = event.entity?.find(
      (e) => e.what?.identifier?.system === 'urn:refhub:fhir:NamingSystem:ehr-message-id',
    );
    expect(form?.what?.identifier?.value).toBe(ledger[0]!.messageId);
    expect(form?.detail).toEqual([
      { type: 'referral-version', valueString: '3' },
      { type: 'attempt', valueString: '1' },
      { type: 'sha256', valueString: ledger[0]!.sha256 },
    ]);
    const targets = (event.entity ?? []).flatMap((e) =>
      e.what?.reference ? [resolveAny(bundle, e.what).resourceType] : [],
    );
    expect(targets).toEqual(['Patient', 'ServiceRequest']);
    const reference = event.entity?.find(
      (e) => e.what?.identifier?.system === 'urn:refhub:fhir:NamingSystem:ehr-reference',
    );
    expect(reference?.what?.identifier?.value).toBe(outcome === 'delivered' ? 'EHR-0001' : undefined);
  });

  it('say why no answer came, and leave out a hash that was not taken', () => {
    const event = one<AuditEvent>(
      bundleOf(sampleEhrFormSource(), [
        attempt({
          outcome: 'retrying',
          httpStatus: undefined,
          errorCode: 'ECONNRESET',
          sha256: undefined,
          ehrReference: undefined,
        }),
      ]),
      'AuditEvent',
    );
    expect(event.outcomeDesc).toBe(
      'Not delivered: no answer came from the EHR (ECONNRESET). refhub tries again.',
    );
    expect(JSON.stringify(event)).not.toContain('sha256');
  });

  it('keep one AuditEvent per attempt, in ledger order', () => {
    const ledger = [1, 2, 3].map((n) =>
      attempt({
        id: `0197a2b0-4000-7000-8000-00000000000${n}`,
        attempt: n,
        outcome: n < 3 ? 'retrying' : 'delivered',
      }),
    );
    expect(
      all<AuditEvent>(bundleOf(sampleEhrFormSource(), ledger), 'AuditEvent').map((e) => e.outcome),
    ).toEqual(['4', '4', '0']);
  });
});

describe('the attachments', () => {
  const REFERRAL_ID = sampleEhrFormSource().id;
  // The SHA-256 of no bytes, whose base64 has both characters base64url replaces (+ and /) and padding.
  const EMPTY_SHA256 = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';
  const file = (overrides: Partial<AttachmentSource> = {}): AttachmentSource => ({
    id: '0197a2b0-6000-7000-8000-000000000001',
    referralId: REFERRAL_ID,
    number: 1,
    fileName: 'Tan Ah Kow ECG.pdf',
    mediaType: 'application/pdf',
    sizeBytes: 48213,
    sha256: EMPTY_SHA256,
    scanState: 'available',
    available: true,
    scannedAt: '2026-06-02T08:00:05.000Z',
    addedBy: 'sender',
    authorInstitution: SENDER,
    createdAt: '2026-06-02T08:00:00.000Z',
    ...overrides,
  });
  const letter = file({
    id: '0197a2b0-6000-7000-8000-000000000002',
    number: 2,
    fileName: 'consultation letter.txt',
    mediaType: 'text/plain',
    sizeBytes: 812,
    sha256: 'ab'.repeat(32),
    addedBy: 'provider',
    authorInstitution: PROVIDER,
    createdAt: '2026-06-05T02:00:00.000Z',
  });

  it('are a DocumentReference each, about the patient, by the institution that attached it, for the referral', () => {
    const ecg = file();
    const bundle = bundleOf(sampleEhrFormSource(), [], [ecg, letter]);
    const [fromSender, fromProvider] = all<DocumentReference>(bundle, 'DocumentReference');
    expect(fromSender).toEqual({
      resourceType: 'DocumentReference',
      id: fromSender?.id,
      identifier: [
        { use: 'official', system: 'urn:refhub:fhir:NamingSystem:attachment-id', value: ecg.id },
        { system: 'urn:ietf:rfc:3986', value: 'ni:///sha-256;47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU' },
      ],
      status: 'current',
      docStatus: 'final',
      subject: { reference: expect.stringMatching(/^urn:uuid:/) as unknown, type: 'Patient' },
      date: ecg.createdAt,
      author: [expect.objectContaining({ type: 'Organization', display: SENDER.name })],
      content: [
        {
          attachment: {
            contentType: 'application/pdf',
            url: `/api/v1/referrals/${REFERRAL_ID}/attachments/${ecg.id}/content`,
            size: 48213,
            title: 'Tan Ah Kow ECG.pdf',
          },
        },
      ],
      context: { related: [{ reference: bundle.entry[0]!.fullUrl, type: 'ServiceRequest' }] },
    });
    // No SHA-1 hash is claimed, and the SHA-256 is nowhere but in the identifier.
    expect(fromSender?.content[0]?.attachment.hash).toBeUndefined();
    expect(JSON.stringify(bundle)).not.toContain(EMPTY_SHA256);
    expect(resolve(bundle, fromSender?.subject, 'Patient')).toBe(one<Patient>(bundle, 'Patient'));
    expect(resolve(bundle, fromSender?.author?.[0], 'Organization').name).toBe(SENDER.name);
    expect(resolve(bundle, fromProvider?.author?.[0], 'Organization').name).toBe(PROVIDER.name);
    expect(resolve(bundle, fromProvider?.context?.related?.[0], 'ServiceRequest').resourceType).toBe(
      'ServiceRequest',
    );
    // Plain text is served as UTF-8, and says so.
    expect(fromProvider?.content[0]?.attachment.contentType).toBe('text/plain; charset=utf-8');
    expect(fromProvider?.identifier?.[1]?.value).toBe(
      `ni:///sha-256;${Buffer.from(letter.sha256, 'hex').toString('base64url')}`,
    );
    // One Organization per institution, however many roles it plays.
    expect(all(bundle, 'Organization')).toHaveLength(2);
  });

  it('list the sender’s documents as the request’s supportingInfo, and the provider’s as the Task’s output', () => {
    const second = file({ id: '0197a2b0-6000-7000-8000-000000000003', number: 3 });
    const bundle = bundleOf(sampleEhrFormSource(), [], [file(), letter, second]);
    const documents = all<DocumentReference>(bundle, 'DocumentReference');
    const request = one<ServiceRequest>(bundle, 'ServiceRequest');
    expect(request.supportingInfo?.map((r) => resolve(bundle, r, 'DocumentReference'))).toEqual([
      documents[0],
      documents[2],
    ]);
    const task = one<Task>(bundle, 'Task');
    expect(task.output).toEqual([
      {
        type: {
          coding: [
            {
              system: 'urn:refhub:fhir:CodeSystem:task-output-type',
              code: 'attachment',
              display: 'Attachment',
            },
          ],
        },
        valueReference: { reference: `urn:uuid:${documents[1]!.id}`, type: 'DocumentReference' },
      },
    ]);
    // After the notes and before the EHR deliveries, in the order the files were added.
    const types = bundleOf(sampleEhrFormSource(), [attempt()], [file(), letter]).entry.map(
      (e) => e.resource.resourceType,
    );
    expect(types.slice(-3)).toEqual(['DocumentReference', 'DocumentReference', 'AuditEvent']);
    expect(types.indexOf('Communication')).toBeLessThan(types.indexOf('DocumentReference'));
  });

  it('keep a file waiting for its scan, or never scanned, current with its URL', () => {
    for (const scanState of ['pending-scan', 'not-scanned'] as const) {
      const bundle = bundleOf(sampleEhrFormSource(), [], [file({ scanState, scannedAt: undefined })]);
      const document = one<DocumentReference>(bundle, 'DocumentReference');
      expect(document).toMatchObject({ status: 'current', docStatus: 'final' });
      expect(document.content[0]?.attachment.url).toMatch(/\/content$/);
      expect(one<ServiceRequest>(bundle, 'ServiceRequest').supportingInfo).toHaveLength(1);
    }
  });

  it('mark a file the scanner rejected entered-in-error, with no URL, supporting nothing', () => {
    const rejected = [
      file({ scanState: 'rejected', available: false }),
      { ...letter, scanState: 'rejected' as const },
    ];
    const bundle = bundleOf(sampleEhrFormSource(), [], rejected);
    const documents = all<DocumentReference>(bundle, 'DocumentReference');
    expect(documents).toHaveLength(2);
    for (const document of documents) {
      expect(document.status).toBe('entered-in-error');
      expect(document.docStatus).toBeUndefined();
      expect(document.content[0]?.attachment).not.toHaveProperty('url');
      // Still saying which file it was, so the sender can send a clean copy.
      expect(document.content[0]?.attachment.title).toBeDefined();
      expect(document.identifier?.map((i) => i.system)).toContain('urn:ietf:rfc:3986');
    }
    expect(one<ServiceRequest>(bundle, 'ServiceRequest').supportingInfo).toBeUndefined();
    expect(one<Task>(bundle, 'Task').output).toBeUndefined();
  });

  it('give each file the same id in every read, and leave out what a referral without files lacks', () => {
    const ids = (b: ReferralBundle) => all<DocumentReference>(b, 'DocumentReference').map((d) => d.id);
    expect(ids(bundleOf(sampleEhrFormSource(), [], [file(), letter]))).toEqual(
      ids(bundleOf(sampleEhrFormSource(), [], [file(), letter])),
    );
    expect(new Set(ids(bundleOf(sampleEhrFormSource(), [], [file(), letter]))).size).toBe(2);
    const bundle = bundleOf(sampleEhrFormSource());
    expect(all(bundle, 'DocumentReference')).toEqual([]);
    expect(one<ServiceRequest>(bundle, 'ServiceRequest').supportingInfo).toBeUndefined();
    expect(one<Task>(bundle, 'Task').output).toBeUndefined();
  });

  it('leave out a digest that is not a SHA-256, rather than alter it', () => {
    const document = one<DocumentReference>(
      bundleOf(sampleEhrFormSource(), [], [file({ sha256: 'not-a-digest' })]),
      'DocumentReference',
    );
    expect(document.identifier).toEqual([
      { use: 'official', system: 'urn:refhub:fhir:NamingSystem:attachment-id', value: file().id },
    ]);
  });
});

describe('the outcome', () => {
  const REFERRAL_ID = sampleEhrFormSource().id;
  const providerFile = (n: number, overrides: Partial<AttachmentSource> = {}): AttachmentSource => ({
    id: `0197a2b0-7000-7000-8000-00000000000${n}`,
    referralId: REFERRAL_ID,
    number: n,
    fileName: `consultation letter ${n}.pdf`,
    mediaType: 'application/pdf',
    sizeBytes: 1000 + n,
    sha256: String(n).repeat(64),
    scanState: 'available',
    available: true,
    addedBy: 'provider',
    authorInstitution: PROVIDER,
    createdAt: `2026-06-0${n}T02:00:00.000Z`,
    ...overrides,
  });
  const ecg = providerFile(1, { fileName: 'ecg.pdf', addedBy: 'sender', authorInstitution: SENDER });
  const [scan, letter, addendum] = [2, 3, 4].map((n) => providerFile(n));
  const outcome = (overrides: Partial<OutcomeView> = {}): OutcomeView => ({
    code: 'seen-discharged',
    display: 'Seen and discharged to the referring clinic',
    summary: 'Gastroscopy normal.\nContinue omeprazole for four weeks.',
    attachmentIds: [addendum!.id, letter!.id],
    completedByName: 'Dr Wong',
    completedAt: '2026-06-05T01:00:00.000Z',
    ...overrides,
  });
  const completed = (status: 'completed' | 'outcome-acknowledged', overrides: Partial<OutcomeView> = {}) =>
    inStatus(status, {
      outcome: {
        ...outcome(overrides),
        ...(status === 'outcome-acknowledged'
          ? { acknowledgedAt: '2026-06-06T01:00:00.000Z', acknowledgedByName: 'Dr Lim' }
          : {}),
      },
    });
  const typeOf = (code: string, display: string) => ({
    coding: [{ system: 'urn:refhub:fhir:CodeSystem:task-output-type', code, display }],
  });

  it.each(['completed', 'outcome-acknowledged'] as const)(
    'is the %s Task’s statusReason: the outcome code, in words, ended when the provider completed it',
    (status) => {
      const task = one<Task>(bundleOf(completed(status)), 'Task');
      expect(task.status).toBe('completed');
      expect(task.statusReason).toEqual({
        coding: [
          {
            system: 'urn:refhub:fhir:CodeSystem:outcome',
            code: 'seen-discharged',
            display: 'Seen and discharged to the referring clinic',
          },
        ],
        text: 'Seen and discharged to the referring clinic',
      });
      expect(task.executionPeriod).toEqual({ end: '2026-06-05T01:00:00.000Z' });
      // Whether the sender has read it is refhub's status, under the same core status.
      expect(task.businessStatus).toEqual({
        coding: [
          {
            system: 'urn:refhub:fhir:CodeSystem:referral-status',
            code: status,
            display: status === 'completed' ? 'Completed' : 'Outcome acknowledged',
          },
          { system: 'urn:refhub:fhir:CodeSystem:core-status', code: 'completed', display: 'Completed' },
        ],
        text: 'Completed',
      });
    },
  );

  it('puts the consult summary and the outcome’s documents first in Task.output, and lists each file once', () => {
    const bundle = bundleOf(completed('completed'), [], [ecg, scan!, letter!, addendum!]);
    const task = one<Task>(bundle, 'Task');
    const documents = all<DocumentReference>(bundle, 'DocumentReference');
    const at = (file: AttachmentSource) => {
      const document = documents.find((d) => d.identifier?.[0]?.value === file.id);
      return { reference: `urn:uuid:${document!.id}`, type: 'DocumentReference' };
    };
    expect(task.output).toEqual([
      {
        type: typeOf('consult-summary', 'Consult summary'),
        valueString: 'Gastroscopy normal.\nContinue omeprazole for four weeks.',
      },
      // In the order the provider named them, then its other files in the order they were added.
      { type: typeOf('outcome-document', 'Outcome document'), valueReference: at(addendum!) },
      { type: typeOf('outcome-document', 'Outcome document'), valueReference: at(letter!) },
      { type: typeOf('attachment', 'Attachment'), valueReference: at(scan!) },
    ]);
    // The sender's file supports the request and is no output.
    expect(one<ServiceRequest>(bundle, 'ServiceRequest').supportingInfo).toEqual([at(ecg)]);
  });

  it('has no summary output without a summary, and no output for a document the scanner rejected', () => {
    const rejected = { ...letter!, scanState: 'rejected' as const, available: false };
    const bundle = bundleOf(
      completed('outcome-acknowledged', {
        code: 'did-not-attend',
        display: 'Patient did not attend',
        summary: null,
      }),
      [],
      [rejected, addendum!],
    );
    const task = one<Task>(bundle, 'Task');
    expect(task.output?.map((o) => o.type.coding?.[0]?.code)).toEqual(['outcome-document']);
    expect(
      resolve(bundle, task.output?.[0]?.valueReference, 'DocumentReference').identifier?.[0]?.value,
    ).toBe(addendum!.id);
    expect(task.statusReason?.coding?.[0]?.code).toBe('did-not-attend');
  });

  it('names an outcome by its code alone when its words are blank, and by nothing when the code is no FHIR code', () => {
    let task = one<Task>(bundleOf(completed('completed', { display: '  ' })), 'Task');
    expect(task.statusReason).toEqual({
      coding: [{ system: 'urn:refhub:fhir:CodeSystem:outcome', code: 'seen-discharged' }],
    });
    task = one<Task>(bundleOf(completed('completed', { code: ' seen  ', display: 'Seen' })), 'Task');
    expect(task.statusReason).toEqual({ text: 'Seen' });
  });

  it('is absent, with its statusReason and end, from a referral without one', () => {
    for (const status of ['accepted', 'scheduled', 'completed'] as const) {
      const task = one<Task>(bundleOf(inStatus(status), [], [letter!]), 'Task');
      expect(task.statusReason).toBeUndefined();
      expect(task.executionPeriod).toBeUndefined();
      expect(task.output?.map((o) => o.type.coding?.[0]?.code)).toEqual(['attachment']);
    }
  });
});

describe('values FHIR cannot carry', () => {
  it('are left out of their element, never altered, and the bundle stays valid', () => {
    const offering = sampleOffering('soc', {
      ehrCode: ' GASTRO  SOC',
      specialty: '  ',
      institution: { idType: 'moh', id: 'X1', name: 'Ministry' },
    });
    const patient = { ...sampleEhrFormSource().patient, dob: '0000-01-01', name: ' ' };
    const [first] = sampleEhrFormSource().appointments;
    const bundle = bundleOf(
      inStatus('scheduled', { offering, patient, appointments: [{ ...first!, location: '   ' }] }),
    );
    const request = one<ServiceRequest>(bundle, 'ServiceRequest');
    expect(request.code).toBeUndefined();
    expect(one<Patient>(bundle, 'Patient').birthDate).toBeUndefined();
    expect(one<Patient>(bundle, 'Patient').name).toBeUndefined();
    expect(one<{ name?: string } & Resource>(bundle, 'Location').name).toBeUndefined();
    // An institution type with no Singapore naming system gets refhub's own.
    expect(resolve(bundle, request.performer?.[0], 'Organization').identifier).toEqual([
      { use: 'official', system: 'urn:refhub:fhir:NamingSystem:institution-moh', value: 'X1' },
    ]);
  });
});

describe('the validator the tests rely on', () => {
  it('finds a code outside a required value set, a dangling reference and a wrong target type', () => {
    const bundle = structuredClone(
      referralBundleOf({
        referral: sampleEhrFormSource(),
        deliveries: [],
        attachments: [],
        assembledAt: ASSEMBLED_AT,
      }),
    );
    const request = bundle.entry[0]!.resource as ServiceRequest;
    (request as { status: string }).status = 'pending';
    request.subject = { reference: 'urn:uuid:00000000-0000-4000-8000-000000000000' };
    request.performer = [{ reference: bundle.entry[1]!.fullUrl }];
    const messages = bundleIssues(bundle).map((i) => i.message);
    expect(messages).toContain('pending is not in http://hl7.org/fhir/ValueSet/request-status|4.0.1');
    expect(messages).toContain('urn:uuid:00000000-0000-4000-8000-000000000000 is not an entry of the bundle');
    expect(messages.some((m) => m.startsWith('points at a Task; allowed:'))).toBe(true);
  });

  it('finds a content type that is no media type', () => {
    const bundle = structuredClone(
      referralBundleOf({
        referral: sampleEhrFormSource(),
        deliveries: [],
        attachments: [
          {
            id: '0197a2b0-6000-7000-8000-000000000001',
            referralId: sampleEhrFormSource().id,
            number: 1,
            fileName: 'ecg.pdf',
            mediaType: 'application/pdf',
            sizeBytes: 10,
            sha256: 'ab'.repeat(32),
            scanState: 'available',
            available: true,
            addedBy: 'sender',
            authorInstitution: SENDER,
            createdAt: '2026-06-02T08:00:00.000Z',
          },
        ],
        assembledAt: ASSEMBLED_AT,
      }),
    );
    expect(bundleIssues(bundle)).toEqual([]);
    const document = bundle.entry.find((e) => e.resource.resourceType === 'DocumentReference')!
      .resource as DocumentReference;
    document.content[0]!.attachment.contentType = 'PDF document';
    expect(bundleIssues(bundle).map((i) => i.message)).toContain(
      'PDF document is not in http://hl7.org/fhir/ValueSet/mimetypes|4.0.1',
    );
  });

  it('finds what Medplum finds: a missing required element', () => {
    const bundle = structuredClone(
      referralBundleOf({
        referral: sampleEhrFormSource(),
        deliveries: [],
        attachments: [],
        assembledAt: ASSEMBLED_AT,
      }),
    );
    delete (bundle.entry[1]!.resource as Partial<Task>).intent;
    expect(bundleIssues(bundle).map((i) => i.message)).toContain('error: Missing required property');
  });
});
