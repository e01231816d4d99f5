// Accessible form controls. Each control has a visible <label>, its hint and error message linked
// with `aria-describedby`, and `aria-invalid` when it has an error; the error message sits between
// the label and the control (where a screen reader meets it first), and the error summary at the
// top links to each control by its ID.
import type { Status } from '../../domain/statuses.ts';
import { html, trustedHtml, type SafeHtml } from '../html.ts';
import { STATUS_TEXT, type Choice, type FormField } from './referral-form-fields.ts';

/** What an error can belong to: a field of the referral's form, or the file input beside it. */
export type ErrorTarget = FormField | 'file';

export const fieldId = (name: ErrorTarget): string => `field-${name}`;
const hintId = (name: FormField) => `field-${name}-hint`;
const errorId = (name: FormField) => `field-${name}-error`;

const CHECKED = trustedHtml('checked');
const SELECTED = trustedHtml('selected');
const INVALID = trustedHtml('aria-invalid="true"');

export interface ControlProps {
  readonly name: FormField;
  readonly label: string;
  readonly value: string;
  readonly hint?: string;
  readonly error?: string;
}

function describedBy(props: ControlProps): SafeHtml | null {
  const ids = [
    props.hint === undefined ? null : hintId(props.name),
    props.error === undefined ? null : errorId(props.name),
  ]
    .filter((id): id is string => id !== null)
    .join(' ');
  return ids === '' ? null : html`aria-describedby="${ids}"`;
}

function hintAndError(props: ControlProps): SafeHtml {
  return html`${props.hint === undefined ? null : html`<span class="hint" id="${hintId(props.name)}">${props.hint}</span>`}
  ${
    props.error === undefined
      ? null
      : html`<span class="error-message" id="${errorId(props.name)}"
          ><span class="visually-hidden">Error: </span>${props.error}</span
        >`
  }`;
}

function fieldClass(props: ControlProps): string {
  return props.error === undefined ? 'field' : 'field field--error';
}

export interface TextInputProps extends ControlProps {
  readonly type?: 'text' | 'email' | 'tel' | 'date';
  readonly size?: 'narrow' | 'date' | 'full';
  readonly autocomplete?: string;
  readonly maxLength?: number;
  readonly inputMode?: 'numeric' | 'email' | 'text';
  readonly spellcheck?: boolean;
}

export function textInput(props: TextInputProps): SafeHtml {
  const size =
    props.size === 'narrow' ? 'input input--narrow' : props.size === 'date' ? 'input input--date' : 'input';
  return html`<div class="${fieldClass(props)}">
    <label class="label" for="${fieldId(props.name)}">${props.label}</label>
    ${hintAndError(props)}
    <input
      class="${size}"
      id="${fieldId(props.name)}"
      name="${props.name}"
      type="${props.type ?? 'text'}"
      value="${props.value}"
      autocomplete="${props.autocomplete ?? 'off'}"
      spellcheck="${props.spellcheck === true ? 'true' : 'false'}"
      ${props.maxLength === undefined ? null : html`maxlength="${props.maxLength}"`}
      ${props.inputMode === undefined ? null : html`inputmode="${props.inputMode}"`}
      ${describedBy(props)}
      ${props.error === undefined ? null : INVALID}
    />
  </div>`;
}

export interface SelectProps extends ControlProps {
  readonly choices: readonly Choice[];
  /** The first option, which leaves the field empty. */
  readonly emptyLabel: string;
  readonly autocomplete?: string;
}

