// The URIs the FHIR view names its identifiers, codes and extensions by (docs/fhir.md, "System URIs").
// Singapore's own naming systems come from Synapxe's SG Core Data Interchange (SGCDI) guide, so FHIR
// tooling in Singapore recognises NRIC/FIN, HCI codes and registration numbers without a mapping.
// refhub's own are URNs under `urn:refhub:`, as its problem types are: refhub owns no domain name every
// installation can rely on, and a URN never invites a client to dereference it.

/** SGCDI naming systems: `https://fhir.synapxe.sg/NamingSystem/<identifier-shortname>`. */
export const SG_NAMING_SYSTEMS = {
  /** A patient's NRIC or FIN (both are the UIN refhub stores; the prefix letter tells them apart). */
  nric: 'https://fhir.synapxe.sg/NamingSystem/nric',
  /** A healthcare institution's HCI code. */
  hciCode: 'https://fhir.synapxe.sg/NamingSystem/hci-code',
  /** Medical Council registration number. */
  mcr: 'https://fhir.synapxe.sg/NamingSystem/mcr',
  /** Dental Council registration number. */
  dcr: 'https://fhir.synapxe.sg/NamingSystem/dcr',
} as const;

const REFHUB = 'urn:refhub:fhir';

export const REFHUB_NAMING_SYSTEMS = {
  referralId: `${REFHUB}:NamingSystem:referral-id`,
  /** refhub's attachment ID: the `{id}` of `/api/v1/referrals/{referralId}/attachments/{id}`. */
  attachmentId: `${REFHUB}:NamingSystem:attachment-id`,
  /** `<referralId>.v<version>`: the Idempotency-Key of a forward to the EHR. */
  ehrMessageId: `${REFHUB}:NamingSystem:ehr-message-id`,
  /** The EHR's own reference for a delivered form. */
  ehrReference: `${REFHUB}:NamingSystem:ehr-reference`,
  /** A referrer identified by email address, or by a Bright user ID. */
  referrerEmail: `${REFHUB}:NamingSystem:referrer-email`,
  brightUserId: `${REFHUB}:NamingSystem:bright-user-id`,
} as const;

/** An institution identifier type with no Singapore naming system (none today; `hci` has one). */
export function institutionNamingSystem(idType: string): string {
  return idType === 'hci' ? SG_NAMING_SYSTEMS.hciCode : `${REFHUB}:NamingSystem:institution-${idType}`;
}

export const REFHUB_CODE_SYSTEMS = {
  /** offering.category: gpfirst, ae, soc, polyclinic, community. */
  offeringCategory: `${REFHUB}:CodeSystem:offering-category`,
  /** offering.ehrCode: the code the national EHR knows the service by, as the catalog sets it. */
  ehrServiceCode: `${REFHUB}:CodeSystem:ehr-service-code`,
  /** The referral's fine-grained `status`. */
  referralStatus: `${REFHUB}:CodeSystem:referral-status`,
  /** The referral's `coreStatus`, the one users see. */
  coreStatus: `${REFHUB}:CodeSystem:core-status`,
  /** patient.residentialStatus: SC, PR, Foreigner. */
  residentialStatus: `${REFHUB}:CodeSystem:residential-status`,
  /**
   * Task.output.type: `consult-summary`, the outcome's consult summary; `outcome-document`, a file the
   * provider named as part of its outcome; `attachment`, any other file the provider attached.
   */
  taskOutputType: `${REFHUB}:CodeSystem:task-output-type`,
  /** The provider's outcome: the codes of the catalog's outcome list (`GET /api/v1/outcome-codes`). */
  outcome: `${REFHUB}:CodeSystem:outcome`,
  /**
   * Why a referral was rejected, sent back, cancelled, returned to draft or redirected: the codes of the
   * catalog's reasons (`GET /api/v1/reason-codes`).
   */
  reason: `${REFHUB}:CodeSystem:reason`,
} as const;

export const REFHUB_EXTENSIONS = {
  /** Patient: Coding from the residential-status code system. */
  residentialStatus: `${REFHUB}:StructureDefinition:residential-status`,
  /** Communication: the name the note's author gave (string). */
  noteAuthorName: `${REFHUB}:StructureDefinition:note-author-name`,
} as const;

/** Standard systems and extensions the view uses. */
export const FHIR_SYSTEMS = {
  iso3166: 'urn:iso:std:iso:3166',
  patientNationality: 'http://hl7.org/fhir/StructureDefinition/patient-nationality',
  dataAbsentReason: 'http://hl7.org/fhir/StructureDefinition/data-absent-reason',
  snomed: 'http://snomed.info/sct',
  taskCode: 'http://hl7.org/fhir/CodeSystem/task-code',
  dicom: 'http://dicom.nema.org/resources/ontology/DCM',
  auditEntityType: 'http://terminology.hl7.org/CodeSystem/audit-entity-type',
  objectRole: 'http://terminology.hl7.org/CodeSystem/object-role',
  securitySourceType: 'http://terminology.hl7.org/CodeSystem/security-source-type',
  /** An identifier that is a URI (FHIR's system for them): here an RFC 6920 `ni:` name of a file's bytes. */
  uri: 'urn:ietf:rfc:3986',
} as const;
