// Searching and replaying the ledgers (the capability `ledger-search`): an operator's search of the
// forwards' ledger or the webhook deliveries by a time range and what else the filter names, a page at
// a time or streamed whole as NDJSON or CSV; a dry run of a replay by the same filter; and the replay.
// The ops pages (api/admin/ledger-search.ts) and `refhub ledger` (cli/ledger-search.command.ts) both
// come through here.
//
// A replay is a new attempt linked to the one it repeats (`replay_of`), never a second delivery of
// what the receiver acknowledged. A forward is queued again through the outbox, as an operator's retry
// is, with the repeated attempt left on the referral for the worker's attempts to name; a webhook
// delivery is queued again on the webhooks queue, with the repeated attempt in its job. What a replay
// did is audited (who, the referrals) and recorded (the filter and the counts), under one request ID.
import { v7 as uuidv7 } from 'uuid';
import { auditEventOf, type AuditActor } from '../domain/audit.ts';
import type { Clock } from '../domain/clock.ts';
import {
  csvHeader,
  csvLine,
  decodeCursor,
  encodeCursor,
  filterFields,
  ndjsonLine,
  parseLedgerFilter,
  planOf,
  REPLAY_MAX_ROWS,
  type ExportFormat,
  type ForwardLedgerRow,
  type FilterInput,
  type Ledger,
  type LedgerFilter,
  type LedgerRow,
  type ReplayCandidate,
  type ReplayPlan,
  type SkipReason,
} from '../domain/ledger-search.ts';
import { LimitExceededError, ValidationError } from '../errors.ts';
import type { Stores } from '../db/stores.ts';
import type { QueueProducer } from '../queue/producer.ts';
import { institutionKey } from '../queue/registry.ts';

export interface LedgerSearchDeps {
  readonly stores: Pick<Stores, 'ledgerSearch' | 'referrals' | 'audit' | 'transaction'>;
  readonly clock: Clock;
  readonly queues: Pick<QueueProducer, 'enqueueWebhooks'>;
}

/** Who runs a replay: an ops key on the ops pages (with the user name typed), or the command line. */
export interface LedgerOperator {
  readonly requestId: string;
  readonly apiKeyId: string | null;
  readonly system: string | null;
  readonly requester: string | null;
}

/** A page of a search, and the cursor of the next page when there may be one. */
export interface LedgerPage {
  readonly rows: readonly LedgerRow[];
  readonly next: string | undefined;
}

/** The largest page a search returns. */
export const LEDGER_PAGE_MAX = 500;

/** Rows read per statement when a search is streamed or a replay reads its rows. */
const BATCH = 500;

/** The filter of what was typed; a ValidationError naming each bad field otherwise. */
export function checkedLedgerFilter(input: FilterInput): LedgerFilter {
  const parsed = parseLedgerFilter(input);
  if ('problems' in parsed) {
    throw new ValidationError(parsed.problems.map((p) => ({ path: p.field, message: p.message })));
  }
  return parsed.filter;
}

/** The cursor of `after`; a ValidationError naming `after` when it is not one a page gave. */
export function checkedCursor(after: string | undefined) {
  if (after === undefined || after === '') return undefined;
  const cursor = decodeCursor(after);
  if (cursor === undefined) {
    throw new ValidationError([{ path: 'after', message: 'is not the cursor of a page of this search' }]);
  }
  return cursor;
}

