// Turns the referral fields of a request (create, update, link prefill) into stored content, with the
// checks a schema cannot make: the offering exists and is active, and the date of birth is a real
// date that is not in the future. Errors name the request field, never its value.
import { ValidationError, type FieldError } from '../../errors.ts';
import type { Clock } from '../../domain/clock.ts';
import type { ReferralContent } from '../../db/referrals/rows.ts';
import type { OfferingRecord } from '../../db/catalog.repository.ts';
import { REFERRAL_FIELD_LABELS } from '../../domain/labels.ts';

/** Request fields; undefined leaves a stored value alone, null clears it. */
export interface ReferralFieldsInput {
  readonly offeringId?: string | null;
  readonly referrerId?: string | null;
  readonly referrerIdType?: string | null;
  readonly referrerName?: string | null;
  readonly referrerEmail?: string | null;
  readonly referrerContactNumber?: string | null;
  readonly patientUin?: string | null;
  readonly patientName?: string | null;
  readonly patientPhoneNumber?: string | null;
  readonly dob?: string | null;
  readonly patientGender?: string | null;
  readonly nationality?: string | null;
  readonly residentialStatus?: string | null;
  readonly clinicalInfo?: string | null;
  readonly isUrgent?: boolean | null;
  /** A code of the catalog's priorities that the offering takes (domain/priorities.ts). */
  readonly priority?: string | null;
}

const FIELD_COLUMNS = {
  referrerId: 'referrerId',
  referrerIdType: 'referrerIdType',
  referrerName: 'referrerName',
  referrerEmail: 'referrerEmail',
  referrerContactNumber: 'referrerContactNumber',
  patientUin: 'patientUin',
  patientName: 'patientName',
  patientPhoneNumber: 'patientPhoneNumber',
  dob: 'patientDob',
  patientGender: 'patientGender',
  nationality: 'patientNationality',
  residentialStatus: 'patientResidentialStatus',
  clinicalInfo: 'clinicalInfo',
} as const satisfies Partial<Record<keyof ReferralFieldsInput, keyof ReferralContent>>;

/**
 * Words for the timeline ("updated the referral (Service, Clinical information)"): the labels the web
 * form gives the same fields, from the one table of them.
 */
const FIELD_WORDS: Readonly<Record<keyof ReferralFieldsInput, string>> = REFERRAL_FIELD_LABELS;

export const EMPTY_CONTENT: ReferralContent = {
  offeringId: null,
  providerIdType: null,
  providerId: null,
  patientUin: null,
  patientName: null,
  patientDob: null,
  patientGender: null,
  patientNationality: null,
  patientPhoneNumber: null,
  patientResidentialStatus: null,
  referrerId: null,
  referrerIdType: null,
  referrerName: null,
  referrerEmail: null,
  referrerContactNumber: null,
  clinicalInfo: null,
  isUrgent: false,
  priority: null,
};

export function fieldWords(fields: readonly (keyof ReferralFieldsInput)[]): string[] {
  return fields.map((f) => FIELD_WORDS[f]);
}

/** The fields the input sets (present, even if null). */
export function fieldsIn(input: ReferralFieldsInput): (keyof ReferralFieldsInput)[] {
  return (Object.keys(FIELD_WORDS) as (keyof ReferralFieldsInput)[]).filter((f) => input[f] !== undefined);
}

/**
 * The content changes that `input` asks for. Resolves the offering (and with it the provider), and
 * checks what schemas cannot.
 */
/** The stored content of a referral's input, and the offering it names (undefined: it names none). */
export interface ResolvedContent {
  readonly content: Partial<ReferralContent>;
  readonly offering?: OfferingRecord | null;
}

export async function resolveContent(
  clock: Clock,
  input: ReferralFieldsInput,
  /** Reads the offering the input names (a caller that read it already hands it over). */
  findOffering: (id: string) => Promise<OfferingRecord | undefined>,
): Promise<ResolvedContent> {
  const errors: FieldError[] = [];
  const content: Partial<Record<keyof ReferralContent, string | boolean | null>> = {};
  for (const [field, column] of Object.entries(FIELD_COLUMNS) as [
    keyof typeof FIELD_COLUMNS,
    keyof ReferralContent,
  ][]) {
    const value = input[field];
    if (value !== undefined) content[column] = value === null || value.trim() === '' ? null : value;
  }
  if (input.isUrgent !== undefined) content.isUrgent = input.isUrgent ?? false;
  if (typeof content.patientDob === 'string' && isInTheFuture(content.patientDob, clock.now())) {
    errors.push({ path: 'body.dob', message: 'must not be in the future' });
  }
  let offering: OfferingRecord | null | undefined;
  if (input.offeringId === null) {
    offering = null;
    Object.assign(content, { offeringId: null, providerIdType: null, providerId: null });
  } else if (input.offeringId !== undefined) {
    offering = (await findOffering(input.offeringId)) ?? null;
    // The message never quotes the value: a client that mixed up fields may have sent a patient UIN.
    if (!offering) errors.push({ path: 'body.offeringId', message: 'is not a known offering' });
    else if (!offering.active) errors.push({ path: 'body.offeringId', message: 'is no longer offered' });
    else {
      Object.assign(content, {
        offeringId: offering.id,
        providerIdType: offering.institution.idType,
        providerId: offering.institution.id,
      });
    }
  }
  if (errors.length > 0) throw new ValidationError(errors);
  return { content: content as Partial<ReferralContent>, ...(offering === undefined ? {} : { offering }) };
}

/**
 * A date of birth is in the future when it is after today everywhere on Earth: the check uses the
 * date at UTC+14, so a baby born today in any time zone is accepted.
 */
function isInTheFuture(dob: string, now: Date): boolean {
  const latestToday = new Date(now.getTime() + 14 * 3600_000).toISOString().slice(0, 10);
  return dob > latestToday;
}
