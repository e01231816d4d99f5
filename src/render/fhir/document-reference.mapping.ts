// Each file attached to a referral as a DocumentReference: about the referral's patient, authored by
// the institution that attached it, related to the referral, with an Attachment that points at the
// content API rather than carrying the bytes (the view is a list of what there is, not a download).
//
// The SHA-256 refhub keeps is not Attachment.hash, which R4 defines as the base64 SHA-1 of the data;
// refhub never takes a SHA-1, and computing one would mean reading every file on every view. The
// SHA-256 names the bytes instead, as an RFC 6920 Named Information URI (`ni:///sha-256;<base64url>`)
// in an identifier of system `urn:ietf:rfc:3986`, FHIR's system for identifiers that are URIs.
//
// The scan decides how the document stands. A file the scanner rejected is `entered-in-error` ("this
// reference was created in error", a modifier every FHIR reader must heed) and has no URL, since its
// content is refused for good (410); it stays in the view because the API lists it and both parties
// need to know the file did not arrive. Every other file is `current` and `final`, with its URL; one
// still waiting for its scan is served once the scan clears it (409 with Retry-After until then).
import type {
  Attachment,
  DocumentReference,
  Identifier,
  Organization,
  Patient,
  Reference,
  ServiceRequest,
} from '@medplum/fhirtypes';
import { fhirString, present } from './fhir-datatypes.ts';
import { FHIR_SYSTEMS, REFHUB_NAMING_SYSTEMS } from './fhir-systems.ts';
import type { AttachmentSource } from './fhir-view-source.ts';
import { referenceTo, resourceIdOf, type Identified } from './resource-identity.ts';

/** refhub's API, under which the content of an attachment is read. */
const API_PREFIX = '/api/v1';

export interface DocumentReferenceParties {
  /** The referral, which the document is related to. */
  readonly serviceRequest: Reference<ServiceRequest>;
  readonly patient: Identified<Patient>;
  /** The institution that attached the file. */
  readonly author: Identified<Organization>;
}

/** Where the attachment's bytes are read: a path on refhub's own API, as the upload's Location names it. */
export function attachmentContentPath(attachment: AttachmentSource): string {
  return `${API_PREFIX}/referrals/${attachment.referralId}/attachments/${attachment.id}/content`;
}

const SHA256_HEX = /^[0-9a-f]{64}$/;

/**
 * The RFC 6920 Named Information URI of bytes whose SHA-256 is `sha256` (lowercase hex): the digest in
 * base64url without padding, after the algorithm's name from IANA's Named Information registry.
 * Undefined for a value that is not a SHA-256, which is left out rather than altered.
 */
export function namedInformationUri(sha256: string): string | undefined {
  if (!SHA256_HEX.test(sha256)) return undefined;
  return `ni:///sha-256;${Buffer.from(sha256, 'hex').toString('base64url')}`;
}

/**
 * The media type of the content as the content API serves it: plain text is stored only when it is
 * UTF-8, and served saying so (`charset=utf-8`), which R4 asks contentType to include.
 */
function contentTypeOf(mediaType: string): string {
  return mediaType === 'text/plain' ? 'text/plain; charset=utf-8' : mediaType;
}

/** Whether the document may be presented as one to read: every file the scanner did not reject. */
export function isPresentable(attachment: AttachmentSource): boolean {
  return attachment.scanState !== 'rejected';
}

export function documentReferenceOf(
  attachment: AttachmentSource,
  { serviceRequest, patient, author }: DocumentReferenceParties,
): Identified<DocumentReference> {
  const presentable = isPresentable(attachment);
  const digest = namedInformationUri(attachment.sha256);
  const identifier: Identifier[] = [
    { use: 'official', system: REFHUB_NAMING_SYSTEMS.attachmentId, value: attachment.id },
    ...(digest === undefined ? [] : [{ system: FHIR_SYSTEMS.uri, value: digest }]),
  ];
  const content: Attachment = {
    contentType: contentTypeOf(attachment.mediaType),
    ...(presentable ? { url: attachmentContentPath(attachment) } : {}),
    size: attachment.sizeBytes,
    ...present('title', fhirString(attachment.fileName)),
  };
  return {
    resourceType: 'DocumentReference',
    id: resourceIdOf('DocumentReference', attachment.id),
    identifier,
    status: presentable ? 'current' : 'entered-in-error',
    ...(presentable ? { docStatus: 'final' as const } : {}),
    subject: referenceTo(patient),
    date: attachment.createdAt,
    author: [referenceTo(author, author.name)],
    content: [{ attachment: content }],
    context: { related: [serviceRequest] },
  };
}
