// The building blocks every EHR form template shares: the inline styles (the form may carry no
// stylesheet), the value elements with their `data-field` names, times in the display zone, and
// codes as words.
//
// Every value goes in its own element with a stable `data-field`, so a reader (or a test) can find
// it without knowing the layout. Values keep their whitespace verbatim and are shown with
// `white-space: pre-wrap`, so what the EHR displays is exactly what was stored. A code (a category,
// a status) shows its word from `domain/labels.ts`; a code with no word shows as stored.
import type { DisplayTime } from '../../domain/display-time.ts';
import { labelFor } from '../../domain/labels.ts';
import type { EhrFormSource } from '../../domain/referral-view.ts';
import { html, type HtmlValue, type SafeHtml } from '../html.ts';

export interface EhrTemplate {
  /** The name that goes into `ehrFormType`. */
  readonly name: string;
  render(source: EhrFormSource, display: DisplayTime): SafeHtml;
}

const FONT = 'system-ui, -apple-system, Segoe UI, Roboto, Helvetica Neue, Arial, sans-serif';

export const STYLE = {
  body: `margin: 0; padding: 24px; background: #ffffff; color: #1b1f24; font-family: ${FONT}; font-size: 14px; line-height: 1.45;`,
  page: 'max-width: 800px; margin: 0 auto;',
  masthead: 'margin: 0 0 16px;',
  template: 'margin: 0 0 32px;',
  patient:
    'margin: 0 0 28px; padding: 4px 16px 8px; border: 1px solid #d0d7de; border-radius: 6px; background: #f6f8fa;',
  title: 'margin: 0 0 4px; font-size: 22px; font-weight: 700; letter-spacing: 0.01em;',
  subtitle: 'margin: 0 0 12px; color: #57606a; font-size: 15px;',
  heading:
    'margin: 20px 0 8px; padding-bottom: 4px; border-bottom: 1px solid #d0d7de; font-size: 15px; font-weight: 700; text-transform: uppercase; letter-spacing: 0.04em; color: #24292f;',
  table: 'width: 100%; border-collapse: collapse; margin: 0 0 8px;',
  label:
    'width: 32%; padding: 4px 12px 4px 0; text-align: left; vertical-align: top; font-weight: 600; color: #57606a;',
  cell: 'padding: 4px 12px 4px 0; text-align: left; vertical-align: top;',
  columnHead:
    'padding: 4px 12px 4px 0; text-align: left; vertical-align: bottom; font-weight: 600; color: #57606a; border-bottom: 1px solid #d0d7de; white-space: nowrap;',
  value: 'white-space: pre-wrap; overflow-wrap: anywhere;',
  /** A time we formatted ourselves: one line, so a table column never breaks it. */
  time: 'white-space: nowrap;',
  missing: 'color: #8c959f; font-style: italic;',
  block: 'margin: 0 0 8px; padding: 8px 12px; border-left: 3px solid #d0d7de; background: #f6f8fa;',
  paragraph: 'margin: 0 0 12px;',
  signOff: 'margin: 16px 0 8px;',
  signature: 'margin: 0 0 4px; font-weight: 700;',
  signatureDetail: 'margin: 0 0 2px; color: #24292f;',
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
export function field(
  name: string,
  value: string | number | null | undefined,
  style: string = STYLE.value,
): SafeHtml {
  if (isMissing(value)) {
    return html`<span data-field="${name}" data-missing="true" style="${STYLE.missing}"
      >${NOT_PROVIDED}</span
    >`;
  }
  return html`<span data-field="${name}" style="${style}">${value}</span>`;
}

/** A value that is absent for a reason the reader should know ("Not submitted yet"), not missing data. */
export function absentField(name: string, text: string): SafeHtml {
  return html`<span data-field="${name}" data-missing="true" style="${STYLE.missing}">${text}</span>`;
}

/**
 * A multi-line value, such as clinical information or a note, shown as its own block. The box does
 * not preserve whitespace itself, so template indentation around the value never shows; only the
 * value's own span does.
 */
export function blockField(name: string, value: string | null | undefined): SafeHtml {
  return html`<div style="${STYLE.block}">${field(name, value)}</div>`;
}

/** An instant in the display zone, "Tue 1 Dec 2026, 09:30 SGT"; a missing one is "Not provided". */
export function timestampField(name: string, iso: string | null | undefined, display: DisplayTime): SafeHtml {
  if (isMissing(iso)) return field(name, null);
  const shown = display.dateTime(iso);
  // A value that is not an instant is shown as stored, and may wrap like any stored text.
  return field(name, shown, shown === iso ? STYLE.value : STYLE.time);
}

/** A code shown as its word ("soc" → "Specialist Outpatient Clinic (SOC)"). */
export function labelField(
  name: string,
  code: string | null | undefined,
  labels: Readonly<Record<string, string>>,
): SafeHtml {
  return field(name, isMissing(code) ? null : labelFor(labels, code));
}

/**
 * An identifier with its type, "HCI code S1234A" or "MCR no. M12345A", as one value: without the ID
 * it is one "Not provided" (a type alone identifies nothing), and without the type, the ID alone.
 * Each part keeps its own `data-field`; a missing whole carries the ID's.
 */
export function identifierField(
  names: { readonly type: string; readonly id: string },
  type: string | null | undefined,
  id: string | null | undefined,
  typeLabels: Readonly<Record<string, string>>,
): SafeHtml {
  if (isMissing(id) || isMissing(type)) return field(names.id, id);
  return html`${field(names.type, labelFor(typeLabels, type))} ${field(names.id, id)}`;
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

/**
 * A table with column headings, or a short sentence when there are no rows. Each cell carries its
 * column's heading in `data-label`, so a narrow screen can show the rows as blocks, each value under
 * its heading (the web pages' stylesheet does; the EHR form itself shows the table).
 */
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
            ${cells.map((c, i) => html`<td style="${STYLE.cell}" data-label="${columns[i] ?? ''}">${c}</td>`)}
          </tr>`,
      )}
    </tbody>
  </table>`;
}
