// The read-only pages behind the `view` and `print` links (contract §8): exactly the content of the
// EHR form, in the web page's frame, with a print stylesheet that leaves only the document on paper.
// The referral's files are listed after the document (they are not part of it): with a download link
// on the view page, and as a list on paper.
//
// Once the provider has completed the referral, an Outcome card comes before the document: what the
// reader came for. It shows the outcome's words, the consult summary as written, who completed the
// referral and when, the outcome's documents, and who acknowledged it and when. On the view page, the
// sender who has yet to acknowledge it finds the one button of these pages there: a plain form post.
import type { DisplayTime } from '../../domain/display-time.ts';
import type { EhrFormSource } from '../../domain/referral-view.ts';
import { renderEhrFormContent } from '../ehr-form.ts';
import { html, type SafeHtml } from '../html.ts';
import { fileList, type FileItem } from './attachments-list.ts';
import { noticeBanner, type Notice } from './form-controls.ts';
import { renderPage } from './page-shell.ts';

/** The provider's outcome as the card shows it; every time already formatted for display. */
export interface OutcomeCard {
  /** The outcome's words ("Seen and discharged to the referring clinic"). */
  readonly display: string;
  /** The consult summary, plain text with its line breaks; null when none was written. */
  readonly summary: string | null;
  /** "Dr Wong (Central General Hospital)", or the provider alone when no name was given. */
  readonly completedBy: string;
  readonly completedAt: string;
  /** The files that are part of the outcome, in the provider's order. */
  readonly documents: readonly FileItem[];
  /** Null until the sender acknowledged the outcome. */
  readonly acknowledged: { readonly by: string; readonly at: string } | null;
  /** Where the acknowledge button posts, and its token, while this reader may acknowledge; else null. */
  readonly acknowledge: { readonly action: string; readonly csrfToken: string } | null;
}

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
  /** The provider's outcome, once it completed the referral. */
  readonly outcome?: OutcomeCard;
  /** What the last action did ("Outcome acknowledged"). */
  readonly notice?: Notice;
}

function row(label: string, value: SafeHtml | string): SafeHtml {
  return html`<dt>${label}</dt>
    <dd>${value}</dd>`;
}

function acknowledgeForm(acknowledge: NonNullable<OutcomeCard['acknowledge']>): SafeHtml {
  return html`<div class="acknowledge no-print">
    <h3 class="card__subtitle" id="acknowledge-title">Acknowledge the outcome</h3>
    <p id="acknowledge-hint">
      Once you have read the outcome and its documents, acknowledge it. The provider and your clinic system
      see that the referring clinic has it, and the referral no longer waits for you.
    </p>
    <form
      class="outcome__acknowledge"
      method="post"
      action="${acknowledge.action}"
      aria-labelledby="acknowledge-title"
      aria-describedby="acknowledge-hint"
    >
      <input type="hidden" name="_csrf" value="${acknowledge.csrfToken}" />
      <button class="button button--primary" type="submit">Acknowledge outcome</button>
    </form>
  </div>`;
}

export function outcomeCard(outcome: OutcomeCard): SafeHtml {
  const { acknowledged } = outcome;
  return html`<section class="card outcome-card" aria-labelledby="outcome-title">
    <h2 class="card__title" id="outcome-title">Outcome</h2>
    <p class="card__intro">The provider completed the referral and reported this outcome.</p>
    <dl class="summary">
      ${row('Outcome', html`<strong>${outcome.display}</strong>`)}
      ${row(
        'Consult summary',
        outcome.summary === null
          ? html`<span class="muted">No summary was written.</span>`
          : html`<div class="outcome__summary">${outcome.summary}</div>`,
      )}
      ${row('Completed by', outcome.completedBy)} ${row('Completed', outcome.completedAt)}
      ${
        acknowledged === null
          ? row('Acknowledged', 'Not yet')
          : html`${row('Acknowledged by', acknowledged.by)} ${row('Acknowledged', acknowledged.at)}`
      }
    </dl>
    <h3 class="card__subtitle">Documents</h3>
    ${
      outcome.documents.length === 0
        ? html`<p class="files__none">No documents are part of the outcome.</p>`
        : fileList(outcome.documents)
    }
    ${outcome.acknowledge === null ? null : acknowledgeForm(outcome.acknowledge)}
  </section>`;
}

export function renderReferralCopyPage(model: ReferralCopyModel): string {
  const { content, formType } = renderEhrFormContent(model.source, model.display);
  const title = model.purpose === 'print' ? 'Print referral' : 'View referral';
  // The one thing these pages let a person do is acknowledge an outcome.
  const readOnly = (model.outcome?.acknowledge ?? null) === null;
  const main = html`<div class="toolbar no-print">
      <h1 class="page-title">${title}</h1>
      <p class="muted">
        ${
          model.purpose === 'print'
            ? html`Use your browser’s Print command (Ctrl+P, or ⌘P on a Mac). Only the referral is printed.`
            : readOnly
              ? html`Read-only. This is the document forwarded to the national electronic health record.`
              : html`This is the document forwarded to the national electronic health record.`
        }
      </p>
    </div>
    ${noticeBanner(model.notice)} ${model.outcome === undefined ? null : outcomeCard(model.outcome)}
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
