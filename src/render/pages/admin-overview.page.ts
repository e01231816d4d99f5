// The /admin page: a calm summary of the background work for the people on call, with a link to the
// queue dashboard. Pure rendering: IDs, counts, ages and codes in, HTML out, escaped by construction.
// No script runs; the one stylesheet carries the response's CSP nonce.
import type { DisplayTime } from '../../domain/display-time.ts';
import { INCIDENT_CONDITIONS, runbookOf, type IncidentView } from '../../domain/incidents.ts';
import { html, trustedHtml, type SafeHtml } from '../html.ts';
import { PAGE_CSS } from './page-style.ts';

/** Where the ops pages live: the overview, and the queue dashboard under it. */
export const ADMIN_PATH = '/admin';
export const BOARD_PATH = `${ADMIN_PATH}/queues`;

/** The job states the overview counts for each queue, in the order of its columns. */
export const COUNTED_STATES = ['waiting', 'active', 'delayed', 'failed', 'completed'] as const;
export type CountedState = (typeof COUNTED_STATES)[number];
export type QueueCounts = Readonly<Record<CountedState, number>>;

/** A referral whose forward failed for good, as the ledger recorded its last attempt. */
export interface FailedForwardView {
  readonly referralId: string;
  readonly lastAttemptAt: Date | null;
  readonly attempts: number;
  readonly httpStatus: number | null;
  readonly errorCode: string | null;
}

/**
 * What the page shows: values only, so that rendering reaches no store, queue or service. The ops
 * overview (services/admin-overview.service.ts) reads exactly this, and more.
 */
export interface OverviewView {
  readonly at: Date;
  readonly outbox: { readonly count: number; readonly oldestAgeSeconds: number | null };
  /** The queues' health, in Redis or in the database (QUEUE_BACKEND). */
  readonly queueHealth: {
    readonly backend: 'postgres' | 'redis';
    readonly reachable: boolean;
    /** Redis's eviction policy, or where in the database the queues are. */
    readonly detail: string | undefined;
    readonly problem: string | undefined;
  };
  /** `counts` is undefined when the queues could not be asked. */
  readonly queues: readonly { readonly name: string; readonly counts: QueueCounts | undefined }[];
  readonly failedForwards: {
    readonly total: number;
    readonly rows: readonly FailedForwardView[];
    readonly limit: number;
  };
  readonly ehrCircuit: {
    readonly state: 'closed' | 'open';
    readonly openedAt: Date | null;
    readonly probeAt: Date | null;
  };
  readonly incidents: readonly IncidentView[];
  readonly disabledWebhooks: readonly {
    readonly id: string;
    readonly institution: { readonly idType: string; readonly id: string };
    readonly disabledReason: string | null;
    readonly disabledAt: Date | null;
    readonly failingSince: Date | null;
  }[];
}

export interface OverviewPageOptions {
  readonly nonce: string;
  readonly overview: OverviewView;
  /** OPS_DASHBOARD_WRITE */
  readonly writable: boolean;
  /** The display prefix of the ops key in use. */
  readonly keyPrefix: string;
  readonly requestId: string;
  /** Times are written as on every page a person reads: in the display zone, with the zone named. */
  readonly displayTime: Pick<DisplayTime, 'dateTime'>;
}

/** An instant as the page writes it ("Thu 4 Jun 2026, 11:15 SGT"). */
type Instant = (at: Date) => string;

/** The page's policy: its own nonce'd stylesheet, nothing else; no frames, no forms, no base. */
export function overviewPageCsp(nonce: string): string {
  return [
    "default-src 'none'",
    `style-src 'nonce-${nonce}'`,
    "img-src 'self' data:",
    "form-action 'none'",
    "base-uri 'none'",
    "frame-ancestors 'none'",
  ].join('; ');
}

