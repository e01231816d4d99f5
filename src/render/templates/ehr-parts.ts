// The building blocks every EHR form template shares: the inline styles (the form may carry no
// stylesheet), the value elements with their `data-field` names, and timestamp formatting.
//
// Every value goes in its own element with a stable `data-field`, so a reader (or a test) can find
// it without knowing the layout. Values keep their whitespace verbatim and are shown with
// `white-space: pre-wrap`, so what the EHR displays is exactly what was stored.
import type { EhrFormSource } from '../../domain/referral-view.ts';
import { html, type HtmlValue, type SafeHtml } from '../html.ts';

export interface EhrTemplate {
  /** The name that goes into `ehrFormType`. */
  readonly name: string;
  render(source: EhrFormSource): SafeHtml;
}

const FONT = 'system-ui, -apple-system, Segoe UI, Roboto, Helvetica Neue, Arial, sans-serif';

export const STYLE = {
  body: `margin: 0; padding: 24px; background: #ffffff; color: #1b1f24; font-family: ${FONT}; font-size: 14px; line-height: 1.45;`,
  page: 'max-width: 800px; margin: 0 auto;',
  template: 'margin: 0 0 32px;',
  title: 'margin: 0 0 4px; font-size: 22px; font-weight: 700; letter-spacing: 0.01em;',
  subtitle: 'margin: 0 0 16px; color: #57606a; font-size: 13px;',
  heading:
    'margin: 20px 0 8px; padding-bottom: 4px; border-bottom: 1px solid #d0d7de; font-size: 15px; font-weight: 700; text-transform: uppercase; letter-spacing: 0.04em; color: #24292f;',
  table: 'width: 100%; border-collapse: collapse; margin: 0 0 8px;',
  label:
    'width: 32%; padding: 4px 12px 4px 0; text-align: left; vertical-align: top; font-weight: 600; color: #57606a;',
  cell: 'padding: 4px 12px 4px 0; text-align: left; vertical-align: top;',
  columnHead:
    'padding: 4px 12px 4px 0; text-align: left; vertical-align: bottom; font-weight: 600; color: #57606a; border-bottom: 1px solid #d0d7de;',
  value: 'white-space: pre-wrap; overflow-wrap: anywhere;',
  missing: 'color: #8c959f; font-style: italic;',
  block: 'margin: 0 0 8px; padding: 8px 12px; border-left: 3px solid #d0d7de; background: #f6f8fa;',
  paragraph: 'margin: 0 0 12px;',
  urgent:
    'margin: 0 0 16px; padding: 10px 14px; border: 2px solid #b42318; background: #fef3f2; color: #b42318; font-size: 16px; font-weight: 700; text-transform: uppercase; letter-spacing: 0.06em;',
  routine:
    'margin: 0 0 16px; padding: 6px 14px; border: 1px solid #d0d7de; color: #57606a; font-weight: 600;',
  cancelled:
    'margin: 0 0 16px; padding: 12px 14px; border: 2px solid #b42318; background: #fef3f2; color: #7a271a;',
  note: 'margin: 0 0 12px; break-inside: avoid;',
  noteMeta: 'margin: 0 0 4px; color: #57606a; font-size: 13px;',
  empty: 'margin: 0 0 8px; color: #57606a; font-style: italic;',
} as const;

export const NOT_PROVIDED = 'Not provided';

/** Blank text counts as missing: an empty cell tells the reader less than "Not provided". */
export function isMissing(value: string | number | null | undefined): value is null | undefined | '' {
  return value === null || value === undefined || (typeof value === 'string' && value.trim() === '');
}

/** An inline value, or a "Not provided" marker (with `data-missing`) when it is blank. */
export function field(name: string, value: string | number | null | undefined): SafeHtml {
  if (isMissing(value)) {
    return html`<span data-field="${name}" data-missing="true" style="${STYLE.missing}"
      >${NOT_PROVIDED}</span
    >`;
  }
  return html`<span data-field="${name}" style="${STYLE.value}">${value}</span>`;
}

/**
 * A multi-line value, such as clinical information or a note, shown as its own block. The box does
 * not preserve whitespace itself, so template indentation around the value never shows; only the
 * value's own span does.
 */
export function blockField(name: string, value: string | null | undefined): SafeHtml {
  return html`<div style="${STYLE.block}">${field(name, value)}</div>`;
}

const ISO_TIMESTAMP = /^(\d{4}-\d{2}-\d{2})T(\d{2}):(\d{2})(?::\d{2}(?:\.\d+)?)?Z$/;

/**
 * `2026-06-04T03:15:00.000Z` → `2026-06-04 03:15 UTC`, from the string alone (no clock, no
 * locale). Anything else is shown as stored, so an odd value is visible rather than hidden.
 */
export function formatTimestamp(iso: string): string {
  const match = ISO_TIMESTAMP.exec(iso);
  return match === null ? iso : `${match[1] ?? ''} ${match[2] ?? ''}:${match[3] ?? ''} UTC`;
}

export function timestampField(name: string, iso: string | null | undefined): SafeHtml {
  return field(name, isMissing(iso) ? null : formatTimestamp(iso));
}

export function heading(text: string): SafeHtml {
  return html`<h2 style="${STYLE.heading}">${text}</h2>`;
}

/** A two-column table of label → value rows. */
export function detailsTable(rows: readonly (readonly [string, HtmlValue])[]): SafeHtml {
  return html`<table style="${STYLE.table}">
    <tbody>
      ${rows.map(
        ([label, value]) =>
          html`<tr>
            <th scope="row" style="${STYLE.label}">${label}</th>
            <td style="${STYLE.cell}">${value}</td>
          </tr>`,
      )}
    </tbody>
  </table>`;
}

/** A table with column headings, or a short sentence when there are no rows. */
export function listTable(
  columns: readonly string[],
  rows: readonly (readonly HtmlValue[])[],
  whenEmpty: string,
): SafeHtml {
  if (rows.length === 0) return html`<p style="${STYLE.empty}">${whenEmpty}</p>`;
  return html`<table style="${STYLE.table}">
    <thead>
      <tr>
        ${columns.map((c) => html`<th scope="col" style="${STYLE.columnHead}">${c}</th>`)}
      </tr>
    </thead>
    <tbody>
      ${rows.map(
        (cells) =>
          html`<tr>
            ${cells.map((c) => html`<td style="${STYLE.cell}">${c}</td>`)}
          </tr>`,
      )}
    </tbody>
  </table>`;
}
