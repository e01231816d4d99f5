// A referral's attachments (docs/attachments.md). A file is uploaded as the request body itself, in
// the media type the client believes it has, with its name in `Content-Disposition` (RFC 6266, the
// name in RFC 8187 form when it is not ASCII), and the institution in the query as for a read. One
// file per request, so the API holds at most one file for each upload in flight, and takes room for
// it as it arrives, within its credential's and its institution's shares (api/upload-budget.ts): an
// upload that finds no room within a short wait is answered 503 and nothing of it is stored.
//
// The content is answered as the file's detected media type, a piece at a time from the database,
// with `Content-Digest` (RFC 9530) and an `ETag` that are its SHA-256.
import type { Readable } from 'node:stream';
import { parse as parseContentDisposition, type ContentDisposition } from 'content-disposition';
import { errorCodes, type FastifyInstance, type FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { ATTACHMENT_TYPE_NAMES, ATTACHMENT_TYPES } from '../../domain/attachments.ts';
import type { UploadParty } from '../../domain/upload-room.ts';
import { AttachmentRefusedError } from '../../errors.ts';
import type { ApiDeps } from '../api-deps.ts';
import { sendAttachmentContent } from '../attachment-content.ts';
import { API_PREFIX, ifMatchOf } from '../http.ts';
import type { UploadBody, UploadBudget } from '../upload-budget.ts';
import { callerOf } from '../plugins/auth.ts';
import { Attachment, AttachmentAdded, AttachmentList } from '../schemas/attachments.schema.ts';
import { documentedAs } from '../schemas/documented.ts';
import { GuardedHeaders, GuardedPostHeaders } from '../schemas/headers.ts';
import { ref } from '../schemas/named.ts';
import { operation } from '../schemas/operation.ts';
import {
  InstitutionId,
  InstitutionIdType,
  ReferralId,
  ReferralIdParams,
  RequesterIdentifier,
} from '../schemas/primitives.ts';
import { problems, success, uploadsBusy } from '../schemas/responses.ts';

export type AttachmentsRoutesDeps = Pick<ApiDeps, 'attachments' | 'config'>;

const ActingForQuery = Type.Object(
  {
    institutionIdType: InstitutionIdType,
    institutionId: InstitutionId,
    requesterIdentifier: Type.Optional(RequesterIdentifier),
  },
  { additionalProperties: false },
);

const AttachmentParams = Type.Object(
  { referralId: ReferralId, attachmentId: Type.String({ format: 'uuid', maxLength: 36 }) },
  { additionalProperties: false },
);

const FileNameHeader = Type.String({
  maxLength: 2048,
  description:
    'The file’s name: `attachment; filename="letter.pdf"`, or for a name that is not ASCII ' +
    "`attachment; filename*=UTF-8''%E5%BF%83%E9%9B%BB%E5%9B%BE.pdf` (RFC 8187). A name may not hold " +
    'a path, control characters or more than 255 bytes.',
});

// Request headers arrive with lowercase names, and are validated so; the document names them as
// HTTP writes them.
const UploadHeaders = documentedAs(
  Type.Object({ 'content-disposition': FileNameHeader }),
  Type.Object({ ...GuardedPostHeaders.properties, 'Content-Disposition': FileNameHeader }),
);

/** The media types an upload may be sent as: any accepted type, or plain bytes. */
const UPLOAD_MEDIA_TYPES = [
  'application/octet-stream',
  ...ATTACHMENT_TYPE_NAMES.map((type) => ATTACHMENT_TYPES[type].mediaType),
];

/** Where an upload names its file, as a refusal names it. */
const FILE_NAME_FIELD = 'header.Content-Disposition';

/** What the document says the content is: bytes, in the file's own media type. */
const FILE_BYTES = { type: 'string', format: 'binary' } as const;

/** The file's name from `Content-Disposition`, or a 400 naming the header. */
function fileNameOf(header: string): string {
  const malformed = () =>
    new AttachmentRefusedError(
      400,
      'file-name',
      'Content-Disposition is not well-formed; send attachment; filename="…" (or filename*= for a name that is not ASCII).',
      FILE_NAME_FIELD,
    );
  let parsed: ContentDisposition;
  try {
    parsed = parseContentDisposition(header);
  } catch {
    throw malformed();
  }
  if (!/^(attachment|inline)$/i.test(parsed.type)) throw malformed();
  const name = parsed.parameters['filename'];
  if (name === undefined) {
    throw new AttachmentRefusedError(
      400,
      'file-name',
      'Content-Disposition names no file; send attachment; filename="…".',
      FILE_NAME_FIELD,
    );
  }
  return name;
}

/**
 * Whose share an upload takes: the caller's credential and the institution it acts for, checked as
 * the handler checks them (a key that may not act for it is refused now, before any byte is read).
 * Undefined when the query is not valid: the request is refused once parsed, and its body never read.
 */
function uploadPartyOf(request: FastifyRequest): UploadParty | undefined {
  const validQuery = request.getValidationFunction('querystring');
  if (validQuery !== undefined && !validQuery(request.query)) return undefined;
  const query = request.query as { institutionIdType?: unknown; institutionId?: unknown };
  const { institutionIdType: idType, institutionId: id } = query;
  if (typeof idType !== 'string' || typeof id !== 'string') return undefined;
  const caller = callerOf(request, { idType, id }, undefined);
  return { credential: caller.apiKeyId, institution: `${idType}/${id}` };
}

function declaredTypeOf(request: FastifyRequest): string | undefined {
  const declared = request.headers['content-type'];
  return typeof declared === 'string' && declared.trim() !== '' ? declared : undefined;
}

/** The length a request declares, or undefined for a body of no declared length (chunked). */
function declaredLengthOf(request: FastifyRequest): number | undefined {
  const declared = request.headers['content-length'];
  if (declared === undefined) return undefined;
  const length = Number(declared);
  if (!Number.isSafeInteger(length) || length < 0) throw new errorCodes.FST_ERR_CTP_INVALID_CONTENT_LENGTH();
  return length;
}

/**
 * A request body kept by `body` as it arrives. Past `limit`, or longer or shorter than declared, it is
 * refused with Fastify's own errors (413, 400). Once refused, or once the room for it ran out, the
 * rest is read and dropped rather than the connection reset, so that the client gets its answer.
 */
async function readFile(
  stream: Readable,
  length: number | undefined,
  limit: number,
  body: UploadBody,
): Promise<Buffer> {
  // The iterator must not destroy the stream when the loop ends early: that resets the connection.
  try {
    for await (const chunk of stream.iterator({ destroyOnReturn: false })) {
      const piece = chunk as Buffer;
      if (body.received + piece.length > (length ?? limit)) {
        throw length === undefined
          ? new errorCodes.FST_ERR_CTP_BODY_TOO_LARGE()
          : new errorCodes.FST_ERR_CTP_INVALID_CONTENT_LENGTH();
      }
      await body.keep(piece);
    }
  } catch (error) {
    stream.resume();
    throw error;
  }
  if (length !== undefined && body.received !== length)
    throw new errorCodes.FST_ERR_CTP_INVALID_CONTENT_LENGTH();
  return body.whole();
}

export function attachmentsRoutes(deps: AttachmentsRoutesDeps, uploads: UploadBudget) {
  return (fastify: FastifyInstance) => {
    const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
    const attachments = deps.attachments;
    const maxBytes = deps.config.attachmentMaxBytes;

    // The room each upload was admitted with (preParsing), for the parser that keeps its body.
    const admitted = new WeakMap<FastifyRequest, UploadBody>();

    // Within these routes a body is a file, whatever its type: kept as bytes, at most maxBytes, in the
    // room the upload was admitted with. A body nobody admitted is not read: a request whose length
    // is past the limit is refused at once, and one whose query is refused is answered without it.
    app.removeAllContentTypeParsers();
    app.addContentTypeParser('*', (request, payload, done) => {
      let length: number | undefined;
      try {
        length = declaredLengthOf(request);
        if (length !== undefined && length > maxBytes) throw new errorCodes.FST_ERR_CTP_BODY_TOO_LARGE();
      } catch (error) {
        done(error as Error, undefined);
        return;
      }
      const body = admitted.get(request);
      if (body === undefined) {
        done(null, undefined);
        return;
      }
      readFile(payload, length, maxBytes, body).then(
        (bytes) => {
          done(null, bytes);
        },
        (error: unknown) => {
          done(error as Error, undefined);
        },
      );
    });
    // An upload is admitted before a byte of it is read: the caller is checked (a key that may not act
    // for the institution is refused here), and the upload claims its declared length (a chunked one,
    // the limit) from its credential's and its institution's shares (api/upload-budget.ts).
    app.addHook('preParsing', async (request, reply, payload) => {
      if (request.method !== 'POST') return payload;
      const declared = request.headers['content-length'];
      const length = declared === undefined ? undefined : Number(declared);
      // A length that is not a number, or past the limit: the parser refuses it without reading.
      if (length !== undefined && !(Number.isSafeInteger(length) && length >= 0 && length <= maxBytes)) {
        return payload;
      }
      const party = uploadPartyOf(request);
      if (party === undefined) return payload;
      admitted.set(request, await uploads.admit(reply, party, length ?? maxBytes, length !== undefined));
      return payload;
    });

    // An answer sent before the body has arrived whole (413 past the limit, 503 without room, 403 for
    // another institution): Fastify asks for the connection to be closed, which with bytes still on
    // their way resets it, and the client never reads its answer. Instead the rest of the body is read
    // and dropped, and the connection stays open for the client's next request; a client that never
    // finishes is cut off by HTTP_REQUEST_TIMEOUT_SECONDS as any other.
    app.addHook('onSend', async (request, reply, payload) => {
      if (request.method === 'POST' && !request.raw.complete) {
        reply.removeHeader('connection');
        request.raw.resume();
      }
      return payload;
    });

    app.post(
      '/referrals/:referralId/attachments',
      {
        bodyLimit: maxBytes,
        config: {
          action: 'referral.add-attachment',
          responseHeaders: (view: { readonly id: string; readonly referralId: string }) => ({
            location: `${API_PREFIX}/referrals/${view.referralId}/attachments/${view.id}`,
          }),
        },
        schema: {
          ...operation({
            operationId: 'addAttachment',
            tag: 'Attachments',
            scope: 'system/Referral.write',
            summary: 'Attach a file to a referral',
            description:
              'The request body is the file itself, with `Content-Type` the type the client believes it ' +
              'has and its name in `Content-Disposition`. refhub detects the type from the bytes: PDF, ' +
              'JPEG, PNG, TIFF, plain text (UTF-8) and DOCX are accepted unless the installation says ' +
              'otherwise. 415 `attachment_refused` for a type not accepted, or a name or `Content-Type` ' +
              'the bytes contradict (and for every PDF where the installation cannot check PDFs); 400 ' +
              'for an empty file, a PDF with active content (JavaScript, an embedded file, a launch ' +
              'action, an XFA form, rich media, a form submission or data import action) or one that ' +
              'cannot be read whole, or a name with a path or control characters (`reason` says which); ' +
              '413 past the size limit (10 MiB unless set otherwise), also for a body of no declared ' +
              'length; 409 `limit_exceeded` past the attachments a referral may hold (20 unless set ' +
              'otherwise); 503 `uploads_busy` with `Retry-After` when the uploads in progress (the ' +
              'credential’s, the institution’s, or the server’s) leave no room for this one within a ' +
              'short wait, and 503 `unavailable` with `Retry-After` while PDF checks are busy, with ' +
              'nothing stored: retry after the delay, with the same `Idempotency-Key`. The sender ' +
              'attaches while the referral is a draft or waits for the sender; the provider once it has ' +
              'accepted it. The file is `pending-scan` until the malware scan answers. Adding one changes ' +
              'the referral’s version.',
          }),
          headers: UploadHeaders,
          params: ReferralIdParams,
          querystring: ActingForQuery,
          body: documentedAs(Type.Unknown(), Type.Unsafe<unknown>(FILE_BYTES)),
          consumes: UPLOAD_MEDIA_TYPES,
          response: {
            201: success(ref(AttachmentAdded), 'The attachment, and the referral’s version since.', {
              location: true,
              idempotent: true,
            }),
            ...problems({ idempotent: true }),
            503: uploadsBusy(),
          },
        },
      },
      async (request, reply) => {
        const { query, params } = request;
        const caller = callerOf(
          request,
          { idType: query.institutionIdType, id: query.institutionId },
          query.requesterIdentifier,
        );
        const view = await attachments.add(
          caller,
          params.referralId,
          {
            // No body at all is an empty file, refused as one.
            bytes: Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0),
            fileName: fileNameOf(request.headers['content-disposition']),
            declaredType: declaredTypeOf(request),
            fileNameField: FILE_NAME_FIELD,
          },
          ifMatchOf(request),
        );
        return reply.code(201).send(view);
      },
    );

    app.get(
      '/referrals/:referralId/attachments',
      {
        config: { action: 'referral.read-attachments' },
        schema: {
          ...operation({
            operationId: 'listAttachments',
            tag: 'Attachments',
            scope: 'system/Referral.read',
            summary: 'List a referral’s attachments',
            description: 'Every file attached to the referral, with its type, size, SHA-256 and scan state.',
          }),
          params: ReferralIdParams,
          querystring: ActingForQuery,
          response: {
            200: success(ref(AttachmentList), 'The attachments, in the order they were added.'),
            ...problems(),
          },
        },
      },
      async (request) => {
        const { query } = request;
        const caller = callerOf(
          request,
          { idType: query.institutionIdType, id: query.institutionId },
          query.requesterIdentifier,
        );
        return { data: await attachments.list(caller, request.params.referralId) };
      },
    );

    app.get(
      '/referrals/:referralId/attachments/:attachmentId',
      {
        config: { action: 'referral.read-attachments' },
        schema: {
          ...operation({
            operationId: 'getAttachment',
            tag: 'Attachments',
            scope: 'system/Referral.read',
            summary: 'Get an attachment’s metadata',
            description: 'Its type, size, SHA-256 and scan state; the content is at `…/content`.',
          }),
          params: AttachmentParams,
          querystring: ActingForQuery,
          response: { 200: success(ref(Attachment), 'The attachment.'), ...problems() },
        },
      },
      async (request) => {
        const { query, params } = request;
        const caller = callerOf(
          request,
          { idType: query.institutionIdType, id: query.institutionId },
          query.requesterIdentifier,
        );
        return attachments.get(caller, params.referralId, params.attachmentId);
      },
    );

    app.get(
      '/referrals/:referralId/attachments/:attachmentId/content',
      {
        config: { action: 'referral.read-attachment-content' },
        schema: {
          ...operation({
            operationId: 'getAttachmentContent',
            tag: 'Attachments',
            scope: 'system/Referral.read',
            summary: 'Download an attachment',
            description:
              'The file’s bytes, as its detected media type, with `Content-Disposition` giving its name, ' +
              '`Content-Digest` (RFC 9530) and `ETag` its SHA-256. 409 `attachment_pending_scan` (with ' +
              '`Retry-After`) until the malware scan finds it clean; 410 `attachment_rejected` once the ' +
              'scan found a threat. Every download is audited.',
          }),
          params: AttachmentParams,
          querystring: ActingForQuery,
          response: {
            200: success(
              Type.Unsafe<unknown>(FILE_BYTES),
              'The file, in its own media type (`Content-Type`), whatever this document lists.',
              {
                contentType: 'application/octet-stream',
                headers: {
                  'Content-Disposition': Type.String({ description: 'attachment, with the file’s name.' }),
                  'Content-Digest': Type.String({ description: 'The SHA-256 of the content (RFC 9530).' }),
                  ETag: Type.String({ description: 'The SHA-256 of the content, hex, quoted.' }),
                },
              },
            ),
            ...problems(),
          },
        },
      },
      async (request, reply) => {
        const { query, params } = request;
        const caller = callerOf(
          request,
          { idType: query.institutionIdType, id: query.institutionId },
          query.requesterIdentifier,
        );
        return sendAttachmentContent(
          reply,
          await attachments.content(caller, params.referralId, params.attachmentId),
        );
      },
    );

    app.delete(
      '/referrals/:referralId/attachments/:attachmentId',
      {
        config: { action: 'referral.remove-attachment' },
        schema: {
          ...operation({
            operationId: 'removeAttachment',
            tag: 'Attachments',
            scope: 'system/Referral.write',
            summary: 'Remove an attachment from a draft',
            description:
              'The sender removes a file while the referral is a draft; once submitted, the provider and ' +
              'the national record may have it, so it stays. Removing one changes the referral’s version. ' +
              'Answers the attachment as it was.',
          }),
          headers: GuardedHeaders,
          params: AttachmentParams,
          querystring: ActingForQuery,
          response: {
            200: success(ref(Attachment), 'The attachment as it was.'),
            ...problems(),
          },
        },
      },
      async (request) => {
        const { query, params } = request;
        const caller = callerOf(
          request,
          { idType: query.institutionIdType, id: query.institutionId },
          query.requesterIdentifier,
        );
        return attachments.remove(caller, params.referralId, params.attachmentId, ifMatchOf(request));
      },
    );
  };
}
