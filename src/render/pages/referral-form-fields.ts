// The fields of the web form: their names (the API's field names, so an error from a service lands
// next to the field it names), their labels and the choices of the closed lists. The words for codes
// come from `domain/labels.ts`, as on the EHR form.
import {
  GENDER_LABELS,
  OFFERING_CATEGORY_GROUP_LABELS,
  REFERRAL_FIELD_LABELS,
  REFERRER_ID_TYPE_CHOICE_LABELS,
  REFERRER_ID_TYPES,
  RESIDENTIAL_STATUS_LABELS,
  STATUS_LABELS_FOR_SENDER,
} from '../../domain/labels.ts';
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

/**
 * Labels as the form shows them; error messages start with them ("Date of birth must …"). They are
 * the words the timeline uses for the same fields (domain/labels.ts).
 */
export const FIELD_LABELS: Readonly<Record<FormField, string>> = REFERRAL_FIELD_LABELS;

export interface Choice {
  readonly value: string;
  readonly label: string;
}

const choicesOf = (labels: Readonly<Record<string, string>>, order: readonly string[]): Choice[] =>
  order.map((value) => ({ value, label: labels[value] ?? value }));

export const GENDER_CHOICES: readonly Choice[] = choicesOf(GENDER_LABELS, ['Female', 'Male']);

export const RESIDENTIAL_STATUS_CHOICES: readonly Choice[] = choicesOf(RESIDENTIAL_STATUS_LABELS, [
  'SC',
  'PR',
  'Foreigner',
]);

export const REFERRER_ID_TYPE_CHOICES: readonly Choice[] = choicesOf(
  REFERRER_ID_TYPE_CHOICE_LABELS,
  REFERRER_ID_TYPES,
);

/** The order and names of the offering groups in the form. */
export const CATEGORY_LABELS: Readonly<Record<OfferingCategory, string>> = OFFERING_CATEGORY_GROUP_LABELS;

/** What a status means to the person in the form, and the colour of its tag. */
export const STATUS_TEXT: Readonly<
  Record<
    Status,
    { readonly label: string; readonly tone: 'draft' | 'action' | 'pending' | 'confirmed' | 'stopped' }
  >
> = {
  draft: { label: STATUS_LABELS_FOR_SENDER.draft, tone: 'draft' },
  'pending-acceptance': { label: STATUS_LABELS_FOR_SENDER['pending-acceptance'], tone: 'pending' },
  accepted: { label: STATUS_LABELS_FOR_SENDER.accepted, tone: 'pending' },
  'sender-action-required': { label: STATUS_LABELS_FOR_SENDER['sender-action-required'], tone: 'action' },
  scheduled: { label: STATUS_LABELS_FOR_SENDER.scheduled, tone: 'confirmed' },
  rejected: { label: STATUS_LABELS_FOR_SENDER.rejected, tone: 'stopped' },
  cancelled: { label: STATUS_LABELS_FOR_SENDER.cancelled, tone: 'stopped' },
  completed: { label: STATUS_LABELS_FOR_SENDER.completed, tone: 'action' },
  'outcome-acknowledged': { label: STATUS_LABELS_FOR_SENDER['outcome-acknowledged'], tone: 'confirmed' },
  redirected: { label: STATUS_LABELS_FOR_SENDER.redirected, tone: 'stopped' },
  archived: { label: STATUS_LABELS_FOR_SENDER.archived, tone: 'stopped' },
};
