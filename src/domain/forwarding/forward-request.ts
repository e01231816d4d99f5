// The EHR forward request (contract §7): the JSON the forwarding worker POSTs to the EHR, and the
// schema the sandbox EHR holds it to. One definition serves both sides, so the sender and the
// stand-in receiver cannot drift apart.
//
// Size limits. `notesItem.text` is the rendered EHR form. The largest form the service can produce
// is a referral with 200 notes of 8,000 characters each, every character escaped to up to six
// (`"` → `&quot;`): about 9.6 million characters plus markup. The schema allows 12 Mi characters,
// and a receiver caps the whole body at 16 MiB (`MAX_FORWARD_BODY_BYTES`), which also bounds text
// that is mostly multi-byte UTF-8. Every other string is bounded like the API field it comes from.
import { Ajv, type ErrorObject } from 'ajv';
import formats from 'ajv-formats';
import { Type, type Static } from 'typebox';
import { MAX_ATTACHMENT_BYTES } from '../attachments.ts';
import { sha256Hex } from './content-digest.ts';
import {
  ATTACHMENT_MESSAGE_ID_PATTERN,
  attachmentMessageIdOf,
  MAX_ATTACHMENT_MESSAGE_ID_LENGTH,
  MAX_MESSAGE_ID_LENGTH,
  MESSAGE_ID_PATTERN,
  messageIdOf,
} from '../ids.ts';

export interface EhrForwardRequest {
  /** `${referralId}.v${version}`; also the request's `Idempotency-Key`. */
  readonly messageId: string;
  readonly referralId: string;
  /** The referral version the form was rendered from; an integer ≥ 1. */
  readonly version: number;
  readonly patient: {
    readonly uin: string;
    readonly name: string;
    /** `YYYY-MM-DD`. */
    readonly dob: string | null;
  };
  readonly referralRequest: {
    /** `code` is the offering's `ehrCode`; `textDescription` its specialty. */
    readonly specialty: { readonly code: string; readonly textDescription: string };
    /** `textDescription` is the `ehrFormType`, for example `Specialist Referral|Patient Summary`. */
    readonly type: { readonly textDescription: string };
  };
  /** `text` is the ehrForm HTML, byte for byte as rendered. */
  readonly notesItem: { readonly text: string };
}

/** The most characters `notesItem.text` may hold (see the header comment). */
export const MAX_EHR_FORM_LENGTH = 12 * 1024 * 1024;
/** The most bytes a forward request body may have. */
export const MAX_FORWARD_BODY_BYTES = 16 * 1024 * 1024;
// The message ID's shape is domain/ids.ts's; the sandbox EHR and the tests take it from here too.

const Text = (maxLength: number) => Type.String({ minLength: 1, maxLength });

export const EhrForwardRequestSchema = Type.Object(
  {
    messageId: Type.String({
      maxLength: MAX_MESSAGE_ID_LENGTH,
      pattern: MESSAGE_ID_PATTERN,
    }),
    referralId: Type.String({ format: 'uuid', maxLength: 36 }),
    version: Type.Integer({ minimum: 1, maximum: 2_147_483_647 }),
    patient: Type.Object(
      {
        uin: Type.String({ pattern: '^[STFGM][0-9]{7}[A-Z]$', maxLength: 9 }),
        name: Text(200),
        dob: Type.Union([
          Type.String({ format: 'date', pattern: '^[0-9]{4}-[0-9]{2}-[0-9]{2}$', maxLength: 10 }),
          Type.Null(),
        ]),
      },
      { additionalProperties: false },
    ),
    referralRequest: Type.Object(
      {
        specialty: Type.Object(
          { code: Text(64), textDescription: Text(200) },
          { additionalProperties: false },
        ),
        type: Type.Object({ textDescription: Text(500) }, { additionalProperties: false }),
      },
      { additionalProperties: false },
    ),
    notesItem: Type.Object({ text: Text(MAX_EHR_FORM_LENGTH) }, { additionalProperties: false }),
  },
  { additionalProperties: false },
);

export type EhrForwardRequestJson = Static<typeof EhrForwardRequestSchema>;

/**
 * A file sent with one version's form, as a document of its own: the same endpoint, headers and
 * rules as the form's request (`Content-Digest`, `Idempotency-Key: <messageId>`), its own message ID
 * (`<referralId>.v<version>.a<number>`), and the form it goes with.
 */
export interface EhrAttachmentRequest {
  readonly messageId: string;
  /** The message ID of the form this file goes with: `<referralId>.v<version>`. */
  readonly formMessageId: string;
  readonly referralId: string;
  readonly version: number;
  readonly document: {
    /** The file's number within its referral. */
    readonly number: number;
    readonly fileName: string;
    /** The media type refhub detected from the bytes. */
    readonly mediaType: string;
    readonly sizeBytes: number;
    /** Hex SHA-256 of the file's bytes, as the form's Attachments section lists it. */
    readonly sha256: string;
    /** The file's bytes, base64 (RFC 4648, with padding). */
    readonly contentBase64: string;
  };
}

/** The most characters a file's base64 may have: 4 for every 3 bytes of the largest file. */
export const MAX_ATTACHMENT_BASE64_LENGTH = 4 * Math.ceil(MAX_ATTACHMENT_BYTES / 3);