export function createLedgerSearch(deps: LedgerSearchDeps) {
  const search = deps.stores.ledgerSearch;

  async function pageOf(
    ledger: Ledger,
    filter: LedgerFilter,
    cursor = checkedCursor(undefined),
    limit = BATCH,
  ) {
    return ledger === 'forwards'
      ? search.forwards(filter, cursor, limit)
      : search.webhooks(filter, cursor, limit);
  }

  /** Every row of the search, oldest first, a statement of BATCH rows at a time. */
  async function* rows(ledger: Ledger, filter: LedgerFilter): AsyncGenerator<LedgerRow> {
    let cursor = checkedCursor(undefined);
    for (;;) {
      const batch = await pageOf(ledger, filter, cursor, BATCH);
      yield* batch;
      const last = batch.at(-1);
      if (last === undefined || batch.length < BATCH) return;
      cursor = last.cursor;
    }
  }

  /** The rows a replay considers, refused beyond REPLAY_MAX_ROWS. */
  async function replayRows(ledger: Ledger, filter: LedgerFilter) {
    const found: LedgerRow[] = [];
    for await (const row of rows(ledger, filter)) {
      if (found.length >= REPLAY_MAX_ROWS) {
        throw new LimitExceededError(
          `A replay takes at most ${REPLAY_MAX_ROWS} rows; this filter matches more. Narrow the time range or the filter.`,
        );
      }
      found.push(row);
    }
    return found;
  }

  /** What a replay by `filter` would do, decided on the state as it is now. */
  async function plan(ledger: Ledger, filter: LedgerFilter): Promise<ReplayPlan> {
    const found = await replayRows(ledger, filter);
    if (ledger === 'forwards') {
      const forwards = found as ForwardLedgerRow[];
      const states = new Map(
        (await search.forwardStates(forwards.map((r) => r.referralId))).map((s) => [s.referralId, s]),
      );
      // A forward is replayed once, for its latest row in the selection.
      const latest = new Map(forwards.map((r) => [r.referralId, r.id]));
      return planOf(
        ledger,
        forwards.map((r): ReplayCandidate => {
          const state = states.get(r.referralId);
          const acknowledged =
            state?.forwardedVersion !== undefined &&
            state.forwardedVersion !== null &&
            state.forwardedVersion >= r.version;
          const skip: SkipReason | undefined = acknowledged
            ? 'acknowledged'
            : latest.get(r.referralId) !== r.id
              ? 'same-forward'
              : state === undefined || state.deleted || state.state !== 'failed'
                ? 'not-failed'
                : undefined;
          return {
            attemptId: r.id,
            referralId: r.referralId,
            version: r.version,
            lastOutcome: r.outcome,
            ...(skip === undefined ? {} : { skip }),
          };
        }),
      );
    }
    const deliveries = found as Awaited<ReturnType<typeof search.webhooks>>;
    const states = await search.deliveryStates(deliveries);
    const stateOf = new Map(states.map((s) => [`${s.eventId}.${s.subscriptionId}`, s]));
    const latest = new Map(deliveries.map((r) => [`${r.eventId}.${r.subscriptionId}`, r.id]));
    return planOf(
      ledger,
      deliveries.map((r): ReplayCandidate => {
        const key = `${r.eventId}.${r.subscriptionId}`;
        const state = stateOf.get(key);
        const skip: SkipReason | undefined =
          state?.acknowledged === true
            ? 'acknowledged'
            : latest.get(key) !== r.id
              ? 'same-delivery'
              : state?.enabled !== true
                ? 'subscription-disabled'
                : undefined;
        return {
          attemptId: r.id,
          referralId: r.referralId,
          version: r.referralVersion,
          lastOutcome: r.outcome,
          eventId: r.eventId,
          subscriptionId: r.subscriptionId,
          ...(skip === undefined ? {} : { skip }),
        };
      }),
    );
  }

  function actorOf(operator: LedgerOperator): AuditActor {
    return {
      requestId: operator.requestId,
      apiKeyId: operator.apiKeyId,
      system: operator.system,
      institution: null,
      requesterIdentifier: operator.requester,
    };
  }

  /** Queues the plan's forwards again, a batch per transaction; returns how many were queued. */
  async function replayForwards(
    chosen: readonly ReplayCandidate[],
    operator: LedgerOperator,
    onProgress: (done: number) => void,
  ): Promise<number> {
    let queued = 0;
    for (let start = 0; start < chosen.length; start += BATCH) {
      const batch = chosen.slice(start, start + BATCH);
      queued += await deps.stores.transaction(async (tx) => {
        const requeued = await tx.ledgerSearch.requeueReplayed(
          batch.map((c) => ({
            referralId: c.referralId ?? '',
            attemptId: c.attemptId,
            version: c.version ?? 0,
          })),
        );
        if (requeued.length === 0) return 0;
        const now = deps.clock.now();
        await tx.referrals.recordChange({
          timeline: [],
          outbox: requeued.map((r) => ({
            topic: 'ehr-forward-again',
            referralId: r.id,
            version: r.version,
            requestId: operator.requestId,
            at: now,
          })),
          audit: auditEventOf(
            actorOf(operator),
            'ehr.forward.replay',
            requeued.map((r) => r.id),
            now,
          ),
        });
        return requeued.length;
      });
      onProgress(start + batch.length);
    }
    return queued;
  }

  /** Queues the plan's webhook deliveries again; returns how many were queued. */
  async function replayWebhooks(
    chosen: readonly ReplayCandidate[],
    institutions: ReadonlyMap<string, string>,
    onProgress: (done: number) => void,
  ): Promise<number> {
    const replay = uuidv7();
    for (let start = 0; start < chosen.length; start += BATCH) {
      const batch = chosen.slice(start, start + BATCH);
      await deps.queues.enqueueWebhooks(
        batch.map((c) => {
          const institution = institutions.get(c.subscriptionId ?? '');
          return {
            eventId: c.eventId ?? '',
            subscriptionId: c.subscriptionId ?? '',
            ...(institution === undefined ? {} : { institution }),
            replayOf: c.attemptId,
          };
        }),
        replay,
      );
      onProgress(start + batch.length);
    }
    return chosen.length;
  }

  return {
    /** A page of the search, after the cursor `after` (from a previous page's `next`). */
    async page(
      ledger: Ledger,
      filter: LedgerFilter,
      after: string | undefined,
      limit: number,
    ): Promise<LedgerPage> {
      const found = await pageOf(
        ledger,
        filter,
        checkedCursor(after),
        Math.min(Math.max(limit, 1), LEDGER_PAGE_MAX),
      );
      const last = found.at(-1);
      return {
        rows: found,
        next: last === undefined || found.length < limit ? undefined : encodeCursor(last.cursor),
      };
    },

    rows,

    /** The search as lines of NDJSON or CSV (a header first), streamed a batch at a time. */
    async *exportLines(ledger: Ledger, filter: LedgerFilter, format: ExportFormat): AsyncGenerator<string> {
      if (format === 'csv') yield csvHeader(ledger);
      for await (const row of rows(ledger, filter)) {
        yield format === 'csv' ? csvLine(ledger, row) : ndjsonLine(ledger, row);
      }
    },

    /** A dry run: what a replay by `filter` would replay and skip. Changes nothing. */
    dryRun: plan,

    /**
     * The replay: decides as the dry run does, on the state as it is now, then queues what is to be
     * replayed. A forward that recovered between the two is left alone and counted as `not-failed`.
     * `onProgress` hears after each batch. Returns the plan with the counts of what was done.
     */
    async replay(
      ledger: Ledger,
      filter: LedgerFilter,
      operator: LedgerOperator,
      onProgress?: (done: number, total: number) => void,
    ): Promise<ReplayPlan> {
      const planned = await plan(ledger, filter);
      const chosen = planned.candidates.filter((c) => c.skip === undefined);
      const progress = (done: number) => onProgress?.(done, chosen.length);
      let replayed: number;
      if (ledger === 'forwards') {
        replayed = await replayForwards(chosen, operator, progress);
      } else {
        const states = await search.deliveryStates(
          chosen.map((c) => ({ eventId: c.eventId ?? '', subscriptionId: c.subscriptionId ?? '' })),
        );
        const institutions = new Map(
          states.flatMap((s) =>
            s.institution === null ? [] : [[s.subscriptionId, institutionKey(s.institution)]],
          ),
        );
        replayed = await replayWebhooks(chosen, institutions, progress);
      }
      const skipped: Partial<Record<SkipReason, number>> = { ...planned.skipped };
      if (replayed < chosen.length) {
        skipped['not-failed'] = (skipped['not-failed'] ?? 0) + chosen.length - replayed;
      }
      const now = deps.clock.now();
      const referralIds = [...new Set(chosen.flatMap((c) => (c.referralId === null ? [] : [c.referralId])))];
      await deps.stores.transaction(async (tx) => {
        await tx.ledgerSearch.recordReplay({
          id: uuidv7(),
          requestId: operator.requestId,
          ledger,
          requestedAt: now,
          apiKeyId: operator.apiKeyId,
          requester: operator.requester,
          filter: filterFields(filter),
          matched: planned.matched,
          replayed,
          skipped,
        });
        await tx.audit.record(auditEventOf(actorOf(operator), `ledger.replay.${ledger}`, referralIds, now));
      });
      return { ...planned, replay: replayed, skipped };
    },
  };
}

export type LedgerSearch = ReturnType<typeof createLedgerSearch>;
