// Reading a file the form posts (multipart/form-data, as a browser builds it without script) and
// telling people why a file was refused.
//
// The upload form sends the session's token first and the file after it, nothing else. The token is
// checked before any of the file is kept: a post from elsewhere is read to its end (so the browser gets
// its answer) and dropped. The file is kept in the room the upload was admitted with, shared with the
// API's uploads (api/upload-budget.ts), up to the size limit and no further; past it, the rest is read
// and dropped, and the person is told the limit. A file that finds no room within a short wait is
// read to its end and dropped too, and the person is asked to attach it again in a moment. Neither
// the file's name nor its bytes go to a log, a URL or a page other than the list of files.
import type { Readable } from 'node:stream';
import { finished } from 'node:stream/promises';
import type { FastifyRequest } from 'fastify';
import type { Multipart } from '@fastify/multipart';
import { UploadsBusyError, type AttachmentRefusedError } from '../../errors.ts';
import type { UploadBody } from '../upload-budget.ts';
import { acceptedTypesWords, limitWords, type FileRules } from './attachments-items.ts';
import { WebPageError } from './web-pages.ts';

export interface PostedFile {
  readonly bytes: Buffer;
  readonly fileName: string;
  /** The media type the browser gave the file (from its name's extension): checked, never trusted. */
  readonly declaredType: string | undefined;
}

export type Upload =
  | { readonly kind: 'file'; readonly file: PostedFile }
  /** The form was sent with no file chosen. */
  | { readonly kind: 'none' }
  /** The file is larger than the limit: its bytes were dropped. */
  | { readonly kind: 'too-large' }
  /** The file found no room within its wait: its bytes were dropped. */
  | { readonly kind: 'busy'; readonly refusal: UploadsBusyError };

/** The field the form's file input posts as. */
export const FILE_FIELD = 'file';

/** Where a refusal names the file's name: the form's field. */
export const FILE_NAME_FIELD = 'body.file';

export const BAD_UPLOAD = (): WebPageError =>
  new WebPageError(400, 'The form could not be read', [
    'No file was attached. Go back to the referral, reload the page and attach the file again.',
  ]);

/**
 * What the parser may take from an upload: one file of up to `maxBytes`, and a few small fields (the
 * form sends one, the token; others are refused after the request has been read).
 */
export function uploadLimits(maxBytes: number) {
  return {
    fileSize: maxBytes,
    files: 1,
    fields: 4,
    parts: 6,
    fieldSize: 256,
    fieldNameSize: 64,
    headerPairs: 16,
  };
}

function isFileTooLarge(error: unknown): boolean {
  return (error as { code?: unknown } | null)?.code === 'FST_REQ_FILE_TOO_LARGE';
}

/** Reads a stream to its end, keeping nothing. */
async function drop(stream: Readable): Promise<void> {
  stream.resume();
  await finished(stream);
}

/** Where a post that found no room keeps its file: nowhere; the file is read and dropped. */
export function noRoom(refusal: UploadsBusyError): UploadBody {
  return {
    keep: () => Promise.reject(refusal),
    whole: () => Promise.reject(refusal),
    received: 0,
  };
}

/**
 * Keeps the file's bytes in `body` as they arrive: the file, once it has arrived whole; too large once
 * the parser cut it at the limit; or busy when `body` found no room, the rest then read and dropped.
 */
async function keepFile(file: Readable, body: UploadBody): Promise<Buffer | 'too-large' | UploadsBusyError> {
  try {
    // The iterator must not destroy the file's stream when the loop ends early: the parser would stop.
    for await (const piece of file.iterator({ destroyOnReturn: false })) await body.keep(piece as Buffer);
    if ((file as Readable & { truncated?: boolean }).truncated === true) return 'too-large';
    return await body.whole();
  } catch (error) {
    if (!(error instanceof UploadsBusyError)) throw error;
    await drop(file);
    return error;
  }
}

/**
 * Reads the upload to its end, keeping the file in `body`. `checkToken` is called with the token
 * before the file is read, and may throw (a post from another page): the file is then dropped, and
 * the error thrown once the request has been read. Anything the form does not send is BAD_UPLOAD.
 */
