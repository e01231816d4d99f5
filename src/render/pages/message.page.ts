// A page that only tells the person something: a link that no longer works, a session that ended,
// a referral that can no longer change here, or an error. Each says what to do next, and carries the
// request ID for support, never a stack trace or patient data.
import { html, type SafeHtml } from '../html.ts';
import { renderPage, type PageHeader } from './page-shell.ts';

export interface MessageModel {
  readonly nonce: string;
  readonly title: string;
  readonly paragraphs: readonly string[];
  readonly requestId: string;
  readonly header?: PageHeader;
  readonly extra?: SafeHtml;
}

export function renderMessagePage(model: MessageModel): string {
  const main = html`<div class="message">
    <h1 class="page-title">${model.title}</h1>
    ${model.paragraphs.map((p) => html`<p>${p}</p>`)} ${model.extra}
    <p class="muted">If you contact support, quote reference <span class="mono">${model.requestId}</span>.</p>
  </div>`;
  return renderPage({
    nonce: model.nonce,
    title: model.title,
    ...(model.header ? { header: model.header } : {}),
    main,
  });
}
