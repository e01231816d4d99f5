// Searching and replaying the ledgers (the capability `ledger-search`): the forwards' ledger (one row
// per attempt to send a referral's form to the EHR) and the webhook deliveries (one row per attempt to
// deliver an event). The filter an operator gives, checked here once for the ops pages and the
// command line alike; the keyset cursor of a page; the rows' export as NDJSON and as CSV (RFC 4180,
// with OWASP's guard against formula injection); and the reasons a replay skips a row.
//
// Every search is bounded by a time range: the ledgers only grow, and a search of them all would read
// them all. Rows hold IDs, versions, message IDs, outcomes, statuses and hashes, never patient data,
// and nothing here adds any.
import type { InstitutionRef } from './access.ts';
import { isUuid } from './ids.ts';

/** The two ledgers, by the names the ops pages and the command line use. */
export const LEDGERS = ['forwards', 'webhooks'] as const;
export type Ledger = (typeof LEDGERS)[number];

export const LEDGER_OUTCOMES = ['delivered', 'retrying', 'failed'] as const;
export type LedgerOutcome = (typeof LEDGER_OUTCOMES)[number];

/** What a search selects: attempts made in [from, to), and whichever of the rest is given. */
export interface LedgerFilter {
  readonly from: Date;
  readonly to: Date;
  readonly outcome?: LedgerOutcome;
  readonly httpStatus?: number;
  readonly errorCode?: string;
  /** The referral's offering (for a webhook delivery: the referral its event is about). */
  readonly offering?: string;
  /** Forwards: the referral's sender or provider. Webhook deliveries: the subscription's institution. */
  readonly institution?: InstitutionRef;
  readonly referralId?: string;
}

/**
 * The filter's fields as they are typed: a query parameter of the ops pages, or a flag of `refhub
 * ledger` (`LEDGER_FLAGS`). A problem names the field by this name.
 */
export const FILTER_FIELDS = [
  'from',
  'to',
  'outcome',
  'status',
  'errorCode',
  'offering',
  'institution',
  'referral',
] as const;
export type FilterField = (typeof FILTER_FIELDS)[number];

/** The command line's flag for each field, so that its errors name what the operator typed. */
export const LEDGER_FLAGS: Readonly<Record<FilterField | 'after' | 'limit', string>> = {
  from: '--from',
  to: '--to',
  outcome: '--outcome',
  status: '--status',
  errorCode: '--error-code',
  offering: '--offering',
  institution: '--institution',
  referral: '--referral',
  after: '--after',
  limit: '--limit',
};

export interface FilterProblem {
  readonly field: FilterField;
  readonly message: string;
}

export type FilterInput = Partial<Readonly<Record<FilterField, string | undefined>>>;

const INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?(Z|[+-]\d{2}:\d{2})$/;
const ERROR_CODE = /^[A-Za-z0-9_.-]{1,64}$/;
const OFFERING = /^[A-Za-z0-9._-]{1,64}$/;
const INSTITUTION = /^([a-z]+):([A-Za-z0-9._-]{1,64})$/;

/**
 * The filter of what was typed, or every problem with it. `from` and `to` are required (an unbounded
 * search is refused), ISO 8601 with a zone, `from` before `to`; the rest is optional, and an empty
 * value counts as not given.
 */
