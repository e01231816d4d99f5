// The service the patient is referred to: a choice of radios grouped by category, each with its
// provider and description (web addresses as links), or the fixed service when it cannot change.
import type { OfferingCategory } from '../../domain/statuses.ts';
import { html, type SafeHtml } from '../html.ts';
import { CHECKED, fieldId } from './form-controls.ts';
import { linkify } from './linkify.ts';
import { CATEGORY_LABELS, FIELD_LABELS } from './referral-form-fields.ts';

export interface OfferingChoice {
  readonly id: string;
  readonly name: string;
  readonly category: OfferingCategory;
  readonly description: string;
  readonly specialty: string;
  readonly providerName: string;
  /** Deactivated in the catalog; shown only while the referral still names it. */
  readonly inactive: boolean;
  /**
   * How soon the service usually accepts a referral ("Usually accepted within 3 days": its wait
   * times' p90, domain/wait-times.ts); absent without enough data.
   */
  readonly waitHint?: string;
}

function offeringDetails(offering: OfferingChoice, id: string): SafeHtml {
  return html`<span class="option__provider">${offering.providerName} · ${offering.specialty}</span>
    <span class="option__description" id="${id}"
      >${linkify(offering.description)}${
        offering.waitHint === undefined ? null : html`<span class="option__wait">${offering.waitHint}.</span>`
      }</span
    >`;
}

function offeringOption(
  offering: OfferingChoice,
  index: number,
  chosen: string,
  error: string | undefined,
): SafeHtml {
  const id = index === 0 ? fieldId('offeringId') : `${fieldId('offeringId')}-${index}`;
  const details = `offering-${index}-details`;
  return html`<div class="option">
    <input
      type="radio"
      id="${id}"
      name="offeringId"
      value="${offering.id}"
      aria-describedby="${error === undefined ? details : `${details} field-offeringId-error`}"
      ${chosen === offering.id ? CHECKED : null}
    />
    <div>
      <label for="${id}"
        ><span class="option__name"
          >${offering.name}${
            offering.inactive ? html`<span class="option__inactive">No longer offered</span>` : null
          }</span
        ></label
      >
      ${offeringDetails(offering, details)}
    </div>
  </div>`;
}

/** The services to choose from, grouped by category; the first radio carries the field's ID. */
export function offeringChoices(
  offerings: readonly OfferingChoice[],
  chosen: string,
  error: string | undefined,
): SafeHtml {
  const categories = (Object.keys(CATEGORY_LABELS) as OfferingCategory[]).filter((c) =>
    offerings.some((o) => o.category === c),
  );
  let index = 0;
  return html`<div class="${error === undefined ? 'field' : 'field field--error'}">
    <fieldset>
      <legend class="card__title">${FIELD_LABELS.offeringId}</legend>
      <p class="card__intro">
        Choose the service the patient is referred to (needed to submit). It decides who receives the
        referral.
      </p>
      ${
        error === undefined
          ? null
          : html`<span class="error-message" id="field-offeringId-error"
              ><span class="visually-hidden">Error: </span>${error}</span
            >`
      }
      ${
        offerings.length === 0
          ? html`<p>No services are available to refer to. Ask your administrator to load the catalog.</p>`
          : categories.map(
              (category) =>
                html`<div class="category" role="group" aria-labelledby="${`category-${category}`}">
                  <span class="category__name" id="${`category-${category}`}"
                    >${CATEGORY_LABELS[category]}</span
                  >
                  ${offerings
                    .filter((o) => o.category === category)
                    .map((o) => offeringOption(o, index++, chosen, error))}
                </div>`,
            )
      }
    </fieldset>
  </div>`;
}

/** The service when it cannot change, while the provider waits for the sender's response. */
export function fixedOffering(offering: OfferingChoice | null): SafeHtml {
  return html`<h2 class="card__title">${FIELD_LABELS.offeringId}</h2>
    <p class="card__intro">The service cannot change while the provider waits for your response.</p>
    ${
      offering === null
        ? html`<p class="fixed-offering">No service was chosen.</p>`
        : html`<div class="fixed-offering">
            <span class="option__name">${offering.name}</span>${offeringDetails(offering, 'offering-details')}
          </div>`
    }`;
}
