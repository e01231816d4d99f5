// What an uploaded attachment is, decided from its bytes and never from what the client says, and
// whether it may be kept: its type (detected by `file-type`, or plain text as UTF-8 with no control
// characters), among the accepted types; the same type as its name's extension and any declared
// media type say; not empty; and, for a PDF, without active content (JavaScript, an embedded file, a
// launch action), looked for in the file's own objects and inside its compressed object streams.
// A file name is kept only without a path or control characters. docs/attachments.md says why each.
import zlib from 'node:zlib';
import { fileTypeFromBuffer } from 'file-type';
import { ATTACHMENT_TYPES, type AttachmentType } from '../domain/attachments.ts';

export type AttachmentRefusalReason =
  'empty-file' | 'type-not-accepted' | 'type-mismatch' | 'pdf-active-content' | 'pdf-unreadable';

export interface AttachmentRefusal {
  readonly reason: AttachmentRefusalReason;
  /** 415 for a type refused, 400 for content refused. */
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

export async function inspectAttachment(
  bytes: Uint8Array,
  declared: { readonly fileName: string; readonly mediaType?: string },
  accepted: ReadonlySet<AttachmentType>,
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
    const active = pdfActiveContent(bytes);
    if (active === 'unreadable') {
      return refuse(
        'pdf-unreadable',
        400,
        'The PDF has compressed objects that cannot be read, so it cannot be checked for active content.',
      );
    }
    if (active !== undefined) {
      return refuse('pdf-active-content', 400, `The PDF contains ${active}, which is not accepted.`);
    }
  }
  return { ok: true, type, mediaType };
}

/** What makes a PDF act rather than show, as a refusal names it. */
export type PdfActiveContent = 'JavaScript' | 'an embedded file' | 'a launch action';

/** PDF names that make a document act rather than show, and what to call each in a refusal. */
const ACTIVE_NAMES = new Map<string, PdfActiveContent>([
  ['JavaScript', 'JavaScript'],
  ['JS', 'JavaScript'],
  ['EmbeddedFile', 'an embedded file'],
  ['EmbeddedFiles', 'an embedded file'],
  ['Launch', 'a launch action'],
]);

/** How much of a PDF's compressed object streams is inflated to look inside, at most. */
const MAX_INFLATED_BYTES = 64 * 1024 * 1024;

/**
 * What active content a PDF has (a phrase for people), 'unreadable' when an object stream cannot be
 * inflated within the limit, or undefined. Names are read with their `#xx` escapes decoded
 * (`/J#61vaScript` is `/JavaScript`).
 */
export function pdfActiveContent(bytes: Uint8Array): PdfActiveContent | 'unreadable' | undefined {
  const text = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('latin1');
  let inflatedTotal = 0;
  let position = 0;
  // The file's own objects are read as they are; a stream's data is not (binary data can hold any
  // bytes), except an object stream's (`/Type /ObjStm`), which holds dictionaries compressed.
  const streamStart = /(?<!end)stream\r?\n/g;
  for (;;) {
    streamStart.lastIndex = position;
    const match = streamStart.exec(text);
    const objects = text.slice(position, match?.index ?? text.length);
    const found = activeNameIn(objects);
    if (found !== undefined) return found;
    if (match === null) return undefined;
    const dataStart = match.index + match[0].length;
    const dataEnd = text.indexOf('endstream', dataStart);
    if (dataEnd === -1) return 'unreadable';
    position = dataEnd + 'endstream'.length;
    // The stream's dictionary: from its object's `N G obj` (the last `obj` before the data).
    const dictionary = decodeNames(objects.slice(Math.max(0, objects.lastIndexOf('obj'))));
    if (!/\/Type\s*\/ObjStm\b/.test(dictionary)) continue;
    let inside: string;
    if (/\/FlateDecode\b/.test(dictionary)) {
      try {
        const inflated = zlib.inflateSync(bytes.subarray(dataStart, dataEnd), {
          maxOutputLength: MAX_INFLATED_BYTES - inflatedTotal,
          finishFlush: zlib.constants.Z_SYNC_FLUSH,
        });
        inflatedTotal += inflated.length;
        inside = inflated.toString('latin1');
      } catch {
        return 'unreadable';
      }
    } else if (/\/Filter\b/.test(dictionary)) {
      // Another filter (or a chain of them) that is not inflated here.
      return 'unreadable';
    } else {
      inside = text.slice(dataStart, dataEnd);
    }
    const inObjectStream = activeNameIn(inside);
    if (inObjectStream !== undefined) return inObjectStream;
  }
}

function decodeNames(text: string): string {
  return text.replace(/#([0-9A-Fa-f]{2})/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)));
}

function activeNameIn(text: string): PdfActiveContent | undefined {
  // A name is a solidus and the regular characters after it, up to whitespace or a delimiter.
  for (const match of text.matchAll(/\/([^\s/()<>[\]{}%]+)/g)) {
    const name = match[1] === undefined ? undefined : ACTIVE_NAMES.get(decodeNames(match[1]));
    if (name !== undefined) return name;
  }
  return undefined;
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
