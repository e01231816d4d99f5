// The ops pages of the ledger search (the capability `ledger-search`): the search of the forwards'
// ledger or the webhook deliveries with its filter form, a page of rows and the links to the next page
// and to the export; the confirmation of a replay (the dry run's counts and rows, and the POST that
// runs it); and what the replay did. Pure rendering: IDs, versions, codes and times in, HTML out,
// escaped by construction. No script runs; the one stylesheet carries the response's CSP nonce.
import type { DisplayTime } from '../../domain/display-time.ts';
import {
  FILTER_FIELDS,
  LEDGER_OUTCOMES,
  LEDGERS,
  SKIP_WORDS,
  type FilterField,
  type Ledger,
  type LedgerRow,
  type ReplayPlan,
  type SkipReason,
} from '../../domain/ledger-search.ts';
import { html, trustedHtml, type HtmlValue, type SafeHtml } from '../html.ts';
import { ADMIN_PATH } from './admin-overview.page.ts';
import { PAGE_CSS } from './page-style.ts';

export const LEDGER_PATH = `${ADMIN_PATH}/ledger`;
export const LEDGER_EXPORT_PATH = `${LEDGER_PATH}/export`;
export const LEDGER_REPLAY_PATH = `${LEDGER_PATH}/replay`;

/** The most rows of a dry run the confirmation page lists (the counts cover them all). */
export const CONFIRM_ROWS_SHOWN = 200;

/** The pages' policy: their own nonce'd stylesheet; forms post to this origin only. */
export function ledgerPageCsp(nonce: string): string {
  return [
    "default-src 'none'",
    `style-src 'nonce-${nonce}'`,
    "img-src 'self' data:",
    "form-action 'self'",
    "base-uri 'none'",
    "frame-ancestors 'none'",
  ].join('; ');
}

const LEDGER_CSS = `
.filter { display: grid; grid-template-columns: repeat(auto-fit, minmax(200px, 1fr)); gap: 12px 16px; margin: 0 0 16px; }
.filter label { display: block; font-size: 0.9375rem; }
.filter input, .filter select { width: 100%; }
.table-wrap { overflow-x: auto; margin: 0 0 16px; }
.table { width: 100%; border-collapse: collapse; }
.table th, .table td { text-align: left; padding: 8px 12px 8px 0; border-bottom: 1px solid var(--line); vertical-align: top; }
.mono { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: 0.875rem; }
`;

interface PageFrame {
  readonly nonce: string;
  readonly keyPrefix: string;
  readonly requestId: string;
  readonly title: string;
}

function frame(f: PageFrame, body: HtmlValue): string {
  return html`<!doctype html>
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <meta name="referrer" content="no-referrer" />
        <meta name="robots" content="noindex" />
        <title>${f.title} – refhub</title>
        <link rel="icon" href="data:," />
        <style nonce="${f.nonce}">
          ${trustedHtml(PAGE_CSS)}
          ${trustedHtml(LEDGER_CSS)}
        </style>
      </head>
      <body>
        <a class="skip-link" href="#main">Skip to main content</a>
        <header class="site-header">
          <div class="site-header__inner">
            <div class="brand">refhub <span class="brand__product">Operations</span></div>
            <div class="site-header__who">
              <span class="site-header__institution">Ops key</span>
              <span class="mono">${f.keyPrefix}</span>
            </div>
          </div>
        </header>
        <main class="page" id="main" tabindex="-1">
          <p><a href="${ADMIN_PATH}">Back to the overview</a></p>
          <h1 class="page-title">${f.title}</h1>
          ${body}
        </main>
        <footer class="site-footer">Request ID <span class="mono">${f.requestId}</span></footer>
      </body>
    </html>`.toString();
}

type Fields = Partial<Readonly<Record<FilterField, string>>>;

/** The query string of a ledger and filter, with `extra` after. */
export function ledgerQuery(
  ledger: Ledger,
  fields: Fields,
  extra: Readonly<Record<string, string>> = {},
): string {
  const params = new URLSearchParams({ ledger });
  for (const field of FILTER_FIELDS) {
    const value = fields[field];
    if (value !== undefined && value !== '') params.set(field, value);
  }
  for (const [name, value] of Object.entries(extra)) params.set(name, value);
  return params.toString();
}

const LABELS: Readonly<Record<FilterField, string>> = {
  from: 'From (ISO 8601, with zone)',
  to: 'To (ISO 8601, with zone)',
  outcome: 'Outcome',
  status: 'HTTP status',
  errorCode: 'Error code',
  offering: 'Offering',
  institution: 'Institution (idType:id)',
  referral: 'Referral ID',
};

