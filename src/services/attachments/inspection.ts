// What an uploaded attachment is, decided from its bytes and never from what the client says, and
// whether it may be kept: its type (detected by `file-type`, or plain text as UTF-8 with no control
// characters), among the accepted types; the same type as its name's extension and any declared
// media type say; not empty; and, for a PDF, nothing that makes it act rather than show (JavaScript,
// an embedded file, a launch action, an XFA form, rich media, form submission or data import), found
// by qpdf in every object of the file (pdf.ts), and every object readable.
// A file name is kept only without a path or control characters. docs/attachments.md says why each.
import { fileTypeFromBuffer } from 'file-type';
import { ATTACHMENT_TYPES, type AttachmentType } from '../../domain/attachments.ts';
import { UnavailableError } from '../../errors.ts';
import { PDF_CHECK_LIMITS, type PdfCheck, type PdfVerdict } from './pdf.ts';

export type AttachmentRefusalReason =
  | 'empty-file'
  | 'type-not-accepted'
  | 'type-mismatch'
  | 'pdf-active-content'
  | 'pdf-unreadable'
  | 'pdf-not-checked';

export interface AttachmentRefusal {
  readonly reason: AttachmentRefusalReason;
  /** 415 for a type refused (or one this installation cannot check), 400 for content refused. */
  readonly status: 400 | 415;
  /**
   * A sentence for people; it names types and reasons, never the file's name, its extension, the
   * media type the client declared or the content (any of them may hold patient data).
   */
  readonly detail: string;
}

export type Inspection =
  | { readonly ok: true; readonly type: AttachmentType; readonly mediaType: string }
  | { readonly ok: false; readonly refusal: AttachmentRefusal };

const refuse = (reason: AttachmentRefusalReason, status: 400 | 415, detail: string): Inspection => ({
  ok: false,
  refusal: { reason, status, detail },
});

/** The media type `file-type` detects for each accepted type (plain text it cannot detect). */
const TYPE_OF_DETECTED = new Map<string, AttachmentType>(
  (Object.entries(ATTACHMENT_TYPES) as [AttachmentType, { mediaType: string }][])
    .filter(([type]) => type !== 'text')
    .map(([type, { mediaType }]) => [mediaType, type]),
);

/** How much of a file is decoded at once to check it is text: the whole file never is. */
const TEXT_PIECE_BYTES = 64 * 1024;

/**
 * UTF-8 (a BOM allowed) with no control characters but tab, line feed, form feed and carriage return.
 * Decoded a piece at a time, so that checking a large file holds no string of all of it.
 */
export function isPlainText(bytes: Uint8Array): boolean {
  const decoder = new TextDecoder('utf-8', { fatal: true });
  try {
    for (let offset = 0; offset < bytes.length; offset += TEXT_PIECE_BYTES) {
      const piece = bytes.subarray(offset, offset + TEXT_PIECE_BYTES);
      const last = offset + TEXT_PIECE_BYTES >= bytes.length;
      // A character split between two pieces is held back by the decoder until the next one.
      const text = decoder.decode(piece, { stream: !last });
      // eslint-disable-next-line no-control-regex
      if (/[\u0000-\u0008\u000b\u000e-\u001f\u007f-\u009f]/.test(text)) return false;
    }
    return true;
  } catch {
    return false;
  }
}

/**
 * Judges an upload's bytes; `checkPdf` judges a PDF's content (pdf.ts). Throws
 * UnavailableError (503) when a PDF cannot be checked now for a reason that is not the file's.
 */