export function select(props: SelectProps): SafeHtml {
  const known = props.value === '' || props.choices.some((c) => c.value === props.value);
  return html`<div class="${fieldClass(props)}">
    <label class="label" for="${fieldId(props.name)}">${props.label}</label>
    ${hintAndError(props)}
    <select
      class="select"
      id="${fieldId(props.name)}"
      name="${props.name}"
      autocomplete="${props.autocomplete ?? 'off'}"
      ${describedBy(props)}
      ${props.error === undefined ? null : INVALID}
    >
      <option value="" ${props.value === '' ? SELECTED : null}>${props.emptyLabel}</option>
      ${
        // A value that is not a choice (sent by hand) is kept, so the person sees what was posted.
        known ? null : html`<option value="${props.value}" ${SELECTED}>${props.value}</option>`
      }
      ${props.choices.map(
        (c) =>
          html`<option value="${c.value}" ${c.value === props.value ? SELECTED : null}>${c.label}</option>`,
      )}
    </select>
  </div>`;
}

export interface TextareaProps extends ControlProps {
  readonly rows: number;
  readonly maxLength: number;
}

export function textarea(props: TextareaProps): SafeHtml {
  // The parser drops one newline right after <textarea>, so one is written first: a value that starts
  // with a newline keeps it.
  return html`<div class="${fieldClass(props)}">
    <label class="label" for="${fieldId(props.name)}">${props.label}</label>
    ${hintAndError(props)}
    <textarea
      class="textarea"
      id="${fieldId(props.name)}"
      name="${props.name}"
      rows="${props.rows}"
      maxlength="${props.maxLength}"
      spellcheck="true"
      ${describedBy(props)}
      ${props.error === undefined ? null : INVALID}
    >
${props.value}</textarea>
  </div>`;
}

export interface RadiosProps extends ControlProps {
  readonly choices: readonly Choice[];
}

/** A row of radios in a fieldset whose legend is the label. The first radio carries the field's ID. */
export function radios(props: RadiosProps): SafeHtml {
  return html`<div class="${fieldClass(props)}">
    <fieldset ${describedBy(props)}>
      <legend class="label">${props.label}</legend>
      ${hintAndError(props)}
      <div class="radios">
        ${props.choices.map((c, i) => {
          const id = i === 0 ? fieldId(props.name) : `${fieldId(props.name)}-${i}`;
          return html`<div class="radio">
            <input
              type="radio"
              id="${id}"
              name="${props.name}"
              value="${c.value}"
              ${c.value === props.value ? CHECKED : null}
              ${props.error === undefined ? null : INVALID}
            />
            <label for="${id}">${c.label}</label>
          </div>`;
        })}
      </div>
    </fieldset>
  </div>`;
}

export interface SummaryError {
  /** The field the error belongs to, or null for an error about the whole form. */
  readonly field: ErrorTarget | null;
  readonly message: string;
}

/**
 * The error summary at the top of the page. It takes focus when the page loads (`autofocus`, so no
 * script is needed), and each entry links to its field.
 */
export function errorSummary(errors: readonly SummaryError[]): SafeHtml | null {
  if (errors.length === 0) return null;
  return html`<div
    class="error-summary"
    role="alert"
    aria-labelledby="error-summary-title"
    tabindex="-1"
    autofocus
  >
    <h2 class="error-summary__title" id="error-summary-title">There is a problem</h2>
    <ul>
      ${errors.map((e) =>
        e.field === null
          ? html`<li>${e.message}</li>`
          : html`<li><a href="${`#${fieldId(e.field)}`}">${e.message}</a></li>`,
      )}
    </ul>
  </div>`;
}

/** A message at the top of a page, after something the person did ("Draft saved"). */
export interface Notice {
  readonly tone: 'success' | 'info' | 'warn';
  readonly title: string;
  readonly text?: string;
}

export function noticeBanner(n: Notice | undefined): SafeHtml | null {
  if (n === undefined) return null;
  const tone = n.tone === 'success' ? 'banner' : `banner banner--${n.tone}`;
  return html`<div class="${tone}" role="status">
    <span class="banner__title">${n.title}</span>${n.text === undefined ? null : html`<span>${n.text}</span>`}
  </div>`;
}

export function statusTag(status: Status): SafeHtml {
  const { label, tone } = STATUS_TEXT[status];
  return html`<strong class="${`tag tag--${tone}`}">${label}</strong>`;
}

export { CHECKED };
