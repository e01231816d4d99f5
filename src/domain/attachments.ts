// Attachments' rules that need no I/O: the types an attachment may have, and where the scanner
// listens.

/** Where ClamAV's daemon (clamd) listens for refhub's scans. */
export interface ClamdAddress {
  readonly host: string;
  readonly port: number;
}

/** `clamd://host:port` or `host:port` (the port is required); undefined when it is neither. */
export function parseClamdAddress(value: string): ClamdAddress | undefined {
  const rest = value.startsWith('clamd://') ? value.slice('clamd://'.length) : value;
  let url: URL;
  try {
    url = new URL(`tcp://${rest}`);
  } catch {
    return undefined;
  }
  const port = Number(url.port);
  if (url.hostname === '' || !Number.isInteger(port) || port < 1 || url.pathname !== '' || url.search)
    return undefined;
  if (url.username !== '' || url.password !== '' || url.hash !== '') return undefined;
  return { host: url.hostname.replace(/^\[(.*)\]$/, '$1'), port };
}

/** The address as ATTACHMENT_SCANNER writes it: `clamd://host:port` (an IPv6 host in brackets). */
export function clamdAddressText(address: ClamdAddress): string {
  const host = address.host.includes(':') ? `[${address.host}]` : address.host;
  return `clamd://${host}:${address.port}`;
}

/**
 * The largest attachment refhub takes, whatever ATTACHMENT_MAX_MIB says: it goes to the EHR as
 * base64 (4/3 of its size) in one request, which a receiver caps at 16 MiB.
 */
export const MAX_ATTACHMENT_BYTES = 10 * 1024 * 1024;

/** The types an attachment may have, by the name settings and the API use, with their media type. */
export const ATTACHMENT_TYPES = {
  pdf: { mediaType: 'application/pdf', extensions: ['pdf'], words: 'PDF' },
  jpeg: { mediaType: 'image/jpeg', extensions: ['jpg', 'jpeg'], words: 'JPEG image' },
  png: { mediaType: 'image/png', extensions: ['png'], words: 'PNG image' },
  tiff: { mediaType: 'image/tiff', extensions: ['tif', 'tiff'], words: 'TIFF image' },
  text: { mediaType: 'text/plain', extensions: ['txt', 'text'], words: 'plain text' },
  docx: {
    mediaType: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
    extensions: ['docx'],
    words: 'Word document',
  },
} as const;
export type AttachmentType = keyof typeof ATTACHMENT_TYPES;
export const ATTACHMENT_TYPE_NAMES = Object.keys(ATTACHMENT_TYPES) as AttachmentType[];

/** The words for an attachment's media type, as people read it ("PDF"); the media type if unknown. */
export function mediaTypeWords(mediaType: string): string {
  const type = ATTACHMENT_TYPE_NAMES.find((name) => ATTACHMENT_TYPES[name].mediaType === mediaType);
  return type === undefined ? mediaType : ATTACHMENT_TYPES[type].words;
}

/** A size as people read it: "812 bytes", "12 KB", "1.4 MB" (1 KB = 1,024 bytes). */
export function sizeWords(bytes: number): string {
  if (bytes < 1024) return `${bytes} ${bytes === 1 ? 'byte' : 'bytes'}`;
  if (bytes < 1024 * 1024) return `${Math.round(bytes / 1024)} KB`;
  return `${(bytes / (1024 * 1024)).toFixed(1)} MB`;
}

/**
 * Where an attachment stands with the scanner: `pending-scan` until a scan answers, then `available`
 * or `rejected`; `not-scanned` where no scanner runs (development, or files scanned before refhub).
 */
export type AttachmentScanState = 'pending-scan' | 'available' | 'rejected' | 'not-scanned';

/** Whether an attachment's content may be read: scanned clean, or kept where nothing scans. */
export function isReadable(state: AttachmentScanState): boolean {
  return state === 'available' || state === 'not-scanned';
}

/** An attachment as the API and the pages show it; its content is read at its own path. */
export interface AttachmentView {
  readonly id: string;
  readonly referralId: string;
  /** The referral's own number for it, 1, 2, … in the order files were added. */
  readonly number: number;
  readonly fileName: string;
  readonly mediaType: string;
  readonly sizeBytes: number;
  /** SHA-256 of the content, lowercase hex. */
  readonly sha256: string;
  readonly scanState: AttachmentScanState;
  /** Whether the content may be read now (`available`, or `not-scanned` where nothing scans). */
  readonly available: boolean;
  /** When the scan answered; absent until then. */
  readonly scannedAt?: string;
  readonly addedBy: 'sender' | 'provider';
  readonly authorInstitution: { readonly idType: string; readonly id: string; readonly name: string };
  readonly createdAt: string;
}

/**
 * The answer to an upload: the file, and the referral's version once it was added. The upload is not
 * guarded by If-Match, so a client that held the version before (one less) knows that nothing else
 * changed the referral in between, and may guard its next change with the new one.
 */
export interface AttachmentAdded extends AttachmentView {
  readonly referralVersion: number;
}

/**
 * How long a forward waits, from the version's change, for files of the referral still waiting for
 * their malware scan, so that they go with the form; past it the form goes with the files that are
 * clean, and a later version carries the rest. A scan takes seconds while the scanner is up.
 */
export const SCAN_WAIT_BEFORE_FORWARD_MS = 10 * 60_000;
/** How soon a forward waiting for a scan looks again. */
export const SCAN_RECHECK_MS = 15_000;

/**
 * A file as a referral's EHR form lists it and the forward sends it: one that may be read (scanned
 * clean, or kept where nothing scans), at the version the form is drawn from.
 */
export interface FormAttachment {
  readonly id: string;
  readonly number: number;
  readonly fileName: string;
  readonly mediaType: string;
  readonly sizeBytes: number;
  /** Hex SHA-256 of the file's bytes. */
  readonly sha256: string;
}