/** What each ledger holds, as the form's choice says it. */
const LEDGER_WORDS: Readonly<Record<Ledger, string>> = {
  forwards: 'forwards to the EHR',
  webhooks: 'webhook deliveries',
};

function option(value: string, words: string, selected: boolean): SafeHtml {
  return selected
    ? html`<option value="${value}" selected>${words}</option>`
    : html`<option value="${value}">${words}</option>`;
}

function filterForm(ledger: Ledger, fields: Fields): SafeHtml {
  const input = (field: FilterField) =>
    field === 'outcome'
      ? html`<label
          >${LABELS[field]}
          <select name="outcome">
            <option value="">any</option>
            ${LEDGER_OUTCOMES.map((o) => option(o, o, fields.outcome === o))}
          </select></label
        >`
      : html`<label>${LABELS[field]} <input name="${field}" value="${fields[field] ?? ''}" /></label>`;
  return html`<form method="get" action="${LEDGER_PATH}">
    <div class="filter">
      <label
        >Ledger
        <select name="ledger">
          ${LEDGERS.map((name) => option(name, LEDGER_WORDS[name], ledger === name))}
        </select></label
      >
      ${FILTER_FIELDS.map(input)}
    </div>
    <button class="button button--primary" type="submit">Search</button>
  </form>`;
}

function answer(row: LedgerRow): string {
  return row.httpStatus !== null ? `HTTP ${row.httpStatus}` : (row.errorCode ?? '');
}

function rowsTable(ledger: Ledger, rows: readonly LedgerRow[], when: (at: Date) => string): SafeHtml {
  if (rows.length === 0) return html`<p data-empty>No attempts match.</p>`;
  const subject = (row: LedgerRow) =>
    'messageId' in row
      ? html`<td class="mono">${row.referralId}</td>
          <td>${row.version}</td>`
      : html`<td class="mono">${row.referralId ?? '–'}</td>
          <td class="mono">${row.eventType} ${row.subscriptionId}</td>`;
  return html`<div class="table-wrap">
    <table class="table" data-rows="${rows.length}">
      <thead>
        <tr>
          <th>When</th>
          <th>Attempt</th>
          <th>Referral</th>
          <th>${ledger === 'forwards' ? 'Version' : 'Event and subscription'}</th>
          <th>Outcome</th>
          <th>Answer</th>
          <th>Replay of</th>
        </tr>
      </thead>
      <tbody>
        ${rows.map(
          (row) =>
            html`<tr data-attempt="${row.id}">
              <td>${when(row.attemptedAt)}</td>
              <td class="mono">${row.id}</td>
              ${subject(row)}
              <td>${row.outcome}</td>
              <td>${answer(row)}</td>
              <td class="mono">${row.replayOf ?? ''}</td>
            </tr>`,
        )}
      </tbody>
    </table>
  </div>`;
}

export interface LedgerSearchPageOptions {
  readonly nonce: string;
  readonly keyPrefix: string;
  readonly requestId: string;
  readonly displayTime: Pick<DisplayTime, 'dateTime'>;
  readonly ledger: Ledger;
  readonly fields: Fields;
  /** Undefined: no search yet (the form only). */
  readonly page: { readonly rows: readonly LedgerRow[]; readonly next: string | undefined } | undefined;
}

/** The search page: the filter, a page of rows, the next page, the exports and the replay's dry run. */
export function renderLedgerSearchPage(o: LedgerSearchPageOptions): string {
  const when = (at: Date) => o.displayTime.dateTime(at);
  const query = (extra: Readonly<Record<string, string>> = {}) => ledgerQuery(o.ledger, o.fields, extra);
  const results =
    o.page === undefined
      ? html`<p>Give a time range (from and to) to search.</p>`
      : html`${rowsTable(o.ledger, o.page.rows, when)}
          <div class="actions">
            ${
              o.page.next === undefined
                ? ''
                : html`<a
                    class="button button--secondary"
                    href="${LEDGER_PATH}?${query({ after: o.page.next })}"
                    data-next
                    >Next page</a
                  >`
            }
            <a
              class="button button--secondary"
              href="${LEDGER_EXPORT_PATH}?${query({ format: 'csv' })}"
              data-export="csv"
              >Download CSV</a
            >
            <a
              class="button button--secondary"
              href="${LEDGER_EXPORT_PATH}?${query({ format: 'ndjson' })}"
              data-export="ndjson"
              >Download NDJSON</a
            >
            <a class="button button--primary" href="${LEDGER_REPLAY_PATH}?${query()}" data-replay
              >Replay these…</a
            >
          </div>`;
  return frame(
    {
      nonce: o.nonce,
      keyPrefix: o.keyPrefix,
      requestId: o.requestId,
      title: 'Search and replay the ledgers',
    },
    html`${filterForm(o.ledger, o.fields)} ${results}`,
  );
}

