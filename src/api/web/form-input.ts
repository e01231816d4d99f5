// What the form posts, and how it becomes a referral update. The form shows every field, but only
// the fields the person changed go to the update, so the timeline says what really changed
// ("updated the referral (clinical information)"). What the person typed is kept as typed, to show
// it again next to any error.
import { formatCalendarDate, parseCalendarDate } from '../../domain/display-time.ts';
import type { ReferralView } from '../../domain/referral-view.ts';
import type { FieldError } from '../../errors.ts';
import { INPUT_RULE_MESSAGES } from '../../services/input-rules.ts';
import { FIELD_LABELS, FORM_FIELDS, type FormField } from '../../render/pages/referral-form-fields.ts';
import type { SummaryError } from '../../render/pages/form-controls.ts';
import { WebPageError } from './web-pages.ts';

export type FormValues = Readonly<Record<FormField, string>>;

export interface PostedForm {
  readonly values: FormValues;
  readonly csrfToken: string | undefined;
  readonly version: number | undefined;
  readonly intent: 'save' | 'submit';
}

/** The fields a sender may change in each mode: the service is fixed once the provider has it. */
export const EDITABLE_FIELDS: Readonly<Record<'edit' | 'respond', readonly FormField[]>> = {
  edit: FORM_FIELDS,
  respond: FORM_FIELDS.filter((f) => f !== 'offeringId'),
};

const BAD_FORM = () =>
  new WebPageError(400, 'The form could not be read', [
    'Nothing was saved. Go back to the form and send it again.',
  ]);

/** The referral's stored values, as the form's fields show them. */
export function valuesOf(view: ReferralView): FormValues {
  const { patient, referrer } = view;
  return {
    patientName: patient.name ?? '',
    patientUin: patient.uin ?? '',
    dob: dobText(patient.dob ?? ''),
    patientGender: patient.gender ?? '',
    nationality: patient.nationality ?? '',
    residentialStatus: patient.residentialStatus ?? '',
    patientPhoneNumber: patient.phoneNumber ?? '',
    referrerName: referrer.name ?? '',
    referrerIdType: referrer.idType ?? '',
    referrerId: referrer.id ?? '',
    referrerEmail: referrer.email ?? '',
    referrerContactNumber: referrer.contactNumber ?? '',
    offeringId: view.offering?.id ?? '',
    clinicalInfo: view.clinicalInfo ?? '',
    isUrgent: view.isUrgent ? 'true' : 'false',
  };
}

function single(body: Record<string, unknown>, name: string): string | undefined {
  if (!Object.hasOwn(body, name)) return undefined;
  const value = body[name];
  // A repeated field was not sent by our page.
  if (typeof value !== 'string') throw BAD_FORM();
  return value;
}

/** Reads the posted form; a field the browser left out (no radio chosen) reads as empty. */
export function readForm(body: unknown): PostedForm {
  if (typeof body !== 'object' || body === null) throw BAD_FORM();
  const fields = body as Record<string, unknown>;
  const values = Object.fromEntries(FORM_FIELDS.map((f) => [f, single(fields, f) ?? ''])) as Record<
    FormField,
    string
  >;
  const intent = single(fields, 'intent');
  if (intent !== 'save' && intent !== 'submit') throw BAD_FORM();
  const version = single(fields, 'version');
  return {
    values,
    csrfToken: single(fields, '_csrf'),
    version: version !== undefined && /^[1-9][0-9]{0,8}$/.test(version) ? Number(version) : undefined,
    intent,
  };
}

// The date of birth is a text field showing the date as every document writes it ("29 Feb 1960"),
// whatever the browser's language: a native date input would show "02/29/1960" in an en-US browser.
// The API keeps taking and storing YYYY-MM-DD; the form converts both ways.

const MONTH_NAMES = [
  'january',
  'february',
  'march',
  'april',
  'may',
  'june',
  'july',
  'august',
  'september',
  'october',
  'november',
  'december',
] as const;

/** A stored date of birth as the documents write it ("29 Feb 1960"); any other value as stored. */
export function dobText(stored: string): string {
  const date = parseCalendarDate(stored);
  return date === undefined ? stored : formatCalendarDate(date);
}

/**
 * A typed date of birth as the API takes it (YYYY-MM-DD): a day, a month as a word (its first three
 * letters or its whole name, in any case) and a year, as in "29 Feb 1960" or "29-feb-1960", or the
 * API's own "1960-02-29". Anything else is returned as typed, for the field's rule to refuse next to
 * the field: a date that does not exist, and numbers alone, which people in different countries read
 * in different orders (is 03/04/1960 the 3rd of April or the 4th of March?).
 */
export function dobValue(typed: string): string {
  const text = typed.trim();
  if (parseCalendarDate(text) !== undefined) return text;
  const [, day = '', monthWord = '', year = ''] =
    /^(\d{1,2})[\s./-]*([a-z]{3,9})\.?[\s,./-]*(\d{4})$/i.exec(text) ?? [];
  const word = monthWord.toLowerCase();
  const month = MONTH_NAMES.findIndex(
    (name) => word === name || word === name.slice(0, 3) || (word === 'sept' && name === 'september'),
  );
  if (month < 0) return text;
  const iso = `${year}-${String(month + 1).padStart(2, '0')}-${day.padStart(2, '0')}`;
  return parseCalendarDate(iso) === undefined ? text : iso;
}

