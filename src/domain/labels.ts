// The words people read for the codes the API keeps: offering categories, statuses, appointment
// statuses, identifier types, sex, residential status, systems and countries. The API and the database
// keep the codes; the EHR form and the web pages show these words, from this one place. The words are
// constants of ours (never the runtime's locale data), so the hashed EHR form cannot drift with the
// machine it is rendered on.
import { countryName } from './countries.ts';
import type { AppointmentStatus, InstitutionIdType, OfferingCategory, Status } from './statuses.ts';

/** What a category is called on a referral ("Category: Specialist Outpatient Clinic (SOC)"). */
export const OFFERING_CATEGORY_LABELS: Readonly<Record<OfferingCategory, string>> = {
  gpfirst: 'GPFirst',
  ae: 'Accident & Emergency (A&E)',
  soc: 'Specialist Outpatient Clinic (SOC)',
  polyclinic: 'Polyclinic',
  community: 'Community care',
};

/** The web form's groups of services, in the order it shows them. */
export const OFFERING_CATEGORY_GROUP_LABELS: Readonly<Record<OfferingCategory, string>> = {
  gpfirst: 'GPFirst',
  ae: 'Accident & Emergency',
  soc: 'Specialist Outpatient Clinics',
  polyclinic: 'Polyclinics',
  community: 'Community care',
};

/** A referral's status, for any reader (the receiving clinician in the EHR, either side in refhub). */
export const STATUS_LABELS: Readonly<Record<Status, string>> = {
  draft: 'Draft',
  'pending-acceptance': 'Submitted, awaiting acceptance',
  accepted: 'Accepted, no appointment yet',
  'sender-action-required': 'Action requested from the referring clinic',
  scheduled: 'Appointment scheduled',
  rejected: 'Rejected',
  cancelled: 'Cancelled',
  completed: 'Completed, outcome awaiting acknowledgement',
  'outcome-acknowledged': 'Completed, outcome acknowledged',
  redirected: 'Redirected to another service',
  archived: 'Archived',
};

/** The same, for the sender in its own form, where the action is the reader's. */
export const STATUS_LABELS_FOR_SENDER: Readonly<Record<Status, string>> = {
  ...STATUS_LABELS,
  'sender-action-required': 'Action required from you',
  completed: 'Completed: read and acknowledge the outcome',
};

export const APPOINTMENT_STATUS_LABELS: Readonly<Record<AppointmentStatus, string>> = {
  scheduled: 'Scheduled',
  actualized: 'Attended',
  'no-show': 'Did not attend',
  cancelled: 'Cancelled',
};

export const INSTITUTION_ID_TYPE_LABELS: Readonly<Record<InstitutionIdType, string>> = {
  hci: 'HCI code',
};

/** The referrer ID types of contract §5.7, in the order the web form offers them. */
export const REFERRER_ID_TYPES = ['mcr', 'dcr', 'nric', 'email', 'brightUserId'] as const;
export type ReferrerIdType = (typeof REFERRER_ID_TYPES)[number];

/** As a prefix to the ID ("MCR no. M12345A"). */
export const REFERRER_ID_TYPE_LABELS: Readonly<Record<ReferrerIdType, string>> = {
  mcr: 'MCR no.',
  dcr: 'DCR no.',
  nric: 'NRIC',
  email: 'Email',
  brightUserId: 'Bright user ID',
};

/** As a choice in the web form, where a few more words help. */
export const REFERRER_ID_TYPE_CHOICE_LABELS: Readonly<Record<ReferrerIdType, string>> = {
  mcr: 'MCR (Medical Council registration)',
  dcr: 'DCR (Dental Council registration)',
  nric: 'NRIC',
  email: 'Email',
  brightUserId: 'Bright user ID',
};

export const GENDER_LABELS: Readonly<Record<'Male' | 'Female', string>> = {
  Male: 'Male',
  Female: 'Female',
};

export const RESIDENTIAL_STATUS_LABELS: Readonly<Record<'SC' | 'PR' | 'Foreigner', string>> = {
  SC: 'Singapore Citizen',
  PR: 'Permanent Resident',
  Foreigner: 'Foreigner',
};

/**
 * The referral fields a sender sets, by their API names, in the words people read: the web form's
 * labels, and the timeline's when it names what an update changed ("updated the referral (Service,
 * Referring clinician’s name)"). One table, so the timeline never calls a field what the form does not.
 */
export const REFERRAL_FIELD_LABELS = {
  patientName: 'Patient’s full name',
  patientUin: 'NRIC or FIN',
  dob: 'Date of birth',
  patientGender: 'Gender',
  nationality: 'Nationality',
  residentialStatus: 'Residential status',
  patientPhoneNumber: 'Patient’s phone number',
  referrerName: 'Referring clinician’s name',
  referrerIdType: 'Clinician ID type',
  referrerId: 'Clinician ID',
  referrerEmail: 'Clinician’s email',
  referrerContactNumber: 'Clinician’s contact number',
  offeringId: 'Service',
  clinicalInfo: 'Clinical information',
  isUrgent: 'Urgency',
  priority: 'Priority',
} as const;

/** Systems are shown by name; `Manual` is a person in refhub's own web form. */
const SYSTEM_LABELS: Readonly<Record<string, string>> = {
  Manual: 'refhub web form',
};

/**
 * The word for `code` in `labels`, or the code itself when it has none: a value the table does not
 * know (stored before a code was renamed, or sent by hand) stays visible rather than vanishing.
 */
export function labelFor<K extends string>(labels: Readonly<Record<K, string>>, code: string): string {
  return Object.hasOwn(labels, code) ? labels[code as K] : code;
}

export function systemLabel(system: string): string {
  return labelFor(SYSTEM_LABELS, system);
}

/** A nationality code as a country name ("SG" → "Singapore"). */
export function nationalityLabel(code: string): string {
  return countryName(code);
}
