// Bounded building blocks for every route schema: each string has a maxLength, each array a maxItems.
import { Type, type TSchema } from 'typebox';
import { COUNTRY_CODES } from '../../domain/countries.ts';
import { INSTITUTION_ID_TYPES } from '../../domain/statuses.ts';

export const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);

export const Timestamp = Type.String({
  format: 'date-time',
  maxLength: 40,
  description: 'ISO 8601 UTC, with milliseconds',
});

export const InstitutionIdType = Type.Enum([...INSTITUTION_ID_TYPES], {
  description: 'The kind of institution identifier. `hci` is the healthcare institution code.',
});
export const InstitutionId = Type.String({ minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9._-]+$' });
export const RequesterIdentifier = Type.String({
  minLength: 1,
  maxLength: 254,
  description: 'The person using the client system; an email address is preferred. Audited with every call.',
});
export const ReferralId = Type.String({ format: 'uuid', maxLength: 36 });
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
export const Reason = Type.String({ minLength: 1, maxLength: 2000 });

/** The institution a write acts for, and who is behind it. */
export const ActingFor = {
  institutionIdType: InstitutionIdType,
  institutionId: InstitutionId,
  requesterIdentifier: Type.Optional(RequesterIdentifier),
};

export const ReferralIdParams = Type.Object({ referralId: ReferralId }, { additionalProperties: false });