export async function inspectAttachment(
  bytes: Uint8Array,
  declared: { readonly fileName: string; readonly mediaType?: string },
  accepted: ReadonlySet<AttachmentType>,
  checkPdf: PdfCheck,
): Promise<Inspection> {
  if (bytes.length === 0) return refuse('empty-file', 400, 'The file is empty.');
  const detected = await fileTypeFromBuffer(bytes);
  let type: AttachmentType | undefined;
  if (detected === undefined) {
    type = isPlainText(bytes) ? 'text' : undefined;
  } else {
    type = TYPE_OF_DETECTED.get(detected.mime);
  }
  const acceptedNames = [...accepted].sort().join(', ');
  if (type === undefined || !accepted.has(type)) {
    const what = type ?? detected?.mime ?? 'not a type refhub recognises';
    return refuse(
      'type-not-accepted',
      415,
      `The file's content is ${what}; the accepted types are ${acceptedNames}.`,
    );
  }
  const { mediaType, extensions } = ATTACHMENT_TYPES[type];
  const extension = /\.([^.]+)$/.exec(declared.fileName)?.[1]?.toLowerCase();
  if (extension !== undefined && !(extensions as readonly string[]).includes(extension)) {
    return refuse(
      'type-mismatch',
      415,
      `The file's name ends in an extension that does not match its content, ${type}: rename it or send the right file.`,
    );
  }
  const declaredType = declared.mediaType?.split(';')[0]?.trim().toLowerCase();
  if (
    declaredType !== undefined &&
    declaredType !== '' &&
    declaredType !== 'application/octet-stream' &&
    declaredType !== mediaType
  ) {
    return refuse(
      'type-mismatch',
      415,
      `The file was sent with a media type that does not match its content, ${type} (${mediaType}).`,
    );
  }
  if (type === 'pdf') {
    const refusal = pdfRefusal(await checkPdf(bytes));
    if (refusal !== undefined) return { ok: false, refusal };
  }
  return { ok: true, type, mediaType };
}

const UNREADABLE: Readonly<Record<'damaged' | 'limits', string>> = {
  damaged:
    'The PDF cannot be read whole (it is damaged, or locked with a password), so it cannot be checked ' +
    'for active content.',
  limits:
    'Reading the whole PDF takes more than refhub spends on checking a file (memory, or ' +
    `${PDF_CHECK_LIMITS.cpuSeconds} seconds of processing), so it cannot be checked for active content.`,
};

/** The refusal for a PDF's verdict: its words name what was found, never anything of the file. */
function pdfRefusal(verdict: PdfVerdict): AttachmentRefusal | undefined {
  switch (verdict.kind) {
    case 'clean':
      return undefined;
    case 'active':
      return {
        reason: 'pdf-active-content',
        status: 400,
        detail: `The PDF contains ${verdict.found}, which is not accepted.`,
      };
    case 'unreadable':
      return { reason: 'pdf-unreadable', status: 400, detail: UNREADABLE[verdict.why] };
    case 'no-checker':
      return {
        reason: 'pdf-not-checked',
        status: 415,
        detail:
          'PDFs cannot be accepted by this installation: the program that checks them for active ' +
          'content (qpdf) is missing. Send the document as another accepted type.',
      };
    case 'unavailable':
      throw new UnavailableError(
        verdict.why === 'busy'
          ? 'Too many PDFs are being checked at once; send the file again in a few seconds.'
          : 'The PDF could not be checked for active content in time; send the file again in a few seconds.',
        5,
      );
  }
}

export type FileNameRefusal = 'empty' | 'too-long' | 'path' | 'control-characters' | 'dot-name';

/**
 * Why a file name cannot be kept, or undefined: it is shown to people and sent in headers, so it may
 * not be empty, longer than 255 bytes, a path (`/` or `\`), `.` or `..`, or hold control or
 * direction-changing characters.
 */
export function fileNameRefusal(name: string): FileNameRefusal | undefined {
  if (name.trim() === '') return 'empty';
  if (Buffer.byteLength(name) > 255) return 'too-long';
  if (/[/\\]/.test(name)) return 'path';
  if (name === '.' || name === '..') return 'dot-name';
  // Cc (C0, DEL, C1) and the bidirectional controls, which can make a name read as another.
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/.test(name))
    return 'control-characters';
  return undefined;
}

/**
 * A `Content-Disposition` that downloads the file under its name: an ASCII fallback (anything else
 * replaced by `_`, quotes and backslashes too) and the exact name in RFC 8187 encoding.
 */
export function contentDisposition(name: string): string {
  const fallback = name.replace(/[^\x20-\x7e]|["\\]/g, '_');
  const encoded = encodeURIComponent(name).replace(
    /['()*]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
  );
  return `attachment; filename="${fallback}"; filename*=UTF-8''${encoded}`;
}
