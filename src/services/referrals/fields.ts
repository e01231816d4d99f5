// The referral fields a sender sets (contract §5.7), as one schema with one validator. The API
// validates create, update and link-upsert bodies against these definitions, and the web form checks
// what a person typed against the very same ones, with the same Ajv settings and the same input
// rules (input-rules.ts), so a value the API refuses is one the form refuses too.
import { Ajv, type ErrorObject, type Options, type ValidateFunction } from 'ajv';
import formats from 'ajv-formats';
import { Type, type TSchema } from 'typebox';
import { PRIORITY_CODE_PATTERN } from '../../domain/priorities.ts';
import { COUNTRY_CODES } from '../../domain/countries.ts';
import type { FieldError } from '../../errors.ts';
import { addInputRules, EARLIEST_DATE, MULTILINE, withInputRules } from '../input-rules.ts';
import type { ReferralFieldsInput } from './input.ts';

export const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);

export const OfferingId = Type.String({ minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9._-]+$' });
export const PersonName = Type.String({ minLength: 1, maxLength: 200 });
export const PhoneNumber = Type.String({ pattern: '^[3689][0-9]{7}$', maxLength: 8 });
export const Uin = Type.String({
  pattern: '^[STFGM][0-9]{7}[A-Z]$',
  maxLength: 9,
  description: 'NRIC or FIN, for example S1234567D',
});
export const Nationality = Type.Enum([...COUNTRY_CODES], { description: 'ISO 3166-1 alpha-2 country code' });
export const Gender = Type.Enum(['Male', 'Female']);
export const ResidentialStatus = Type.Enum(['SC', 'PR', 'Foreigner']);
export const ReferrerIdType = Type.Enum(['mcr', 'nric', 'email', 'brightUserId', 'dcr']);
/** The earliest date of birth taken: anything earlier is a typing or system error, not a patient. */
export const EARLIEST_DOB = '1900-01-01';
export const DateOfBirth = Type.String({
  format: 'date',
  [EARLIEST_DATE]: EARLIEST_DOB,
  maxLength: 10,
  description: `YYYY-MM-DD, from ${EARLIEST_DOB}, not in the future`,
});

/** The referral content a sender sets: on create, on update and as a link prefill. null clears. */
export const ReferralFields = {
  offeringId: Type.Optional(Nullable(OfferingId)),
  referrerId: Type.Optional(Nullable(Type.String({ minLength: 1, maxLength: 64 }))),
  referrerIdType: Type.Optional(Nullable(ReferrerIdType)),
  referrerName: Type.Optional(Nullable(PersonName)),
  referrerEmail: Type.Optional(Nullable(Type.String({ format: 'email', maxLength: 254 }))),
  referrerContactNumber: Type.Optional(Nullable(PhoneNumber)),
  patientUin: Type.Optional(Nullable(Uin)),
  patientName: Type.Optional(Nullable(PersonName)),
  patientPhoneNumber: Type.Optional(Nullable(PhoneNumber)),
  dob: Type.Optional(Nullable(DateOfBirth)),
  patientGender: Type.Optional(Nullable(Gender)),
  nationality: Type.Optional(Nullable(Nationality)),
  residentialStatus: Type.Optional(Nullable(ResidentialStatus)),
  clinicalInfo: Type.Optional(Nullable(Type.String({ maxLength: 8000, [MULTILINE]: true }))),
  isUrgent: Type.Optional(
    Nullable(
      Type.Boolean({
        description: 'Routine or urgent; with a `priority`, it follows it and must agree with it.',
      }),
    ),
  ),
  priority: Type.Optional(
    Nullable(
      Type.String({
        pattern: PRIORITY_CODE_PATTERN,
        maxLength: 64,
        description: "A code of GET /priorities that the referral's offering takes; null clears it.",
      }),
    ),
  ),
};

export type RequestSchemaCompiler = <T = unknown>(schema: object) => ValidateFunction<T>;

/**
 * Compiles request schemas the way the API validates them. Query strings and headers arrive as text
 * and are coerced (`coerceTypes: 'array'`); JSON bodies and form values are taken as typed (`false`).
 * Unknown properties are rejected rather than removed, every problem is reported at once, and every
 * string is held to the input rules (input-rules.ts).
 */
export function createRequestSchemaCompiler(coerceTypes: Options['coerceTypes']): RequestSchemaCompiler {
  const ajv = new Ajv({
    coerceTypes,
    useDefaults: true,
    removeAdditional: false,
    allErrors: true,
    addUsedSchema: false,
  });
  formats.default(ajv);
  addInputRules(ajv);
  return <T>(schema: object) => ajv.compile<T>(withInputRules(schema));
}

function fieldOf(error: ErrorObject): string {
  const base = error.instancePath.replace(/^\//, '').replaceAll('/', '.');
  if (error.keyword === 'required') return String(error.params.missingProperty);
  if (error.keyword === 'additionalProperties') return String(error.params.additionalProperty);
  return base;
}

/**
 * Checks referral fields against the API's schema. Returns one error per field (`body.<field>`),
 * naming the field and never its value; empty when the input is valid.
 */
export function createReferralFieldsCheck(): (input: Readonly<Record<string, unknown>>) => FieldError[] {
  const validate = createRequestSchemaCompiler(false)<ReferralFieldsInput>(
    Type.Object(ReferralFields, { additionalProperties: false }),
  );
  return (input) => {
    if (validate(input)) return [];
    const byField = new Map<string, FieldError>();
    for (const error of validate.errors ?? []) {
      const field = fieldOf(error);
      // A null-or-string field fails both branches of its union; the first message is the useful one.
      if (field === '' || byField.has(field)) continue;
      const message =
        error.keyword === 'additionalProperties' ? 'is not a known field' : (error.message ?? 'is invalid');
      byField.set(field, { path: `body.${field}`, message });
    }
    return [...byField.values()];
  };
}