export function parseLedgerFilter(
  input: FilterInput,
): { readonly filter: LedgerFilter } | { readonly problems: readonly FilterProblem[] } {
  const problems: FilterProblem[] = [];
  const given = (field: FilterField) => {
    const value = input[field]?.trim();
    return value === undefined || value === '' ? undefined : value;
  };
  const instant = (field: 'from' | 'to'): Date | undefined => {
    const value = given(field);
    if (value === undefined) {
      problems.push({
        field,
        message: 'is required: a search is bounded by a time range (from and to, ISO 8601 with a zone)',
      });
      return undefined;
    }
    const at = new Date(value);
    if (!INSTANT.test(value) || Number.isNaN(at.getTime())) {
      problems.push({
        field,
        message: 'must be an ISO 8601 time with a zone, for example 2026-06-04T03:00:00Z',
      });
      return undefined;
    }
    return at;
  };
  const from = instant('from');
  const to = instant('to');
  if (from !== undefined && to !== undefined && from.getTime() >= to.getTime()) {
    problems.push({ field: 'to', message: 'must be later than from' });
  }
  const outcome = given('outcome');
  if (outcome !== undefined && !(LEDGER_OUTCOMES as readonly string[]).includes(outcome)) {
    problems.push({ field: 'outcome', message: `must be one of ${LEDGER_OUTCOMES.join(', ')}` });
  }
  const status = given('status');
  if (status !== undefined && !/^[1-5]\d{2}$/.test(status)) {
    problems.push({ field: 'status', message: 'must be an HTTP status code, 100 to 599' });
  }
  const errorCode = given('errorCode');
  if (errorCode !== undefined && !ERROR_CODE.test(errorCode)) {
    problems.push({ field: 'errorCode', message: 'must be an error code such as ECONNRESET or HTTP_503' });
  }
  const offering = given('offering');
  if (offering !== undefined && !OFFERING.test(offering)) {
    problems.push({ field: 'offering', message: 'must be an offering ID of the catalog' });
  }
  const institutionText = given('institution');
  const institution = institutionText === undefined ? undefined : INSTITUTION.exec(institutionText);
  if (institutionText !== undefined && institution === null) {
    problems.push({ field: 'institution', message: 'must be idType:id, for example hci:S1234A' });
  }
  const referral = given('referral');
  if (referral !== undefined && !isUuid(referral)) {
    problems.push({ field: 'referral', message: 'must be a referral ID (a UUID)' });
  }
  if (problems.length > 0 || from === undefined || to === undefined) return { problems };
  return {
    filter: {
      from,
      to,
      ...(outcome === undefined ? {} : { outcome: outcome as LedgerOutcome }),
      ...(status === undefined ? {} : { httpStatus: Number(status) }),
      ...(errorCode === undefined ? {} : { errorCode }),
      ...(offering === undefined ? {} : { offering }),
      ...(institution === undefined || institution === null
        ? {}
        : { institution: { idType: institution[1] ?? '', id: institution[2] ?? '' } }),
      ...(referral === undefined ? {} : { referralId: referral.toLowerCase() }),
    },
  };
}

/** The filter as it was typed back, for a page's links and the record of a replay. */
export function filterFields(filter: LedgerFilter): Partial<Record<FilterField, string>> {
  return {
    from: filter.from.toISOString(),
    to: filter.to.toISOString(),
    ...(filter.outcome === undefined ? {} : { outcome: filter.outcome }),
    ...(filter.httpStatus === undefined ? {} : { status: String(filter.httpStatus) }),
    ...(filter.errorCode === undefined ? {} : { errorCode: filter.errorCode }),
    ...(filter.offering === undefined ? {} : { offering: filter.offering }),
    ...(filter.institution === undefined
      ? {}
      : { institution: `${filter.institution.idType}:${filter.institution.id}` }),
    ...(filter.referralId === undefined ? {} : { referral: filter.referralId }),
  };
}

/**
 * Where a page ends: the last row's time, to the microsecond as the database holds it, and its ID.
 * The next page starts after it in (attempted_at, id) order, so paging returns each row once even when
 * rows share a time.
 */
export interface LedgerCursor {
  /** ISO 8601 UTC with microseconds, as the database wrote it (`YYYY-MM-DDTHH:MM:SS.ffffffZ`). */
  readonly at: string;
  readonly id: string;
}

const CURSOR_AT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;

export function encodeCursor(cursor: LedgerCursor): string {
  return Buffer.from(`${cursor.at}|${cursor.id}`, 'utf8').toString('base64url');
}

