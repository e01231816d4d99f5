// A referral's files as the pages show them: each file's name, its type and size in words, when and by
// whom it was added, and where it stands with the malware scan; a download link while it may be
// opened, and a remove button while the person may remove it. Also the form that attaches a file,
// which works without script: one multipart POST, answered with a redirect or with the page again.
import type { AttachmentScanState } from '../../domain/attachments.ts';
import { html, type SafeHtml } from '../html.ts';
import { fieldId } from './form-controls.ts';

export interface FileItem {
  readonly id: string;
  readonly fileName: string;
  /** The type in words: "PDF", "JPEG image". */
  readonly type: string;
  /** The size in words: "47 KB". */
  readonly size: string;
  readonly scanState: AttachmentScanState;
  /** Already formatted for display, like every time on the pages. */
  readonly addedAt: string;
  /** The institution that added it. */
  readonly addedBy: string;
  /** Where the file downloads from, while it may be opened on this page; null otherwise (and on paper). */
  readonly href: string | null;
  /** Where its remove button posts, while the person may remove it; null otherwise. */
  readonly removeAction: string | null;
}

export interface FileUpload {
  /** Where the upload posts: a path with the referral ID, never patient data. */
  readonly action: string;
  /** The input's `accept`: the accepted types' extensions and media types. */
  readonly accept: string;
  /** What may be attached, for the hint: "A PDF, … or Word document, up to 10 MB." */
  readonly rules: string;
  /** Why the last file was refused, for people; never its name or content. */
  readonly error?: string;
}

/** Where a file stands with the malware scan, in words, and the tag's tone. */
export const SCAN_STATE_TEXT: Readonly<
  Record<AttachmentScanState, { readonly label: string; readonly tone: string }>
> = {
  'pending-scan': { label: 'Waiting for the malware scan', tone: 'pending' },
  available: { label: 'Available', tone: 'confirmed' },
  'not-scanned': { label: 'Available (not scanned)', tone: 'neutral' },
  rejected: { label: 'Rejected by the malware scan', tone: 'stopped' },
};

/** The ID of the file input, which the error summary links to. */
const FILE_INPUT_ID = fieldId('file');

function removeForm(item: FileItem, csrfToken: string | undefined): SafeHtml | null {
  if (item.removeAction === null || csrfToken === undefined) return null;
  return html`<form class="file__remove" method="post" action="${item.removeAction}">
    <input type="hidden" name="_csrf" value="${csrfToken}" />
    <button class="button button--secondary button--small" type="submit">
      Remove<span class="visually-hidden"> ${item.fileName}</span>
    </button>
  </form>`;
}

function fileEntry(item: FileItem, csrfToken: string | undefined): SafeHtml {
  const state = SCAN_STATE_TEXT[item.scanState];
  return html`<li class="file" data-file="${item.id}">
    <div class="file__main">
      <span class="file__name"
        >${item.href === null ? item.fileName : html`<a href="${item.href}">${item.fileName}</a>`}</span
      >
      <span class="file__meta">${item.type}, ${item.size}. Added ${item.addedAt} by ${item.addedBy}.</span>
    </div>
    <strong class="${`tag tag--${state.tone} file__state`}">${state.label}</strong>
    ${removeForm(item, csrfToken)}
  </li>`;
}

/** The files, or a sentence saying there are none. `csrfToken` is needed for the remove buttons. */
export function fileList(items: readonly FileItem[], csrfToken?: string): SafeHtml {
  if (items.length === 0) return html`<p class="files__none">No files are attached.</p>`;
  return html`<ul class="files">
    ${items.map((item) => fileEntry(item, csrfToken))}
  </ul>`;
}

/** The form that attaches one file: a multipart POST carrying the session's token before the file. */
export function uploadForm(upload: FileUpload, csrfToken: string): SafeHtml {
  const hintId = `${FILE_INPUT_ID}-hint`;
  const errorId = `${FILE_INPUT_ID}-error`;
  const describedBy = upload.error === undefined ? hintId : `${hintId} ${errorId}`;
  return html`<form class="upload" method="post" action="${upload.action}" enctype="multipart/form-data">
    <input type="hidden" name="_csrf" value="${csrfToken}" />
    <div class="${upload.error === undefined ? 'field' : 'field field--error'}">
      <label class="label" for="${FILE_INPUT_ID}">Attach a file</label>
      <span class="hint" id="${hintId}">${upload.rules}</span>
      ${
        upload.error === undefined
          ? null
          : html`<span class="error-message" id="${errorId}"
              ><span class="visually-hidden">Error: </span>${upload.error}</span
            >`
      }
      <input
        class="file-input"
        id="${FILE_INPUT_ID}"
        name="file"
        type="file"
        accept="${upload.accept}"
        aria-describedby="${describedBy}"
        ${upload.error === undefined ? null : html`aria-invalid="true"`}
      />
    </div>
    <button class="button button--secondary" type="submit">Attach file</button>
  </form>`;
}