export async function readUpload(
  request: FastifyRequest,
  body: UploadBody,
  maxBytes: number,
  checkToken: (token: string | undefined) => void,
): Promise<Upload> {
  if (!request.isMultipart()) throw BAD_UPLOAD();
  let token: string | undefined;
  let checked = false;
  let refusal: Error | undefined;
  let upload: Upload | undefined;
  let malformed = false;
  const check = () => {
    if (checked) return;
    checked = true;
    try {
      checkToken(token);
    } catch (error) {
      refusal = error instanceof Error ? error : new Error('the token was refused');
    }
  };
  try {
    for await (const part of request.parts({ limits: uploadLimits(maxBytes) }) as AsyncIterable<Multipart>) {
      if (part.type === 'field') {
        const first = token === undefined && upload === undefined && !checked;
        if (part.fieldname === '_csrf' && first && typeof part.value === 'string' && !part.valueTruncated) {
          token = part.value;
        } else {
          malformed = true;
        }
        continue;
      }
      check();
      if (refusal !== undefined || malformed || upload !== undefined || part.fieldname !== FILE_FIELD) {
        malformed ||= refusal === undefined;
        await drop(part.file);
        continue;
      }
      // A browser sends the file input with an empty name and no bytes when no file was chosen.
      if (part.filename === '') {
        await drop(part.file);
        upload = { kind: 'none' };
        continue;
      }
      const kept = await keepFile(part.file, body);
      upload =
        kept === 'too-large'
          ? { kind: 'too-large' }
          : kept instanceof UploadsBusyError
            ? { kind: 'busy', refusal: kept }
            : {
                kind: 'file',
                file: { bytes: kept, fileName: part.filename, declaredType: part.mimetype || undefined },
              };
    }
  } catch (error) {
    // The file past the limit is reported again once the request ends; anything else the parser
    // refuses (a second file, too many fields, a body cut short) was not sent by the form. What is
    // left of such a request is read and dropped, so the browser gets its answer.
    if (!(isFileTooLarge(error) && upload?.kind === 'too-large')) {
      malformed = true;
      request.raw.unpipe();
      request.raw.resume();
    }
  }
  check();
  if (refusal !== undefined) throw refusal;
  if (malformed || upload === undefined) throw BAD_UPLOAD();
  return upload;
}

/** A file the service refused, in words for people: why, and what to do. Never its name or content. */
export function refusalWords(error: AttachmentRefusedError, rules: FileRules): string {
  const reason = error.extra.reason;
  switch (reason) {
    case 'type-not-accepted':
      return `This type of file is not accepted. The accepted types are: ${acceptedTypesWords(rules.types)}.`;
    case 'type-mismatch':
      return (
        'The file’s content is not the type its name says (a name ending in .pdf must hold a PDF, for ' +
        'example). Check that it is the file you meant, or rename it to end in its real type, then attach it again.'
      );
    case 'empty-file':
      return 'The file is empty. Check that it is the file you meant and that it opens, then attach it again.';
    case 'pdf-active-content':
      // The service's sentence names what was found ("The PDF contains JavaScript, which is not accepted.").
      return (
        `${error.message} Content like this can run on the reader’s computer. Print the document to a ` +
        'new PDF, or save it again without it, and attach that.'
      );
    case 'pdf-unreadable':
      return (
        'The PDF cannot be read whole (it may be damaged, locked with a password or very large), so it ' +
        'cannot be checked for content that runs on the reader’s computer. Print the document to a new ' +
        'PDF and attach that.'
      );
    case 'pdf-not-checked': {
      const others = acceptedTypesWords(new Set([...rules.types].filter((type) => type !== 'pdf')));
      return (
        'PDFs cannot be attached here at the moment: refhub has no program to check them for content ' +
        'that runs on the reader’s computer. ' +
        (others === ''
          ? 'Ask your administrator.'
          : `Attach the document as another type (${others}), or ask your administrator.`)
      );
    }
    case 'file-name':
      return `${error.message} Rename the file, then attach it again.`;
    default:
      return error.message;
  }
}

/** A file past the size limit, in words for people. */
export function tooLargeWords(rules: FileRules): string {
  return (
    `The file is larger than ${limitWords(rules.maxBytes)}, the most a file may be. Make it smaller ` +
    '(scan it at a lower resolution, or save the PDF at a smaller size) and attach it again.'
  );
}

/** A referral that holds as many files as it may, in words for people. */
export function tooManyWords(rules: FileRules, removable: boolean): string {
  return (
    `This referral already has ${rules.perReferral} files, the most it can hold.` +
    (removable ? ' Remove one to attach another.' : '')
  );
}

export const NO_FILE_WORDS = 'Choose a file to attach.';

/** A file that found no room within its wait, in words for people: nothing was kept; try again soon. */
export function busyWords(refusal: UploadsBusyError): string {
  const seconds = refusal.retryAfterSeconds ?? 1;
  return (
    'The file could not be taken just now, because many files are being attached at the same time. ' +
    `Nothing was saved. Wait ${seconds === 1 ? 'a second' : `${seconds} seconds`} and attach it again.`
  );
}