/**
 * A value as it would be stored: single-line text trimmed, line breaks as the browser's CRLF → LF,
 * and a date of birth as YYYY-MM-DD when it reads as a date.
 */
function normalized(field: FormField, raw: string): string {
  if (field === 'dob') return dobValue(raw);
  return field === 'clinicalInfo' ? raw.replace(/\r\n?/g, '\n').trim() : raw.trim();
}

function toInput(field: FormField, value: string): unknown {
  if (field === 'isUrgent') return value === 'true' ? true : value === 'false' ? false : value;
  return value === '' ? null : value;
}

/**
 * The update the form asks for: each editable field whose value differs from the stored one, typed
 * as the API takes it (empty clears the field). Unchecked here: the caller validates it.
 */
export function changesFrom(
  stored: FormValues,
  posted: FormValues,
  fields: readonly FormField[],
): Record<string, unknown> {
  const changes: Record<string, unknown> = {};
  for (const field of fields) {
    const value = normalized(field, posted[field]);
    if (value !== normalized(field, stored[field])) changes[field] = toInput(field, value);
  }
  return changes;
}

/**
 * The fields where the person typed whitespace alone, as typed. Emptying a field clears it, but
 * spaces are checked as the value they are, so a field that must say something (a name) refuses
 * them next to the field, as the API does, instead of quietly clearing what was stored.
 */
export function blankEntries(posted: FormValues, fields: readonly FormField[]): Record<string, string> {
  return Object.fromEntries(
    fields.filter((f) => posted[f] !== '' && posted[f].trim() === '').map((f) => [f, posted[f]]),
  );
}

/** What the schema's rule for each field asks for, in the words of the form. */
const FIELD_RULES: Readonly<Record<FormField, string>> = {
  patientName: 'Enter the patient’s full name in 200 characters or fewer',
  patientUin: 'Enter the NRIC or FIN as a letter (S, T, F, G or M), 7 digits and a letter, like S1234567D',
  dob: 'Enter the date of birth as a real date from 1 Jan 1900 on, like 29 Feb 1960',
  patientGender: 'Choose a gender from the list',
  nationality: 'Choose a nationality from the list',
  residentialStatus: 'Choose a residential status from the list',
  patientPhoneNumber: 'Enter the patient’s phone number as 8 digits starting with 3, 6, 8 or 9',
  referrerName: 'Enter the clinician’s name in 200 characters or fewer',
  referrerIdType: 'Choose a clinician ID type from the list',
  referrerId: 'Enter the clinician ID in 64 characters or fewer',
  referrerEmail: 'Enter the clinician’s email address, like name@example.com',
  referrerContactNumber: 'Enter the clinician’s contact number as 8 digits starting with 3, 6, 8 or 9',
  offeringId: 'Choose a service from the list',
  clinicalInfo: 'Enter clinical information in 8,000 characters or fewer',
  isUrgent: 'Choose routine or urgent',
};

/** What submitting needs (services' `incomplete_referral`), as an instruction. */
const REQUIRED_TO_SUBMIT: Readonly<Partial<Record<FormField, string>>> = {
  offeringId: 'Choose a service before you submit',
  patientName: 'Enter the patient’s full name before you submit',
  patientUin: 'Enter the patient’s NRIC or FIN before you submit',
};

/** The rules on characters a person cannot see or type, as opposed to what a field's rule asks for. */
const UNSEEN_CHARACTERS: ReadonlySet<string> = new Set([
  INPUT_RULE_MESSAGES.nul,
  INPUT_RULE_MESSAGES.surrogate,
  INPUT_RULE_MESSAGES.control,
  INPUT_RULE_MESSAGES.controlInLines,
  INPUT_RULE_MESSAGES.bidi,
]);

function fieldOf(path: string): FormField | null {
  const name = path.replace(/^body\./, '');
  return (FORM_FIELDS as readonly string[]).includes(name) ? (name as FormField) : null;
}

/**
 * Errors from the shared checks, in the form's words, in the order of the form. `kind` says where
 * they came from: the field schema, a service's own checks, or what submitting needs.
 */
export function formErrors(
  errors: readonly FieldError[],
  kind: 'schema' | 'service' | 'submit',
): SummaryError[] {
  const out = errors.map((e): SummaryError => {
    const field = fieldOf(e.path);
    if (field === null) return { field: null, message: e.message };
    if (kind === 'schema') {
      // Only a paste or a forged post carries these; the field's usual rule would not explain them.
      if (UNSEEN_CHARACTERS.has(e.message)) {
        return {
          field,
          message: `${FIELD_LABELS[field]} contains an invisible character that cannot be saved; type it again`,
        };
      }
      return { field, message: FIELD_RULES[field] };
    }
    if (kind === 'submit')
      return { field, message: REQUIRED_TO_SUBMIT[field] ?? `${FIELD_LABELS[field]} ${e.message}` };
    return { field, message: `${FIELD_LABELS[field]} ${e.message}` };
  });
  // The file input comes after every field of the referral's form.
  const order = (e: SummaryError) =>
    e.field === null ? -1 : e.field === 'file' ? FORM_FIELDS.length : FORM_FIELDS.indexOf(e.field);
  return out.sort((a, b) => order(a) - order(b));
}

/** The token a plain form post carries (a button's form); anything else (a repeated field) is no token. */
export function tokenOf(body: unknown): string | undefined {
  const token = (body as Record<string, unknown> | undefined)?._csrf;
  return typeof token === 'string' ? token : undefined;
}
