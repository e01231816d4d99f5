// The referral itself as a ServiceRequest: the sender's order for the offering's service, for the
// patient, addressed to the provider, with the documents the sender attached as its supportingInfo.
// Its status says whether the order stands (status-mapping.ts).
import type {
  Coding,
  DocumentReference,
  Organization,
  Patient,
  PractitionerRole,
  Reference,
  ServiceRequest,
} from '@medplum/fhirtypes';
import type { FhirPriority } from '../../domain/priorities.ts';
import type { OfferingCategory } from '../../domain/statuses.ts';
import { codeableConceptOf, codingOf, fhirString, present } from './fhir-datatypes.ts';
import { FHIR_SYSTEMS, REFHUB_CODE_SYSTEMS, REFHUB_NAMING_SYSTEMS } from './fhir-systems.ts';
import type { ReferralSource } from './fhir-view-source.ts';
import { referenceTo, resourceIdOf, type Identified } from './resource-identity.ts';
import { SERVICE_REQUEST_STATUS } from './status-mapping.ts';

export const OFFERING_CATEGORY_DISPLAY: Readonly<Record<OfferingCategory, string>> = {
  gpfirst: 'GPFirst',
  ae: 'Accident and Emergency',
  soc: 'Specialist Outpatient Clinic',
  polyclinic: 'Polyclinic',
  community: 'Community care',
};

/** SNOMED CT 3457005 |Patient referral (procedure)|: how FHIR referral guides mark a referral. */
const PATIENT_REFERRAL: Coding = {
  system: FHIR_SYSTEMS.snomed,
  code: '3457005',
  display: 'Patient referral',
};

export interface ServiceRequestParties {
  readonly patient: Identified<Patient>;
  /** The referring clinician's PractitionerRole when known, else the sender Organization. */
  readonly requester: Reference<PractitionerRole | Organization>;
  /** The offering's institution; absent while a draft names no offering. */
  readonly provider: Identified<Organization> | undefined;
  /** The documents the sender attached to support the request. */
  readonly supportingInfo: readonly Reference<DocumentReference>[];
}

/** FHIR's request priority: the referral's priority's, or, without one, routine or urgent. */
export function priorityOf(referral: ReferralSource): FhirPriority {
  if (referral.priority !== null) return referral.priority.fhirPriority;
  return referral.isUrgent ? 'urgent' : 'routine';
}

export function serviceRequestOf(
  referral: ReferralSource,
  { patient, requester, provider, supportingInfo }: ServiceRequestParties,
): Identified<ServiceRequest> {
  const { offering } = referral;
  const category = codeableConceptOf(
    codingOf(
      REFHUB_CODE_SYSTEMS.offeringCategory,
      offering?.category,
      offering ? OFFERING_CATEGORY_DISPLAY[offering.category] : undefined,
    ),
  );
  const code = offering
    ? codeableConceptOf(
        codingOf(REFHUB_CODE_SYSTEMS.ehrServiceCode, offering.ehrCode),
        fhirString(offering.specialty),
      )
    : undefined;
  const reason = fhirString(referral.clinicalInfo);
  return {
    resourceType: 'ServiceRequest',
    id: resourceIdOf('ServiceRequest', referral.id),
    meta: { versionId: String(referral.version), lastUpdated: referral.updatedAt },
    identifier: [{ use: 'official', system: REFHUB_NAMING_SYSTEMS.referralId, value: referral.id }],
    // A redirect's successor replaces the referral it carries on. That one is not in the bundle (the
    // new provider may not read it), so the reference is logical: its refhub ID.
    ...(referral.redirectedFrom === undefined
      ? {}
      : {
          replaces: [
            {
              type: 'ServiceRequest',
              identifier: { system: REFHUB_NAMING_SYSTEMS.referralId, value: referral.redirectedFrom },
            },
          ],
        }),
    status: SERVICE_REQUEST_STATUS[referral.status],
    intent: 'order',
    category: [{ coding: [PATIENT_REFERRAL] }, ...(category === undefined ? [] : [category])],
    priority: priorityOf(referral),
    ...present('code', code),
    subject: referenceTo(patient),
    ...present('authoredOn', referral.submittedAt),
    requester,
    ...(provider === undefined ? {} : { performer: [referenceTo(provider, provider.name)] }),
    ...(reason === undefined ? {} : { reasonCode: [{ text: reason }] }),
    ...(supportingInfo.length === 0 ? {} : { supportingInfo: [...supportingInfo] }),
  };
}
