// The fields of the web form: their names (the API's field names, so an error from a service lands
// next to the field it names), their labels and the choices of the closed lists.
import type { OfferingCategory, Status } from '../../domain/statuses.ts';

export const FORM_FIELDS = [
  'patientName',
  'patientUin',
  'dob',
  'patientGender',
  'nationality',
  'residentialStatus',
  'patientPhoneNumber',
  'referrerName',
  'referrerIdType',
  'referrerId',
  'referrerEmail',
  'referrerContactNumber',
  'offeringId',
  'clinicalInfo',
  'isUrgent',
] as const;

export type FormField = (typeof FORM_FIELDS)[number];

export function isFormField(name: string): name is FormField {
  return (FORM_FIELDS as readonly string[]).includes(name);
}

/** Labels as the form shows them; error messages start with them ("Date of birth must …"). */
export const FIELD_LABELS: Readonly<Record<FormField, string>> = {
  patientName: 'Patient’s full name',
  patientUin: 'NRIC or FIN',
  dob: 'Date of birth',
  patientGender: 'Gender',
  nationality: 'Nationality',
  residentialStatus: 'Residential status',
  patientPhoneNumber: 'Patient’s phone number',
  referrerName: 'Clinician’s name',
  referrerIdType: 'Clinician ID type',
  referrerId: 'Clinician ID',
  referrerEmail: 'Clinician’s email',
  referrerContactNumber: 'Clinician’s contact number',
  offeringId: 'Service',
  clinicalInfo: 'Clinical information',
  isUrgent: 'Urgency',
};

export interface Choice {
  readonly value: string;
  readonly label: string;
}

export const GENDER_CHOICES: readonly Choice[] = [
  { value: 'Female', label: 'Female' },
  { value: 'Male', label: 'Male' },
];

export const RESIDENTIAL_STATUS_CHOICES: readonly Choice[] = [
  { value: 'SC', label: 'Singapore Citizen' },
  { value: 'PR', label: 'Permanent Resident' },
  { value: 'Foreigner', label: 'Foreigner' },
];

export const REFERRER_ID_TYPE_CHOICES: readonly Choice[] = [
  { value: 'mcr', label: 'MCR (Medical Council registration)' },
  { value: 'dcr', label: 'DCR (Dental Council registration)' },
  { value: 'nric', label: 'NRIC' },
  { value: 'email', label: 'Email' },
  { value: 'brightUserId', label: 'Bright user ID' },
];

/** The order and names of the offering groups in the form. */
export const CATEGORY_LABELS: Readonly<Record<OfferingCategory, string>> = {
  gpfirst: 'GPFirst',
  ae: 'Accident & Emergency',
  soc: 'Specialist outpatient clinics',
  polyclinic: 'Polyclinics',
  community: 'Community care',
};

/** What a status means to the person in the form, and the colour of its tag. */
export const STATUS_TEXT: Readonly<
  Record<
    Status,
    { readonly label: string; readonly tone: 'draft' | 'action' | 'pending' | 'confirmed' | 'stopped' }
  >
> = {
  draft: { label: 'Draft', tone: 'draft' },
  'pending-acceptance': { label: 'Submitted, awaiting acceptance', tone: 'pending' },
  accepted: { label: 'Accepted, no appointment yet', tone: 'pending' },
  'sender-action-required': { label: 'Action required from you', tone: 'action' },
  scheduled: { label: 'Appointment scheduled', tone: 'confirmed' },
  rejected: { label: 'Rejected', tone: 'stopped' },
  cancelled: { label: 'Cancelled', tone: 'stopped' },
};
