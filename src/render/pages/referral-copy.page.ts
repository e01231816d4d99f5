// The read-only pages behind the `view` and `print` links (contract §8): exactly the content of the
// EHR form, in the web page's frame, with a print stylesheet that leaves only the document on paper.
// The referral's files are listed after the document (they are not part of it): with a download link
// on the view page, and as a list on paper.
import type { DisplayTime } from '../../domain/display-time.ts';
import type { EhrFormSource } from '../../domain/referral-view.ts';
import { renderEhrFormContent } from '../ehr-form.ts';
import { html } from '../html.ts';
import { fileList, type FileItem } from './file-list.ts';
import { renderPage } from './page-shell.ts';

export interface ReferralCopyModel {
  readonly nonce: string;
  readonly purpose: 'view' | 'print';
  readonly source: EhrFormSource;
  readonly institutionName: string;
  readonly person: string;
  /** Already formatted for display ("20:06 SGT"). */
  readonly sessionEnds: string;
  /** The installation's display zone, so the content is the EHR form's, byte for byte. */
  readonly display: DisplayTime;
  /** The referral's files; on the view page, those that may be opened link to their download. */
  readonly files: readonly FileItem[];
}

export function renderReferralCopyPage(model: ReferralCopyModel): string {
  const { content, formType } = renderEhrFormContent(model.source, model.display);
  const title = model.purpose === 'print' ? 'Print referral' : 'View referral';
  const main = html`<div class="toolbar no-print">
      <h1 class="page-title">${title}</h1>
      <p class="muted">
        ${
          model.purpose === 'print'
            ? html`Use your browser’s Print command (Ctrl+P, or ⌘P on a Mac). Only the referral is printed.`
            : html`Read-only. This is the document forwarded to the national electronic health record.`
        }
      </p>
    </div>
    <article class="document" aria-label="${formType}">${content}</article>
    <section class="card files-card" aria-labelledby="files-title">
      <h2 class="card__title" id="files-title">Files</h2>
      ${fileList(model.files)}
    </section>`;
  return renderPage({
    nonce: model.nonce,
    title: `${title} ${model.source.id}`,
    header: { institution: model.institutionName, person: model.person },
    main,
    footer: html`<p>This page is open to you until ${model.sessionEnds}.</p>`,
  });
}
