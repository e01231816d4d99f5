// The people and institutions of a referral as FHIR resources: the Patient, an Organization per
// institution (sender and provider), and the referring clinician as a Practitioner working in a
// PractitionerRole at the sender.
import type {
  ContactPoint,
  Extension,
  Identifier,
  Organization,
  Patient,
  Practitioner,
  PractitionerRole,
} from '@medplum/fhirtypes';
import { countryName, isCountryCode } from '../../domain/countries.ts';
import type { InstitutionView, PatientView, ReferrerView } from '../../domain/referral-view.ts';
import { codingOf, fhirDate, fhirString, present } from './fhir-datatypes.ts';
import {
  FHIR_SYSTEMS,
  REFHUB_CODE_SYSTEMS,
  REFHUB_EXTENSIONS,
  REFHUB_NAMING_SYSTEMS,
  SG_NAMING_SYSTEMS,
  institutionNamingSystem,
} from './fhir-systems.ts';
import { referenceTo, resourceIdOf, type Identified } from './resource-identity.ts';

const GENDER = { Male: 'male', Female: 'female' } as const;

const RESIDENTIAL_STATUS_DISPLAY = {
  SC: 'Singapore Citizen',
  PR: 'Singapore Permanent Resident',
  Foreigner: 'Foreigner',
} as const;

/** The naming system of each kind of referrer ID refhub accepts (`referrerIdType`). */
const REFERRER_ID_SYSTEMS: Readonly<Record<string, string>> = {
  mcr: SG_NAMING_SYSTEMS.mcr,
  dcr: SG_NAMING_SYSTEMS.dcr,
  nric: SG_NAMING_SYSTEMS.nric,
  email: REFHUB_NAMING_SYSTEMS.referrerEmail,
  brightUserId: REFHUB_NAMING_SYSTEMS.brightUserId,
};

function patientExtensions(patient: PatientView): Extension[] {
  const nationality = patient.nationality;
  return [
    ...(nationality !== null && isCountryCode(nationality)
      ? [
          {
            url: FHIR_SYSTEMS.patientNationality,
            extension: [
              {
                url: 'code',
                valueCodeableConcept: {
                  coding: codingOf(FHIR_SYSTEMS.iso3166, nationality, countryName(nationality)),
                },
              },
            ],
          },
        ]
      : []),
    ...(patient.residentialStatus === null
      ? []
      : [
          {
            url: REFHUB_EXTENSIONS.residentialStatus,
            valueCoding: {
              system: REFHUB_CODE_SYSTEMS.residentialStatus,
              code: patient.residentialStatus,
              display: RESIDENTIAL_STATUS_DISPLAY[patient.residentialStatus],
            },
          },
        ]),
  ];
}

/** The referral's patient. Its id comes from the referral: refhub keeps patients per referral. */
export function patientOf(referralId: string, patient: PatientView): Identified<Patient> {
  const extension = patientExtensions(patient);
  const uin = fhirString(patient.uin);
  const name = fhirString(patient.name);
  const phone = fhirString(patient.phoneNumber);
  return {
    resourceType: 'Patient',
    id: resourceIdOf('Patient', referralId),
    ...(extension.length === 0 ? {} : { extension }),
    ...(uin === undefined
      ? {}
      : { identifier: [{ use: 'official', system: SG_NAMING_SYSTEMS.nric, value: uin }] }),
    ...(name === undefined ? {} : { name: [{ text: name }] }),
    ...(phone === undefined ? {} : { telecom: [{ system: 'phone', value: phone }] }),
    ...present('gender', patient.gender === null ? undefined : GENDER[patient.gender]),
    ...present('birthDate', fhirDate(patient.dob)),
  };
}

/** An institution. Its id comes from its identifier, so it is the same in every referral's view. */
export function organizationOf(institution: InstitutionView): Identified<Organization> {
  return {
    resourceType: 'Organization',
    id: resourceIdOf('Organization', institution.idType, institution.id),
    identifier: [
      { use: 'official', system: institutionNamingSystem(institution.idType), value: institution.id },
    ],
    ...present('name', fhirString(institution.name)),
  };
}

export interface ReferringClinician {
  /** Present when refhub knows the clinician's name or an identifier. */
  readonly practitioner?: Identified<Practitioner>;
  readonly role: Identified<PractitionerRole>;
}

function referrerIdentifier(referrer: ReferrerView): Identifier | undefined {
  const value = fhirString(referrer.id);
  if (value === undefined) return undefined;
  const system = referrer.idType === null ? undefined : REFERRER_ID_SYSTEMS[referrer.idType];
  return { ...present('system', system), value };
}

/** The referring clinician at the sender, or undefined when the referral names none. */
export function referringClinicianOf(
  referralId: string,
  referrer: ReferrerView,
  sender: Identified<Organization>,
): ReferringClinician | undefined {
  const identifier = referrerIdentifier(referrer);
  const name = fhirString(referrer.name);
  const email = fhirString(referrer.email);
  const phone = fhirString(referrer.contactNumber);
  const telecom: ContactPoint[] = [
    ...(email === undefined ? [] : [{ system: 'email', value: email, use: 'work' } as const]),
    ...(phone === undefined ? [] : [{ system: 'phone', value: phone, use: 'work' } as const]),
  ];
  if (identifier === undefined && name === undefined && telecom.length === 0) return undefined;
  const practitioner: Identified<Practitioner> | undefined =
    identifier === undefined && name === undefined
      ? undefined
      : {
          resourceType: 'Practitioner',
          id: resourceIdOf('Practitioner', referralId),
          ...(identifier === undefined ? {} : { identifier: [identifier] }),
          ...(name === undefined ? {} : { name: [{ text: name }] }),
        };
  const role: Identified<PractitionerRole> = {
    resourceType: 'PractitionerRole',
    id: resourceIdOf('PractitionerRole', referralId),
    ...(practitioner === undefined ? {} : { practitioner: referenceTo(practitioner, name) }),
    organization: referenceTo(sender, sender.name),
    ...(telecom.length === 0 ? {} : { telecom }),
  };
  return { ...(practitioner === undefined ? {} : { practitioner }), role };
}
