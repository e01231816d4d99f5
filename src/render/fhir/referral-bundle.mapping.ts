// A referral's FHIR view: one R4 Bundle of type `collection` holding the ServiceRequest, its Task,
// the parties, the appointments, the notes, the attachments and the EHR deliveries (docs/fhir.md). A
// pure function of what the API returns to the caller, so it is tested without a server and cannot
// read anything more.
//
// `collection`, not `document`: a document bundle is an attested, immutable composition (a Composition
// first, an author, a fixed identifier and date), while this is a live view of a referral that changes
// with every step of its lifecycle. The ETag names the referral version the view was read at.
import type { Bundle, DocumentReference, Organization, Resource, ServiceRequest } from '@medplum/fhirtypes';
import type { InstitutionView } from '../../domain/referral-view.ts';
import { appointmentOf } from './appointment.mapping.ts';
import { auditEventOf } from './audit-event.mapping.ts';
import { communicationOf } from './communication.mapping.ts';
import { documentReferenceOf, isPresentable } from './document-reference.mapping.ts';
import type { AttachmentSource, EhrDeliveryAttempt, ReferralSource } from './fhir-view-source.ts';
import { organizationOf, patientOf, referringClinicianOf } from './parties.mapping.ts';
import {
  fullUrlOf,
  referenceTo,
  referenceToRecord,
  resourceIdOf,
  type Identified,
} from './resource-identity.ts';
import { serviceRequestOf } from './service-request.mapping.ts';
import { taskOf } from './task.mapping.ts';

export interface ReferralBundleInput {
  readonly referral: ReferralSource;
  /** The referral's EHR forwarding ledger, oldest attempt first. */
  readonly deliveries: readonly EhrDeliveryAttempt[];
  /** The referral's attachments, in the order they were added. */
  readonly attachments: readonly AttachmentSource[];
  /** When the view was assembled: Bundle.timestamp. */
  readonly assembledAt: Date;
}

const institutionKey = (institution: InstitutionView) => `${institution.idType}:${institution.id}`;

/** The view's Bundle: always a collection with a timestamp, every entry a resource with its id. */
export type ReferralBundle = Omit<Identified<Bundle>, 'type' | 'timestamp' | 'entry'> & {
  readonly type: 'collection';
  readonly timestamp: string;
  readonly entry: { readonly fullUrl: string; readonly resource: Identified<Resource> }[];
};

export function referralBundleOf({
  referral,
  deliveries,
  attachments,
  assembledAt,
}: ReferralBundleInput): ReferralBundle {
  // One Organization per institution, however many roles it plays in the referral.
  const organizations = new Map<string, Identified<Organization>>();
  const organization = (institution: InstitutionView) => {
    const key = institutionKey(institution);
    const known = organizations.get(key);
    if (known !== undefined) return known;
    const created = organizationOf(institution);
    organizations.set(key, created);
    return created;
  };
  const sender = organization(referral.sender);
  const provider = referral.offering === null ? undefined : organization(referral.offering.institution);
  const otherParty = (author: InstitutionView) => {
    const key = institutionKey(author);
    if (key === institutionKey(referral.sender)) return provider;
    if (referral.offering !== null && key === institutionKey(referral.offering.institution)) return sender;
    return undefined;
  };

  const patient = patientOf(referral.id, referral.patient);
  const clinician = referringClinicianOf(referral.id, referral.referrer, sender);
  // The documents point at the ServiceRequest, which lists the sender's among its supportingInfo.
  const documents = attachments.map((attachment) => ({
    attachment,
    resource: documentReferenceOf(attachment, {
      serviceRequest: referenceToRecord<ServiceRequest>('ServiceRequest', referral.id),
      patient,
      author: organization(attachment.authorInstitution),
    }),
  }));
  // A rejected file supports nothing and is no output: its DocumentReference is entered-in-error.
  const documentsBy = (party: AttachmentSource['addedBy']) =>
    documents
      .filter(({ attachment }) => attachment.addedBy === party && isPresentable(attachment))
      .map(({ attachment, resource }) => ({
        attachmentId: attachment.id,
        reference: referenceTo<DocumentReference>(resource),
      }));
  const serviceRequest = serviceRequestOf(referral, {
    patient,
    requester:
      clinician === undefined
        ? referenceTo(sender, sender.name)
        : referenceTo(clinician.role, clinician.practitioner?.name?.[0]?.text),
    provider,
    supportingInfo: documentsBy('sender').map(({ reference }) => reference),
  });
  const task = taskOf(referral, {
    serviceRequest,
    patient,
    sender,
    provider,
    output: documentsBy('provider'),
  });
  const appointments = referral.appointments.map((a) =>
    appointmentOf(referral.id, a, { serviceRequest, patient, provider }),
  );
  const communications = referral.notes.map((note) =>
    communicationOf(note, {
      serviceRequest,
      patient,
      author: organization(note.authorInstitution),
      recipient: otherParty(note.authorInstitution),
    }),
  );
  const audits = deliveries.map((attempt) => auditEventOf(attempt, { serviceRequest, patient }));

  const resources: Identified<Resource>[] = [
    serviceRequest,
    task,
    patient,
    ...(clinician?.practitioner === undefined ? [] : [clinician.practitioner]),
    ...(clinician === undefined ? [] : [clinician.role]),
    ...organizations.values(),
    ...appointments.flatMap(({ appointment, location }) => [appointment, location]),
    ...communications,
    ...documents.map(({ resource }) => resource),
    ...audits,
  ];
  return {
    resourceType: 'Bundle',
    id: resourceIdOf('Bundle', referral.id),
    type: 'collection',
    timestamp: assembledAt.toISOString(),
    entry: resources.map((resource) => ({ fullUrl: fullUrlOf(resource.id), resource })),
  };
}
