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

/** The types an attachment may have, by the name settings and the API use, with their media type. */
export const ATTACHMENT_TYPES = {
  pdf: { mediaType: 'application/pdf', extensions: ['pdf'] },
  jpeg: { mediaType: 'image/jpeg', extensions: ['jpg', 'jpeg'] },
  png: { mediaType: 'image/png', extensions: ['png'] },
  tiff: { mediaType: 'image/tiff', extensions: ['tif', 'tiff'] },
  text: { mediaType: 'text/plain', extensions: ['txt', 'text'] },
  docx: {
    mediaType: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
    extensions: ['docx'],
  },
} as const;
export type AttachmentType = keyof typeof ATTACHMENT_TYPES;
export const ATTACHMENT_TYPE_NAMES = Object.keys(ATTACHMENT_TYPES) as AttachmentType[];