export const EhrAttachmentRequestSchema = Type.Object(
  {
    messageId: Type.String({
      maxLength: MAX_ATTACHMENT_MESSAGE_ID_LENGTH,
      pattern: ATTACHMENT_MESSAGE_ID_PATTERN,
    }),
    formMessageId: Type.String({ maxLength: MAX_MESSAGE_ID_LENGTH, pattern: MESSAGE_ID_PATTERN }),
    referralId: Type.String({ format: 'uuid', maxLength: 36 }),
    version: Type.Integer({ minimum: 1, maximum: 2_147_483_647 }),
    document: Type.Object(
      {
        number: Type.Integer({ minimum: 1, maximum: 999 }),
        fileName: Text(255),
        mediaType: Text(255),
        sizeBytes: Type.Integer({ minimum: 1, maximum: MAX_ATTACHMENT_BYTES }),
        sha256: Type.String({ pattern: '^[0-9a-f]{64}$', maxLength: 64 }),
        contentBase64: Type.String({
          minLength: 4,
          maxLength: MAX_ATTACHMENT_BASE64_LENGTH,
          pattern: '^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$',
        }),
      },
      { additionalProperties: false },
    ),
  },
  { additionalProperties: false },
);

export type EhrAttachmentRequestJson = Static<typeof EhrAttachmentRequestSchema>;

export interface FieldProblem {
  /** A JSON Pointer into the document, `''` for the whole of it. */
  readonly path: string;
  readonly message: string;
}

/**
 * Ajv's errors as field problems. A missing or unknown property is named in the path, so that the
 * caller sees which one. Ajv is not run in verbose mode, so no message quotes a value.
 */
export function fieldProblemsOf(errors: readonly ErrorObject[] | null | undefined): FieldProblem[] {
  return (errors ?? []).map((e) => {
    const params = e.params as { missingProperty?: string; additionalProperty?: string };
    const property = params.missingProperty ?? params.additionalProperty;
    return {
      path: property === undefined ? e.instancePath : `${e.instancePath}/${property}`,
      message: e.message ?? 'is invalid',
    };
  });
}

export type ForwardRequestCheck =
  | { readonly ok: true; readonly request: EhrForwardRequest }
  | { readonly ok: false; readonly problems: readonly FieldProblem[] };

export type AttachmentRequestCheck =
  | { readonly ok: true; readonly request: EhrAttachmentRequest; readonly content: Buffer }
  | { readonly ok: false; readonly problems: readonly FieldProblem[] };

function newAjv(): Ajv {
  const ajv = new Ajv({ allErrors: true, removeAdditional: false, coerceTypes: false, useDefaults: false });
  formats.default(ajv);
  return ajv;
}

/**
 * A checker for parsed forward-request JSON: the schema, then the rule the schema cannot state
 * (`messageId` is `referralId` and `version` joined). Problems name fields, never their values, so
 * they are safe to return and to log. A factory because a compiled Ajv validator keeps the errors
 * of its last call on itself.
 */
export function createForwardRequestChecker(): (value: unknown) => ForwardRequestCheck {
  const validate = newAjv().compile<EhrForwardRequestJson>(EhrForwardRequestSchema);
  return (value) => {
    if (!validate(value)) return { ok: false, problems: fieldProblemsOf(validate.errors) };
    const expected = messageIdOf(value.referralId, value.version);
    if (value.messageId !== expected) {
      return {
        ok: false,
        problems: [{ path: '/messageId', message: `must equal referralId + ".v" + version (${expected})` }],
      };
    }
    return { ok: true, request: value };
  };
}

/**
 * A checker for parsed attachment-request JSON: the schema, then what it cannot state: the message
 * IDs are the referral's, version's and number's, and the decoded bytes have the size and SHA-256 the
 * document says. Answers the decoded bytes with the request. Problems name fields, never values.
 */
export function createAttachmentRequestChecker(): (value: unknown) => AttachmentRequestCheck {
  const validate = newAjv().compile<EhrAttachmentRequestJson>(EhrAttachmentRequestSchema);
  return (value) => {
    if (!validate(value)) return { ok: false, problems: fieldProblemsOf(validate.errors) };
    const expected = attachmentMessageIdOf(value.referralId, value.version, value.document.number);
    const problems: FieldProblem[] = [];
    if (value.messageId !== expected) {
      problems.push({
        path: '/messageId',
        message: `must equal referralId + ".v" + version + ".a" + document.number (${expected})`,
      });
    }
    const form = messageIdOf(value.referralId, value.version);
    if (value.formMessageId !== form) {
      problems.push({ path: '/formMessageId', message: `must equal referralId + ".v" + version (${form})` });
    }
    const content = Buffer.from(value.document.contentBase64, 'base64');
    if (content.length !== value.document.sizeBytes) {
      problems.push({ path: '/document/sizeBytes', message: 'must equal the length of the decoded content' });
    } else if (sha256Hex(content) !== value.document.sha256) {
      problems.push({ path: '/document/sha256', message: 'must be the SHA-256 of the decoded content' });
    }
    return problems.length > 0 ? { ok: false, problems } : { ok: true, request: value, content };
  };
}
