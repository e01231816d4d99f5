// The page after "Submit": what happened to the referral, in the status it now has.
import type { Status } from '../../domain/statuses.ts';
import { html, type SafeHtml } from '../html.ts';
import { statusTag } from './form-controls.ts';
import { renderPage } from './page-shell.ts';
import { STATUS_TEXT } from './referral-form-fields.ts';

export interface SubmittedModel {
  readonly nonce: string;
  readonly referralId: string;
  readonly status: Status;
  readonly senderName: string;
  readonly person: string;
  readonly patientName: string;
  readonly serviceName: string;
  readonly providerName: string;
  readonly urgent: boolean;
  /** The priority's words, when the referral has one. */
  readonly priority: string | null;
  /** Already formatted for display. */
  readonly submittedAt: string;
  readonly sessionEnds: string;
}

function summaryRow(label: string, value: SafeHtml | string): SafeHtml {
  return html`<dt>${label}</dt>
    <dd>${value}</dd>`;
}

export function renderSubmittedPage(model: SubmittedModel): string {
  const awaiting = model.status === 'pending-acceptance';
  const title = awaiting ? 'Referral submitted' : `Referral: ${STATUS_TEXT[model.status].label}`;
  const main = html`<div class="${awaiting ? 'panel' : 'panel panel--neutral'}" role="status">
      <h1 class="panel__title">${title}</h1>
      <p class="panel__body">
        ${
          awaiting
            ? html`${model.providerName} has received the referral and will review it.`
            : html`The referral is now: ${STATUS_TEXT[model.status].label}.`
        }
      </p>
    </div>
    <section class="card" aria-labelledby="summary-title">
      <h2 class="card__title" id="summary-title">Summary</h2>
      <dl class="summary">
        ${summaryRow('Status', statusTag(model.status))}
        ${summaryRow('Reference', html`<span class="mono">${model.referralId}</span>`)}
        ${summaryRow('Patient', model.patientName)} ${summaryRow('Service', model.serviceName)}
        ${summaryRow('Provider', model.providerName)}
        ${summaryRow('Urgency', model.urgent ? 'Urgent' : 'Routine')}
        ${model.priority === null ? null : summaryRow('Priority', model.priority)}
        ${summaryRow('Submitted', model.submittedAt)}
      </dl>
    </section>
    <h2>What happens next</h2>
    <p>
      The provider’s answers, appointments and notes appear in your clinic system. A copy of the referral is
      forwarded to the national electronic health record.
    </p>
    <p>You can close this tab.</p>`;
  return renderPage({
    nonce: model.nonce,
    title,
    header: { institution: model.senderName, person: model.person },
    main,
    footer: html`<p>This page is open to you until ${model.sessionEnds}.</p>`,
  });
}
