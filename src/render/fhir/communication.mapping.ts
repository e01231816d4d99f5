// A note on a referral as a Communication between its two institutions: sent by the author's
// institution to the other party, about the referral. Notes are immutable once written, so each is
// `completed`. R4's Communication.sender is one reference, the institution; the name the author gave
// travels in a refhub extension rather than being passed off as a Practitioner refhub does not know.
import type { Communication, Organization, Patient, ServiceRequest } from '@medplum/fhirtypes';
import type { NoteView } from '../../domain/referral-view.ts';
import { fhirString } from './fhir-datatypes.ts';
import { REFHUB_EXTENSIONS } from './fhir-systems.ts';
import { referenceTo, resourceIdOf, type Identified } from './resource-identity.ts';

export interface CommunicationParties {
  readonly serviceRequest: Identified<ServiceRequest>;
  readonly patient: Identified<Patient>;
  readonly author: Identified<Organization>;
  /** The other party of the referral, when there is one. */
  readonly recipient: Identified<Organization> | undefined;
}

export function communicationOf(
  note: NoteView,
  { serviceRequest, patient, author, recipient }: CommunicationParties,
): Identified<Communication> {
  const authorName = fhirString(note.authorName);
  // A note of blanks carries nothing FHIR can hold as a string; it stays in the view without a payload.
  const content = fhirString(note.content);
  return {
    resourceType: 'Communication',
    id: resourceIdOf('Communication', note.id),
    ...(authorName === undefined
      ? {}
      : { extension: [{ url: REFHUB_EXTENSIONS.noteAuthorName, valueString: authorName }] }),
    status: 'completed',
    subject: referenceTo(patient),
    about: [referenceTo(serviceRequest)],
    sent: note.createdAt,
    ...(recipient === undefined ? {} : { recipient: [referenceTo(recipient, recipient.name)] }),
    sender: referenceTo(author, author.name),
    ...(content === undefined ? {} : { payload: [{ contentString: content }] }),
  };
}
