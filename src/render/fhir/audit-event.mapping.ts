// Each attempt on the EHR forwarding ledger as an AuditEvent: a DICOM "Export" of the referral's form
// from refhub to the national EHR, with its outcome. An AuditEvent rather than a Provenance, because
// the ledger records attempts, failed ones included, and Provenance speaks only of activities that
// produced or changed a resource; a retried or refused delivery produced nothing.
//
// The SHA-256 of the bytes sent is a detail of the entity that stands for the form (identified by its
// message ID): FHIR R4 has no element for a SHA-256 (Attachment.hash is SHA-1, and a Signature is a
// signature, not a digest), and AuditEvent.entity.detail is made for such name/value facts.
import type { AuditEvent, AuditEventEntity, Coding, Patient, ServiceRequest } from '@medplum/fhirtypes';
import { fhirString } from './fhir-datatypes.ts';
import { FHIR_SYSTEMS, REFHUB_NAMING_SYSTEMS } from './fhir-systems.ts';
import type { EhrDeliveryAttempt } from './fhir-view-source.ts';
import { referenceTo, resourceIdOf, type Identified } from './resource-identity.ts';
import { DELIVERY_OUTCOME } from './status-mapping.ts';

const dicom = (code: string, display: string): Coding => ({ system: FHIR_SYSTEMS.dicom, code, display });
const entityType = (code: string, display: string) => ({
  system: FHIR_SYSTEMS.auditEntityType,
  code,
  display,
});
const objectRole = (code: string, display: string) => ({ system: FHIR_SYSTEMS.objectRole, code, display });

export interface AuditEventParties {
  readonly serviceRequest: Identified<ServiceRequest>;
  readonly patient: Identified<Patient>;
}

/** What happened, in words: the EHR's answer, or why there was none. */
export function deliveryDescription(attempt: EhrDeliveryAttempt): string {
  const errorCode = fhirString(attempt.errorCode);
  const reference = fhirString(attempt.ehrReference);
  const answer =
    attempt.httpStatus === undefined
      ? `no answer came from the EHR${errorCode === undefined ? '' : ` (${errorCode})`}`
      : `the EHR answered HTTP ${attempt.httpStatus}`;
  switch (attempt.outcome) {
    case 'delivered':
      return `Delivered to the national EHR: ${answer}${reference === undefined ? '' : `, reference ${reference}`}.`;
    case 'retrying':
      return `Not delivered: ${answer}. refhub tries again.`;
    case 'failed':
      return `Not delivered: ${answer}. refhub gave up on this forward.`;
  }
}

function formEntity(attempt: EhrDeliveryAttempt): AuditEventEntity {
  return {
    what: { identifier: { system: REFHUB_NAMING_SYSTEMS.ehrMessageId, value: attempt.messageId } },
    type: entityType('2', 'System Object'),
    role: objectRole('3', 'Report'),
    name: 'EHR referral form',
    detail: [
      { type: 'referral-version', valueString: String(attempt.version) },
      { type: 'attempt', valueString: String(attempt.attempt) },
      ...(attempt.sha256 === undefined ? [] : [{ type: 'sha256', valueString: attempt.sha256 }]),
    ],
  };
}

export function auditEventOf(
  attempt: EhrDeliveryAttempt,
  { serviceRequest, patient }: AuditEventParties,
): Identified<AuditEvent> {
  const endedAt = new Date(Date.parse(attempt.attemptedAt) + attempt.durationMs).toISOString();
  const reference = fhirString(attempt.ehrReference);
  return {
    resourceType: 'AuditEvent',
    id: resourceIdOf('AuditEvent', attempt.id),
    type: dicom('110106', 'Export'),
    // DICOM PS3.15's Data Export event records its action as R: data read out to leave the system.
    action: 'R',
    period: { start: attempt.attemptedAt, end: endedAt },
    recorded: endedAt,
    outcome: DELIVERY_OUTCOME[attempt.outcome],
    outcomeDesc: deliveryDescription(attempt),
    agent: [
      {
        type: { coding: [dicom('110153', 'Source Role ID')] },
        who: { display: 'refhub' },
        requestor: false,
      },
      {
        type: { coding: [dicom('110152', 'Destination Role ID')] },
        who: { display: 'National EHR' },
        requestor: false,
      },
    ],
    source: {
      observer: { display: 'refhub' },
      type: [{ system: FHIR_SYSTEMS.securitySourceType, code: '4', display: 'Application Server' }],
    },
    entity: [
      { what: referenceTo(patient), type: entityType('1', 'Person'), role: objectRole('1', 'Patient') },
      {
        what: referenceTo(serviceRequest),
        type: entityType('2', 'System Object'),
        role: objectRole('4', 'Domain Resource'),
      },
      formEntity(attempt),
      ...(reference === undefined
        ? []
        : [
            {
              what: { identifier: { system: REFHUB_NAMING_SYSTEMS.ehrReference, value: reference } },
              type: entityType('2', 'System Object'),
              role: objectRole('17', 'Data Repository'),
            },
          ]),
    ],
  };
}
