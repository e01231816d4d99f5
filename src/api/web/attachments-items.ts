// The referral's files as the pages list them (type and size in words, the time in the display zone,
// where each downloads from and how it is removed), and what the form says about attaching one.
import {
  ATTACHMENT_TYPE_NAMES,
  ATTACHMENT_TYPES,
  mediaTypeWords,
  sizeWords,
  type AttachmentType,
  type AttachmentView,
  type FormAttachment,
} from '../../domain/attachments.ts';
import type { DisplayTime } from '../../domain/display-time.ts';
import type { FileItem, FileUpload } from '../../render/pages/attachments-list.ts';

/** The pages whose session may download a file: the form and the view page (paper has no links). */
export type DownloadScope = 'form' | 'view';

/** Where a file downloads from on a page of `scope`: a path with IDs only. */
export function downloadPath(scope: DownloadScope, referralId: string, attachmentId: string): string {
  return `/${scope}/${referralId}/attachments/${attachmentId}`;
}

/** Where the form's upload posts. */
export function uploadPath(referralId: string): string {
  return `/form/${referralId}/attachments`;
}

/** Where a file's remove button posts. */
export function removePath(referralId: string, attachmentId: string): string {
  return `/form/${referralId}/attachments/${attachmentId}/remove`;
}

export interface FileLinks {
  /** The page whose session downloads a file that may be opened; none on paper. */
  readonly download?: DownloadScope;
  /** Whether each file has a remove button. */
  readonly removable?: boolean;
}

export function fileItems(
  files: readonly AttachmentView[],
  display: DisplayTime,
  links: FileLinks = {},
): FileItem[] {
  return files.map((file) => ({
    id: file.id,
    fileName: file.fileName,
    type: mediaTypeWords(file.mediaType),
    size: sizeWords(file.sizeBytes),
    scanState: file.scanState,
    addedAt: display.dateTime(file.createdAt),
    addedBy: file.authorInstitution.name,
    href:
      links.download !== undefined && file.available
        ? downloadPath(links.download, file.referralId, file.id)
        : null,
    removeAction: links.removable === true ? removePath(file.referralId, file.id) : null,
  }));
}

/**
 * The files the EHR form lists, as the forward sends them: those that may be read, by number. The view
 * and print pages render the form with them, so their document is the one the record receives.
 */
export function formAttachments(files: readonly AttachmentView[]): FormAttachment[] {
  return files
    .filter((file) => file.available)
    .sort((a, b) => a.number - b.number)
    .map(({ id, number, fileName, mediaType, sizeBytes, sha256 }) => ({
      id,
      number,
      fileName,
      mediaType,
      sizeBytes,
      sha256,
    }));
}

/** What this installation accepts: the types, the size of a file and the files of a referral. */
export interface FileRules {
  readonly types: ReadonlySet<AttachmentType>;
  readonly maxBytes: number;
  readonly perReferral: number;
}

const MIB = 1024 * 1024;

/** The size limit as people read it: "10 MB" (the limit is set in whole mebibytes). */
export function limitWords(bytes: number): string {
  return bytes % MIB === 0 ? `${bytes / MIB} MB` : sizeWords(bytes);
}

/** The accepted types in words, in the order the settings list them: "PDF, JPEG image, …, Word document". */
export function acceptedTypesWords(types: ReadonlySet<AttachmentType>): string {
  return ATTACHMENT_TYPE_NAMES.filter((type) => types.has(type))
    .map((type) => ATTACHMENT_TYPES[type].words)
    .join(', ');
}

/** The file input's `accept`: each accepted type's extensions and media type, so pickers offer them. */
function acceptAttribute(types: ReadonlySet<AttachmentType>): string {
  return ATTACHMENT_TYPE_NAMES.filter((type) => types.has(type))
    .flatMap((type) => [
      ...ATTACHMENT_TYPES[type].extensions.map((extension) => `.${extension}`),
      ATTACHMENT_TYPES[type].mediaType,
    ])
    .join(',');
}

/** The upload form for a referral, with the rules in its hint and the last refusal, if any. */
export function fileUpload(referralId: string, rules: FileRules, error?: string): FileUpload {
  return {
    action: uploadPath(referralId),
    accept: acceptAttribute(rules.types),
    rules:
      `${acceptedTypesWords(rules.types)}; up to ${limitWords(rules.maxBytes)} each, and ` +
      `${rules.perReferral} files in all. Save draft first if you changed anything above: attaching or ` +
      'removing a file shows this page again as last saved.',
    ...(error === undefined ? {} : { error }),
  };
}