const ADMIN_CSS = `
.stats { display: grid; grid-template-columns: repeat(auto-fit, minmax(200px, 1fr)); gap: 16px; margin: 0 0 24px; }
.stat { background: var(--card); border: 1px solid var(--line); border-left: 6px solid var(--go); border-radius: 8px; padding: 14px 18px; }
.stat--attention { border-left-color: #c26a00; }
.stat--alert { border-left-color: var(--error); }
.stat__label { display: block; color: var(--muted); font-size: 0.9375rem; }
.stat__value { display: block; font-size: 1.75rem; font-weight: 700; line-height: 1.25; font-variant-numeric: tabular-nums; }
.stat__note { display: block; color: var(--muted); font-size: 0.875rem; }
.table-wrap { overflow-x: auto; margin: 0 0 16px; }
.table { width: 100%; border-collapse: collapse; }
.table th, .table td { text-align: left; padding: 10px 14px 10px 0; border-bottom: 1px solid var(--line); vertical-align: top; }
.table th { font-size: 0.9375rem; }
.table .num { text-align: right; font-variant-numeric: tabular-nums; }
.steps { margin: 0 0 16px; padding-left: 1.25em; }
.steps li { margin: 0 0 8px; }
/* On a phone every table becomes blocks: a row per block, each value beside its column's heading
   (the cell's data-label), so no column is cut off and nothing scrolls sideways. */
@media screen and (max-width: 700px) {
  .table-wrap { overflow-x: visible; }
  .table, .table tbody, .table tr, .table th, .table td { display: block; }
  .table thead {
    display: block; position: absolute; width: 1px; height: 1px; margin: -1px; padding: 0; overflow: hidden;
    clip-path: inset(50%); white-space: nowrap; border: 0;
  }
  .table tbody > tr { padding: 10px 0; border-bottom: 1px solid var(--line); }
  .table tbody > tr:last-child { border-bottom: 0; }
  .table th, .table td { padding: 2px 0; border: 0; text-align: left; overflow-wrap: break-word; }
  .table td[data-label] { display: grid; grid-template-columns: minmax(6.5em, 38%) minmax(0, 1fr); gap: 12px; }
  .table td[data-label]::before { content: attr(data-label); content: attr(data-label) / ""; color: var(--muted); }
  .table .num { text-align: left; }
  .table .nowrap { white-space: normal; }
}
`;