function skippedList(plan: ReplayPlan): SafeHtml {
  const entries = Object.entries(plan.skipped) as [SkipReason, number][];
  if (entries.length === 0) return html``;
  return html`<ul data-skipped>
    ${entries.map(([reason, count]) => html`<li data-reason="${reason}">${count} skipped: ${SKIP_WORDS[reason]}</li>`)}
  </ul>`;
}

export interface ReplayConfirmPageOptions {
  readonly nonce: string;
  readonly keyPrefix: string;
  readonly requestId: string;
  readonly ledger: Ledger;
  readonly fields: Fields;
  readonly plan: ReplayPlan;
  /** OPS_DASHBOARD_WRITE: without it the page shows the dry run and no button. */
  readonly writable: boolean;
}

/** The dry run, and the POST that runs the replay by the same filter. */
export function renderReplayConfirmPage(o: ReplayConfirmPageOptions): string {
  const { plan } = o;
  const shown = plan.candidates.slice(0, CONFIRM_ROWS_SHOWN);
  const hidden = (name: string, value: string | undefined) =>
    value === undefined || value === '' ? '' : html`<input type="hidden" name="${name}" value="${value}" />`;
  const action = !o.writable
    ? html`<p data-read-only>
        The ops pages are read-only: set OPS_DASHBOARD_WRITE=true to replay from here, or run
        <span class="mono">refhub ledger replay</span>.
      </p>`
    : plan.replay === 0
      ? html`<p>Nothing to replay.</p>`
      : html`<form method="post" action="${LEDGER_REPLAY_PATH}">
          ${hidden('ledger', o.ledger)} ${FILTER_FIELDS.map((f) => hidden(f, o.fields[f]))}
          ${hidden('expected', String(plan.replay))}
          <button class="button button--primary" type="submit" data-confirm>Replay ${plan.replay}</button>
        </form>`;
  return frame(
    { nonce: o.nonce, keyPrefix: o.keyPrefix, requestId: o.requestId, title: `Replay ${o.ledger}: dry run` },
    html`<p data-counts>
        <span data-matched="${plan.matched}">${plan.matched} attempts match.</span>
        <span data-replay="${plan.replay}">${plan.replay} would be replayed.</span>
      </p>
      ${skippedList(plan)} ${action}
      <div class="table-wrap">
        <table class="table">
          <thead>
            <tr>
              <th>Attempt</th>
              <th>Referral</th>
              <th>Version</th>
              <th>Last outcome</th>
              <th>Action</th>
            </tr>
          </thead>
          <tbody>
            ${shown.map(
              (c) =>
                html`<tr data-candidate="${c.attemptId}">
                  <td class="mono">${c.attemptId}</td>
                  <td class="mono">${c.referralId ?? '–'}</td>
                  <td>${c.version ?? '–'}</td>
                  <td>${c.lastOutcome}</td>
                  <td>${c.skip === undefined ? 'replay' : `skip: ${c.skip}`}</td>
                </tr>`,
            )}
          </tbody>
        </table>
      </div>
      ${
        plan.candidates.length > shown.length
          ? html`<p>The first ${shown.length} of ${plan.candidates.length} are listed.</p>`
          : ''
      }`,
  );
}

export interface ReplayDonePageOptions {
  readonly nonce: string;
  readonly keyPrefix: string;
  readonly requestId: string;
  readonly ledger: Ledger;
  readonly fields: Fields;
  readonly plan: ReplayPlan;
}

/** What a replay did: the counts, and the way back to the search. */
export function renderReplayDonePage(o: ReplayDonePageOptions): string {
  return frame(
    { nonce: o.nonce, keyPrefix: o.keyPrefix, requestId: o.requestId, title: `Replay ${o.ledger}: queued` },
    html`<p data-counts>
        <span data-matched="${o.plan.matched}">${o.plan.matched} attempts matched.</span>
        <span data-replayed="${o.plan.replay}">${o.plan.replay} queued again.</span>
      </p>
      ${skippedList(o.plan)}
      <p><a href="${LEDGER_PATH}?${ledgerQuery(o.ledger, o.fields)}">Back to the search</a></p>`,
  );
}
