// The EHR forwarding ledger of a referral: one entry per attempt to deliver its form.
import { Type } from 'typebox';
import { Timestamp } from './primitives.ts';
import { named, ref } from './named.ts';

export const EhrSubmission = named(
  'EhrSubmission',
  Type.Object(
    {
      id: Type.String({ format: 'uuid' }),
      messageId: Type.String({
        description: '`<referralId>.v<version>`, also the Idempotency-Key sent to the EHR',
      }),
      version: Type.Integer({
        minimum: 1,
        maximum: 2_147_483_647,
        description: 'The referral version whose form was sent',
      }),
      attempt: Type.Integer({ minimum: 1 }),
      attemptedAt: Timestamp,
      outcome: Type.Enum(['delivered', 'retrying', 'failed']),
      httpStatus: Type.Optional(Type.Integer({ description: 'The EHR’s answer, when it answered' })),
      errorCode: Type.Optional(Type.String({ description: 'Why no answer came (a network error code)' })),
      sha256: Type.Optional(
        Type.String({ pattern: '^[0-9a-f]{64}$', description: 'Of the ehrForm bytes sent' }),
      ),
      ehrReference: Type.Optional(Type.String()),
      durationMs: Type.Integer({ minimum: 0 }),
    },
    { additionalProperties: false },
  ),
);

export const EhrSubmissionList = named(
  'EhrSubmissionList',
  Type.Object({ data: Type.Array(ref(EhrSubmission), { description: 'Oldest first.' }) }),
);

export const EhrSentAttachment = named(
  'EhrSentAttachment',
  Type.Object(
    {
      messageId: Type.String({
        description: '`<referralId>.v<version>.a<number>`, also the Idempotency-Key sent',
      }),
      attachmentId: Type.String({ format: 'uuid' }),
      number: Type.Integer({ minimum: 1, description: 'The file’s number within its referral' }),
      fileName: Type.String(),
      mediaType: Type.String(),
      sizeBytes: Type.Integer({ minimum: 1 }),
      sha256: Type.String({ pattern: '^[0-9a-f]{64}$', description: 'Hex SHA-256 of the bytes sent' }),
    },
    { additionalProperties: false },
  ),
);

export const EhrSentForm = named(
  'EhrSentForm',
  Type.Object(
    {
      attemptId: Type.String({ format: 'uuid' }),
      messageId: Type.String({ description: '`<referralId>.v<version>`, also the Idempotency-Key sent' }),
      version: Type.Integer({
        minimum: 1,
        maximum: 2_147_483_647,
        description: 'The referral version the form was rendered from',
      }),
      sha256: Type.String({
        pattern: '^[0-9a-f]{64}$',
        description: 'Hex SHA-256 of the UTF-8 bytes of ehrForm: the hash the ledger recorded',
      }),
      ehrFormType: Type.String({ description: 'The templates used, joined with `|`' }),
      ehrForm: Type.String({ description: 'The HTML document, exactly as it was sent' }),
      attachments: Type.Array(ref(EhrSentAttachment), {
        maxItems: 100,
        description:
          'The files sent with the form, each as a document of its own, as its Attachments section lists ' +
          'them. Their bytes are those of `GET …/attachments/{attachmentId}/content`, whose SHA-256 this is.',
      }),
    },
    { additionalProperties: false },
  ),
);
