// Bounded building blocks for every route schema: each string has a maxLength, each array a maxItems.
import { Type } from 'typebox';
import { REASON_CODE_PATTERN } from '../../domain/reasons.ts';
import { INSTITUTION_ID_TYPES } from '../../domain/statuses.ts';
import { MULTILINE } from '../../services/input-rules.ts';

// The referral fields' own building blocks live with the one validator the API and the web form share.
export {
  Gender,
  Nationality,
  Nullable,
  OfferingId,
  PersonName,
  PhoneNumber,
  ReferrerIdType,
  ResidentialStatus,
  Uin,
} from '../../services/referrals/fields.ts';
/** Marks text of several lines, which alone may hold line breaks and tabs (services/input-rules.ts). */
export { MULTILINE };

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
export const Reason = Type.String({ minLength: 1, maxLength: 2000, [MULTILINE]: true });
/** A code of the catalog's reasons (GET /reason-codes), for the operation it is given to. */
export const ReasonCodeField = Type.String({
  pattern: REASON_CODE_PATTERN,
  maxLength: 64,
  description: 'A code of GET /reason-codes that names this operation among its `actions`.',
});

/** The institution a write acts for, and who is behind it. */
export const ActingFor = {
  institutionIdType: InstitutionIdType,
  institutionId: InstitutionId,
  requesterIdentifier: Type.Optional(RequesterIdentifier),
};

export const ReferralIdParams = Type.Object({ referralId: ReferralId }, { additionalProperties: false });
