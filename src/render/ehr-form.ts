// Renders a referral as the self-contained HTML document forwarded to the national EHR (contract §7).
//
// The output is a pure function of the stored referral and the display zone: no clock, no
// randomness, no locale. The forwarder hashes the exact bytes, so one referral version must always
// give one document. Values that change without the referral's content changing (its version, its
// last update, refhub's bookkeeping on the timeline) are left out, so recording a delivery or a
// reminder cannot change the form.
//
// The document reads top to bottom as a clinician needs it: the letter's masthead (what it is, for
// whom, how urgent), the patient, the letter, the referral's record, and a cancellation notice last.
import { DEFAULT_DISPLAY_TIME_ZONE, displayTimeIn, type DisplayTime } from '../domain/display-time.ts';
import type { OfferingCategory } from '../domain/statuses.ts';
import type { EhrFormSource } from '../domain/referral-view.ts';
import { html, type SafeHtml } from './html.ts';
import { EHR_FORM_CSP } from './document-policy.ts';
import { STYLE, type EhrTemplate } from './templates/ehr-parts.ts';
import { cancellationNotice } from './templates/cancellation-notice.template.ts';
import { patientSummary } from './templates/patient-summary.template.ts';
import {
  aeLetter,
  gpFirstLetter,
  specialistReferral,
  type LetterTemplate,
} from './templates/referral-letter.template.ts';

/**
 * The default display zone (DISPLAY_TIME_ZONE's default). Callers pass the configured one; every
 * process of an installation must render with the same zone, or the same version would hash
 * differently.
 */
const DEFAULT_DISPLAY: DisplayTime = displayTimeIn(DEFAULT_DISPLAY_TIME_ZONE);

export interface RenderedEhrForm {
  readonly html: string;
  /** The names of the templates used, joined with `|` (the EHR's `ehrFormType`). */
  readonly formType: string;
}

/** The letter template for each offering category; `none` is a draft with no offering chosen yet. */
const LETTER_BY_CATEGORY: Readonly<Record<OfferingCategory | 'none', LetterTemplate>> = {
  gpfirst: gpFirstLetter,
  ae: aeLetter,
  soc: specialistReferral,
  polyclinic: specialistReferral,
  community: specialistReferral,
  none: specialistReferral,
};

function letterFor(source: EhrFormSource): LetterTemplate {
  return LETTER_BY_CATEGORY[source.offering?.category ?? 'none'];
}

/** The templates in the order `ehrFormType` names them: the letter first, as the form's kind. */
function templatesFor(source: EhrFormSource): EhrTemplate[] {
  const letter = letterFor(source);
  return source.status === 'cancelled'
    ? [letter, patientSummary, cancellationNotice]
    : [letter, patientSummary];
}

/** What the EHR form shows, without its document shell: the print and view pages show exactly this. */
export interface EhrFormContent {
  readonly content: SafeHtml;
  /** The names of the templates used, joined with `|` (the EHR's `ehrFormType`). */
  readonly formType: string;
  /** The letter's name, which titles the document. */
  readonly title: string;
}

export function renderEhrFormContent(
  source: EhrFormSource,
  display: DisplayTime = DEFAULT_DISPLAY,
): EhrFormContent {
  const letter = letterFor(source);
  const templates = templatesFor(source);
  // The patient comes before the letter on the page, though `ehrFormType` names the letter first.
  const shown = [patientSummary, ...templates.filter((t) => t !== patientSummary)];
  const cancelledBanner =
    source.status === 'cancelled'
      ? html`<p style="${STYLE.cancelled}"><strong>Cancelled.</strong> See the Cancellation Notice below.</p>`
      : null;
  // The indentation inside this template is part of the forwarded bytes: keep it as it is.
  const content = html`${cancelledBanner}
    <header style="${STYLE.masthead}">${letter.masthead(source)}</header>
    ${shown.map(
      (t) =>
        html`<section data-template="${t.name}" style="${STYLE.template}">
          ${t.render(source, display)}
        </section>`,
    )}`;
  return { content, formType: templates.map((t) => t.name).join('|'), title: letter.name };
}

export function renderEhrForm(
  source: EhrFormSource,
  display: DisplayTime = DEFAULT_DISPLAY,
): RenderedEhrForm {
  const { content, formType, title } = renderEhrFormContent(source, display);
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
