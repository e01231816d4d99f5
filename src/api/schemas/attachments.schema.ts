// The schemas of a referral's attachments (docs/attachments.md): the metadata a list and a read
// return. The content is read at its own path, as the file's own media type.
import { Type } from 'typebox';
import { ATTACHMENT_TYPE_NAMES, ATTACHMENT_TYPES } from '../../domain/attachments.ts';
import { named, ref } from './named.ts';
import { Institution } from './referral.schema.ts';

const MEDIA_TYPES = ATTACHMENT_TYPE_NAMES.map((type) => ATTACHMENT_TYPES[type].mediaType);

const ATTACHMENT_FIELDS = {
  id: Type.String({ format: 'uuid' }),
  referralId: Type.String({ format: 'uuid' }),
  number: Type.Integer({
    minimum: 1,
    description: 'The referral’s own number for the file: 1, 2, … in the order files were added.',
  }),
  fileName: Type.String({ description: 'The name the file was sent with.' }),
  mediaType: Type.String({
    description: `The type refhub detected from the bytes, one of ${MEDIA_TYPES.map((t) => `\`${t}\``).join(', ')}.`,
  }),
  sizeBytes: Type.Integer({ minimum: 1 }),
  sha256: Type.String({ pattern: '^[0-9a-f]{64}$', description: 'SHA-256 of the content, hex.' }),
  scanState: Type.Enum(['pending-scan', 'available', 'rejected', 'not-scanned'], {
    description:
      '`pending-scan` until the malware scan answers, then `available` or `rejected`. `not-scanned` ' +
      'where no scanner runs in refhub (a development installation, or files scanned before they ' +
      'reach refhub): the content can be read, unchecked by refhub.',
  }),
  available: Type.Boolean({
    description: 'Whether the content can be read now: `available`, or `not-scanned`.',
  }),
  scannedAt: Type.Optional(
    Type.String({
      format: 'date-time',
      description: 'When the scan answered; absent until then, and where nothing scans.',
    }),
  ),
  addedBy: Type.Enum(['sender', 'provider']),
  authorInstitution: ref(Institution),
  createdAt: Type.String({ format: 'date-time' }),
};

export const Attachment = named(
  'Attachment',
  Type.Object(ATTACHMENT_FIELDS, { description: 'A file attached to a referral.' }),
);

export const AttachmentAdded = named(
  'AttachmentAdded',
  Type.Object(
    {
      ...ATTACHMENT_FIELDS,
      referralVersion: Type.Integer({
        minimum: 1,
        description:
          'The referral’s version once the file was added. The upload is not guarded by If-Match: a ' +
          'client that held the version before it (`W/"N"`, N one less) knows nothing else changed the ' +
          'referral in between, and may guard its next change with `W/"referralVersion"`; otherwise it ' +
          'reads the referral again.',
      }),
    },
    { description: 'A file just attached to a referral, and the referral’s version since.' },
  ),
);

export const AttachmentList = named(
  'AttachmentList',
  Type.Object({ data: Type.Array(ref(Attachment), { description: 'In the order they were added.' }) }),
);