/** The cursor of `after`, or undefined when it is not one this code wrote. */
export function decodeCursor(text: string): LedgerCursor | undefined {
  if (!/^[A-Za-z0-9_-]{1,200}$/.test(text)) return undefined;
  const [at, id, ...rest] = Buffer.from(text, 'base64url').toString('utf8').split('|');
  if (at === undefined || id === undefined || rest.length > 0) return undefined;
  if (!CURSOR_AT.test(at) || Number.isNaN(new Date(at).getTime()) || !isUuid(id)) return undefined;
  return { at, id: id.toLowerCase() };
}

/** One row of the forwards' ledger, as a search returns it. */
export interface ForwardLedgerRow {
  readonly id: string;
  readonly attemptedAt: Date;
  readonly referralId: string;
  readonly messageId: string;
  readonly version: number;
  readonly attempt: number;
  readonly outcome: LedgerOutcome;
  readonly httpStatus: number | null;
  readonly errorCode: string | null;
  readonly sha256: string | null;
  readonly ehrReference: string | null;
  readonly durationMs: number;
  /** The attempt an operator's replay repeated; null for any other. */
  readonly replayOf: string | null;
  readonly cursor: LedgerCursor;
}

/** One webhook delivery attempt, as a search returns it. */
export interface WebhookLedgerRow {
  readonly id: string;
  readonly attemptedAt: Date;
  readonly subscriptionId: string;
  readonly eventId: string;
  readonly eventType: string;
  /** The referral the event is about; null when the event is past the feed's retention. */
  readonly referralId: string | null;
  readonly attempt: number;
  readonly outcome: LedgerOutcome;
  readonly httpStatus: number | null;
  readonly errorCode: string | null;
  readonly durationMs: number;
  readonly replayOf: string | null;
  readonly cursor: LedgerCursor;
}

export type LedgerRow = ForwardLedgerRow | WebhookLedgerRow;

/** The export's columns of each ledger, in order: the CSV header and the NDJSON keys. */
export const EXPORT_COLUMNS = {
  forwards: [
    'id',
    'attemptedAt',
    'referralId',
    'messageId',
    'version',
    'attempt',
    'outcome',
    'httpStatus',
    'errorCode',
    'sha256',
    'ehrReference',
    'durationMs',
    'replayOf',
  ],
  webhooks: [
    'id',
    'attemptedAt',
    'subscriptionId',
    'eventId',
    'eventType',
    'referralId',
    'attempt',
    'outcome',
    'httpStatus',
    'errorCode',
    'durationMs',
    'replayOf',
  ],
} as const satisfies Record<Ledger, readonly string[]>;

export const EXPORT_FORMATS = ['ndjson', 'csv'] as const;
export type ExportFormat = (typeof EXPORT_FORMATS)[number];

/** The media type of each export format. */
export const EXPORT_MEDIA_TYPES: Readonly<Record<ExportFormat, string>> = {
  ndjson: 'application/x-ndjson; charset=utf-8',
  csv: 'text/csv; charset=utf-8; header=present',
};

type ExportValue = string | number | null;

/** A row as the export writes it: the columns of its ledger, times in ISO 8601 UTC. */
export function exportRecord(ledger: Ledger, row: LedgerRow): Record<string, ExportValue> {
  const source = row as unknown as Record<string, unknown>;
  const record: Record<string, ExportValue> = {};
  for (const column of EXPORT_COLUMNS[ledger]) {
    const value = source[column];
    record[column] =
      value instanceof Date
        ? value.toISOString()
        : typeof value === 'number'
          ? value
          : ((value as string | null | undefined) ?? null);
  }
  return record;
}

/** One NDJSON line (a JSON object and a line feed). */
export function ndjsonLine(ledger: Ledger, row: LedgerRow): string {
  return `${JSON.stringify(exportRecord(ledger, row))}\n`;
}

// OWASP's CSV injection advice: a cell a spreadsheet would read as a formula starts with one of these;
// it is written after a single quote, so it is shown as text. (Tab and carriage return too.)
const FORMULA_START = /^[=+\-@\t\r]/;

