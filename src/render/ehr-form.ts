// Renders a referral as the self-contained HTML document forwarded to the national EHR (contract §7).
//
// The output is a pure function of the stored referral: no clock, no randomness, no locale. The
// forwarder hashes the exact bytes, so one referral version must always give one document.
import type { OfferingCategory } from '../domain/statuses.ts';
import type { EhrFormSource } from '../domain/referral-view.ts';
import { html, type SafeHtml } from './html.ts';
import { EHR_FORM_CSP } from './document-policy.ts';
import { STYLE, type EhrTemplate } from './templates/ehr-parts.ts';
import { cancellationNotice } from './templates/cancellation-notice.template.ts';
import { patientSummary } from './templates/patient-summary.template.ts';
import { aeLetter, gpFirstLetter, specialistReferral } from './templates/referral-letter.template.ts';

export interface RenderedEhrForm {
  readonly html: string;
  /** The names of the templates used, joined with `|` (the EHR's `ehrFormType`). */
  readonly formType: string;
}

/** The letter template for each offering category; `none` is a draft with no offering chosen yet. */
const LETTER_BY_CATEGORY: Readonly<Record<OfferingCategory | 'none', EhrTemplate>> = {
  gpfirst: gpFirstLetter,
  ae: aeLetter,
  soc: specialistReferral,
  polyclinic: specialistReferral,
  community: specialistReferral,
  none: specialistReferral,
};

function templatesFor(source: EhrFormSource): EhrTemplate[] {
  const letter = LETTER_BY_CATEGORY[source.offering?.category ?? 'none'];
  return source.status === 'cancelled'
    ? [letter, patientSummary, cancellationNotice]
    : [letter, patientSummary];
}

/** What the EHR form shows, without its document shell: the print and view pages show exactly this. */
export interface EhrFormContent {
  readonly content: SafeHtml;
  /** The names of the templates used, joined with `|` (the EHR's `ehrFormType`). */
  readonly formType: string;
  /** The first template's name, which titles the document. */
  readonly title: string;
}

export function renderEhrFormContent(source: EhrFormSource): EhrFormContent {
  const templates = templatesFor(source);
  const cancelledBanner =
    source.status === 'cancelled'
      ? html`<p style="${STYLE.cancelled}"><strong>Cancelled.</strong> See the Cancellation Notice below.</p>`
      : null;
  // The indentation inside this template is part of the forwarded bytes: keep it as it is.
  const content = html`${cancelledBanner}
  ${templates.map(
    (t) => html`<section data-template="${t.name}" style="${STYLE.template}">${t.render(source)}</section>`,
  )}`;
  return { content, formType: templates.map((t) => t.name).join('|'), title: templates[0]?.name ?? '' };
}

export function renderEhrForm(source: EhrFormSource): RenderedEhrForm {
  const { content, formType, title } = renderEhrFormContent(source);
  const document = html`<!doctype html>
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta http-equiv="Content-Security-Policy" content="${EHR_FORM_CSP}" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <title>${title} – Referral ${source.id}</title>
      </head>
      <body style="${STYLE.body}">
        <main style="${STYLE.page}">${content}</main>
      </body>
    </html> `;
  return { html: document.toString(), formType };
}