/** A duration as a person reads it on a status page: `45 s`, `3 min 12 s`, `2 h 5 min`, `3 d 4 h`. */
export function formatAge(seconds: number): string {
  const s = Math.max(0, Math.floor(seconds));
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`;
  if (s < 86_400) return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
  return `${Math.floor(s / 86_400)} d ${Math.floor((s % 86_400) / 3600)} h`;
}

/** The EHR's last answer to a failed forward, as the ledger recorded it. */
export function answerOf(row: FailedForwardView): string {
  if (row.httpStatus !== null) return `HTTP ${row.httpStatus}`;
  return row.errorCode ?? 'not recorded';
}

// The relay moves outbox rows within seconds; a row older than this means it is stuck.
const OUTBOX_STUCK_SECONDS = 60;

type Tone = 'ok' | 'attention' | 'alert';

function stat(id: string, label: string, value: string | number, note: string, tone: Tone): SafeHtml {
  const toneClass = tone === 'ok' ? '' : ` stat--${tone}`;
  return html`<div class="stat${toneClass}" data-stat="${id}" data-tone="${tone}">
    <span class="stat__label">${label}</span>
    <span class="stat__value">${value}</span>
    <span class="stat__note">${note}</span>
  </div>`;
}

function stats(o: OverviewView): SafeHtml {
  const age = o.outbox.oldestAgeSeconds;
  const q = o.queueHealth;
  const queuesTone: Tone = !q.reachable ? 'alert' : q.problem !== undefined ? 'attention' : 'ok';
  return html`<div class="stats">
    ${stat(
      'outbox-backlog',
      'Outbox backlog',
      o.outbox.count,
      o.outbox.count === 1 ? 'row not yet on a queue' : 'rows not yet on a queue',
      o.outbox.count === 0 ? 'ok' : 'attention',
    )}
    ${stat(
      'outbox-oldest',
      'Oldest undispatched row',
      age === null ? 'None' : formatAge(age),
      age === null ? 'nothing is waiting' : 'waiting since it was written',
      age === null || age < OUTBOX_STUCK_SECONDS ? 'ok' : 'alert',
    )}
    ${stat(
      'ehr-circuit',
      'EHR circuit',
      o.ehrCircuit.state === 'open' ? 'Open' : 'Closed',
      o.ehrCircuit.state === 'open' ? 'forwarding paused, probing the EHR' : 'forwarding runs',
      o.ehrCircuit.state === 'open' ? 'alert' : 'ok',
    )}
    ${stat(
      'failed-forwards',
      'Failed forwards',
      o.failedForwards.total,
      'referrals the EHR did not accept',
      o.failedForwards.total === 0 ? 'ok' : 'alert',
    )}
    ${stat(
      q.backend === 'redis' ? 'redis' : 'queues',
      q.backend === 'redis' ? 'Redis' : 'Queues (database)',
      !q.reachable ? 'Unreachable' : q.problem !== undefined ? 'Needs attention' : 'Healthy',
      q.detail ?? (q.backend === 'redis' ? 'eviction policy unknown' : 'not reached'),
      queuesTone,
    )}
  </div>`;
}

function circuitBanner(o: OverviewView, when: Instant): SafeHtml | null {
  const c = o.ehrCircuit;
  if (c.state !== 'open') return null;
  return html`<div class="banner banner--warn" role="status" data-ehr-circuit="open">
    <span class="banner__title">Forwarding to the EHR is paused</span>
    <p>
      The EHR kept failing, so the circuit opened${c.openedAt === null ? '' : html` at ${when(c.openedAt)}`}.
      One forward probes the EHR${c.probeAt === null ? '' : html`, next at ${when(c.probeAt)}`}; forwarding
      resumes by itself once it answers. Forwards wait meanwhile: none is lost or counted as failed.
    </p>
  </div>`;
}

function queuesBanner(o: OverviewView): SafeHtml | null {
  const q = o.queueHealth;
  if (q.problem === undefined) return null;
  const place = q.backend === 'redis' ? 'Redis' : 'The queues’ database';
  return html`<div class="banner banner--warn" role="status" data-queues-problem="${q.backend}">
    <span class="banner__title">${q.reachable ? `${place} needs attention` : `${place} is unreachable`}</span>
    <p>${q.problem}</p>
    <p>
      Requests still succeed: their background work waits in the outbox and is queued once the queues are
      back. Queue counts and the dashboard need them.
    </p>
  </div>`;
}

const countOf = (counts: QueueCounts | undefined, state: CountedState): number | string =>
  counts === undefined ? '–' : counts[state];

function queueTable(o: OverviewView): SafeHtml {
  const header = COUNTED_STATES.map((s) => html`<th scope="col" class="num">${s}</th>`);
  const rows = o.queues.map(
    (q) =>
      html`<tr data-queue="${q.name}">
        <th scope="row"><a href="${`${BOARD_PATH}/queue/${q.name}`}">${q.name}</a></th>
        ${COUNTED_STATES.map(
          (s) => html`<td class="num" data-count="${s}" data-label="${s}">${countOf(q.counts, s)}</td>`,
        )}
      </tr>`,
  );
  return html`<section class="card" aria-labelledby="queues-title">
    <h2 class="card__title" id="queues-title">Queues</h2>
    <p class="card__intro">Jobs by state. Completed and failed jobs are kept for a while, for this view.</p>
    <div class="table-wrap">
      <table class="table">
        <thead>
          <tr>
            <th scope="col">Queue</th>
            ${header}
          </tr>
        </thead>
        <tbody>
          ${rows}
        </tbody>
      </table>
    </div>
  </section>`;
}

function incidentsTable(o: OverviewView, when: Instant): SafeHtml {
  const rows = o.incidents;
  const list =
    rows.length === 0
      ? html`<p data-incidents-none>No incident is open.</p>`
      : html`<div class="table-wrap">
          <table class="table">
            <thead>
              <tr>
                <th scope="col">Condition</th>
                <th scope="col">What it means</th>
                <th scope="col">Open since</th>
                <th scope="col">What to do</th>
              </tr>
            </thead>
            <tbody>
              ${rows.map(
                (i) =>
                  html`<tr data-incident="${i.condition}">
                    <td class="mono" data-label="Condition">${i.condition}</td>
                    <td data-label="What it means">${INCIDENT_CONDITIONS[i.condition].summary}</td>
                    <td class="nowrap" data-label="Open since">${when(i.openedAt)}</td>
                    <td class="mono" data-label="What to do">${runbookOf(i.condition)}</td>
                  </tr>`,
              )}
            </tbody>
          </table>
        </div>`;
  return html`<section class="card" aria-labelledby="incidents-title">
    <h2 class="card__title" id="incidents-title">Open incidents</h2>
    <p class="card__intro">
      The conditions refhub watches itself, each the twin of an alert rule; an incident resolves by itself
      once its condition is false again.
    </p>
    ${list}
  </section>`;
}

function disabledWebhooksTable(o: OverviewView, when: Instant): SafeHtml {
  const rows = o.disabledWebhooks;
  const list =
    rows.length === 0
      ? html`<p data-disabled-webhooks-none>No webhook subscription was disabled by refhub.</p>`
      : html`<div class="table-wrap">
          <table class="table">
            <thead>
              <tr>
                <th scope="col">Subscription</th>
                <th scope="col">Institution</th>
                <th scope="col">Why</th>
                <th scope="col">Disabled</th>
                <th scope="col">Failing since</th>
              </tr>
            </thead>
            <tbody>
              ${rows.map(
                (s) =>
                  html`<tr data-disabled-webhook="${s.id}">
                    <td class="mono" data-label="Subscription">${s.id}</td>
                    <td class="mono" data-label="Institution">${s.institution.idType}:${s.institution.id}</td>
                    <td data-label="Why">
                      ${s.disabledReason === 'gone' ? 'the receiver answered 410 Gone' : 'kept failing'}
                    </td>
                    <td class="nowrap" data-label="Disabled">
                      ${s.disabledAt === null ? '–' : when(s.disabledAt)}
                    </td>
                    <td class="nowrap" data-label="Failing since">
                      ${s.failingSince === null ? '–' : when(s.failingSince)}
                    </td>
                  </tr>`,
              )}
            </tbody>
          </table>
        </div>`;
  return html`<section class="card" aria-labelledby="webhooks-title">
    <h2 class="card__title" id="webhooks-title">Disabled webhook subscriptions</h2>
    <p class="card__intro">
      Subscriptions that get no more deliveries until their institution enables them again (<code
        >PATCH …/webhook-subscriptions/{id}</code
      >
      with <code>enabled: true</code>). Their institution's API responses carry
      <code>Webhook-Subscriptions-Disabled</code> meanwhile. Replay what they missed with
      <code>refhub webhooks replay --subscription ID --since TIME</code>.
    </p>
    ${list}
  </section>`;
}

function failedTable(o: OverviewView, writable: boolean, when: Instant): SafeHtml {
  const { total, rows, limit } = o.failedForwards;
  const shown =
    total > rows.length ? html`<p class="muted">The ${limit} most recent of ${total} are shown.</p>` : null;
  const list =
    rows.length === 0
      ? html`<p data-failed-none>No referral is waiting on a failed forward.</p>`
      : html`<div class="table-wrap">
            <table class="table">
              <thead>
                <tr>
                  <th scope="col">Referral</th>
                  <th scope="col">Last attempt</th>
                  <th scope="col">Last answer</th>
                  <th scope="col" class="num">Attempts</th>
                </tr>
              </thead>
              <tbody>
                ${rows.map(
                  (r) =>
                    html`<tr data-failed-forward="${r.referralId}">
                      <td class="mono" data-label="Referral">${r.referralId}</td>
                      <td class="nowrap" data-label="Last attempt">
                        ${r.lastAttemptAt === null ? '–' : when(r.lastAttemptAt)}
                      </td>
                      <td class="mono" data-answer data-label="Last answer">${answerOf(r)}</td>
                      <td class="num" data-label="Attempts">${r.attempts}</td>
                    </tr>`,
                )}
              </tbody>
            </table>
          </div>
          ${shown}`;
  return html`<section class="card" aria-labelledby="failed-title">
    <h2 class="card__title" id="failed-title">Failed forwards</h2>
    <p class="card__intro">
      Referrals whose form the EHR did not accept, after the last allowed attempt or with a final answer (a
      4xx other than 408 and 429). Latest attempt first.
    </p>
    ${list}
    <h3>What to do</h3>
    <ol class="steps">
      <li>
        Find the cause from the last answer: a 5xx or a network code means the EHR was down or unreachable; a
        4xx means it refused the request, which a retry alone will not change.
      </li>
      <li>
        Once it is fixed, retry the failed job from the
        <a href="${`${BOARD_PATH}/queue/ehr-forward?status=failed`}">failed forwards on the dashboard</a>.
        ${
          writable
            ? 'This dashboard may retry jobs.'
            : 'Retrying needs OPS_DASHBOARD_WRITE=true; this dashboard is read-only.'
        }
        The worker re-reads the referral and sends its current form.
      </li>
      <li>A referral leaves this list when a later forward is delivered.</li>
    </ol>
  </section>`;
}

export function renderOverviewPage(options: OverviewPageOptions): string {
  const o = options.overview;
  const when: Instant = (at) => options.displayTime.dateTime(at);
  return html`<!doctype html>
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <meta name="referrer" content="no-referrer" />
        <meta name="robots" content="noindex" />
        <title>Operations – refhub</title>
        <link rel="icon" href="data:," />
        <style nonce="${options.nonce}">
          ${trustedHtml(PAGE_CSS)}
          ${trustedHtml(ADMIN_CSS)}
        </style>
      </head>
      <body>
        <a class="skip-link" href="#main">Skip to main content</a>
        <header class="site-header">
          <div class="site-header__inner">
            <div class="brand">refhub <span class="brand__product">Operations</span></div>
            <div class="site-header__who">
              <span class="site-header__institution">Ops key</span>
              <span class="mono">${options.keyPrefix}</span>
            </div>
          </div>
        </header>
        <main class="page" id="main" tabindex="-1">
          <h1 class="page-title">Queues and forwarding</h1>
          <p class="page-lede">
            <span>As of ${when(o.at)}</span>
            <span class="tag" data-mode
              >${options.writable ? 'Dashboard may change jobs' : 'Dashboard is read-only'}</span
            >
          </p>
          <div class="actions">
            <a class="button button--primary" href="${BOARD_PATH}" data-dashboard-link
              >Open the queue dashboard</a
            >
            <a class="button button--secondary" href="/admin">Refresh</a>
          </div>
          ${circuitBanner(o, when)} ${queuesBanner(o)} ${incidentsTable(o, when)} ${stats(o)} ${queueTable(o)}
          ${failedTable(o, options.writable, when)} ${disabledWebhooksTable(o, when)}
        </main>
        <footer class="site-footer">Request ID <span class="mono">${options.requestId}</span></footer>
      </body>
    </html>`.toString();
}