/**
 * One CSV field by RFC 4180: quoted when it holds a comma, a quote, a line break or a leading or
 * trailing space, quotes doubled. Text that a spreadsheet would run as a formula gets a leading `'`
 * first. Numbers are written as they are; null is an empty field.
 */
export function csvField(value: ExportValue): string {
  if (value === null) return '';
  if (typeof value === 'number') return String(value);
  const text = FORMULA_START.test(value) ? `'${value}` : value;
  return /[",\r\n]|^\s|\s$/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

/** One CSV record, ended by CRLF as RFC 4180 says. */
export function csvRecord(values: readonly ExportValue[]): string {
  return `${values.map(csvField).join(',')}\r\n`;
}

export function csvHeader(ledger: Ledger): string {
  return csvRecord(EXPORT_COLUMNS[ledger]);
}

export function csvLine(ledger: Ledger, row: LedgerRow): string {
  const record = exportRecord(ledger, row);
  return csvRecord(EXPORT_COLUMNS[ledger].map((column) => record[column] ?? null));
}

/**
 * Why a replay leaves a matching row alone. Forwards: `acknowledged` (the EHR already accepted that
 * version or a later one: a replay would deliver it twice), `not-failed` (the forward is queued or
 * was withdrawn: the bridge is on it, or nothing is due), `same-forward` (an earlier row of the same
 * referral in the selection; the forward is replayed once, for its latest row). Webhooks:
 * `acknowledged` (the receiver already took that event), `subscription-disabled` (disabled or
 * deleted), `same-delivery` (another row of the same event and subscription).
 */
export const SKIP_REASONS = {
  forwards: ['acknowledged', 'not-failed', 'same-forward'],
  webhooks: ['acknowledged', 'subscription-disabled', 'same-delivery'],
} as const satisfies Record<Ledger, readonly string[]>;
export type SkipReason = (typeof SKIP_REASONS)[Ledger][number];

/** The words for each reason, on the ops page and the command line. */
export const SKIP_WORDS: Readonly<Record<SkipReason, string>> = {
  acknowledged: 'already acknowledged by the receiver, so not sent twice',
  'not-failed': 'the forward is not failed (it is queued, forwarded since, or withdrawn)',
  'same-forward': 'another attempt of the same forward in the selection is replayed instead',
  'subscription-disabled': 'the subscription is disabled or deleted',
  'same-delivery': 'another attempt of the same delivery in the selection is replayed instead',
};

/** One row of a dry run or a replay: the attempt, its referral and version, and what is done with it. */
export interface ReplayCandidate {
  readonly attemptId: string;
  readonly referralId: string | null;
  /** Forwards: the version the attempt sent. Webhook deliveries: the event's referral version. */
  readonly version: number | null;
  readonly lastOutcome: LedgerOutcome;
  /** Webhook deliveries: the event and the subscription, which the replay delivers again. */
  readonly eventId?: string;
  readonly subscriptionId?: string;
  /** Undefined: it is replayed. */
  readonly skip?: SkipReason;
}

/** What a dry run finds and a replay does. */
export interface ReplayPlan {
  readonly ledger: Ledger;
  readonly matched: number;
  readonly candidates: readonly ReplayCandidate[];
  /** How many of the matched rows are replayed, and how many are skipped for each reason. */
  readonly replay: number;
  readonly skipped: Readonly<Partial<Record<SkipReason, number>>>;
}

/** The counts of a plan's candidates. */
export function planOf(ledger: Ledger, candidates: readonly ReplayCandidate[]): ReplayPlan {
  const skipped: Partial<Record<SkipReason, number>> = {};
  let replay = 0;
  for (const c of candidates) {
    if (c.skip === undefined) replay += 1;
    else skipped[c.skip] = (skipped[c.skip] ?? 0) + 1;
  }
  return { ledger, matched: candidates.length, candidates, replay, skipped };
}

/** The most rows one replay takes: a wider one is refused, to be narrowed or split by time. */
export const REPLAY_MAX_ROWS = 10_000;
