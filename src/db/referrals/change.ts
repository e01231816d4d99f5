// What every change leaves behind besides itself: its timeline events (each also in the event feed,
// `referral_events`, with the event's sentence, which quotes no free text), the background work it
// makes due (outbox rows) and its audit row. They are written in one statement (data-modifying common
// table expressions), so a change costs one round trip for all of them rather than one for each;
// inside the change's transaction they commit or roll back with it.
//
// A write of the API (a command on a referral) is one statement, and so its own transaction: no BEGIN
// and COMMIT round trips, and no transaction held open while the process works (`writeReferralChange`).
// The referral's row (an INSERT, or an UPDATE that is a compare-and-set on its version), its other
// rows (notes, appointments), its timeline, feed, outbox and audit rows, the one-time links its answer
// hands out and the keyed write's stored response are its common table expressions. A compare-and-set
// that finds the row changed since it was read ends the statement with `refhub_abort` (migration
// 0010), which rolls all of it back.
//
// A change that must write its timeline rows its own way (an EHR forward attempt writes its event only
// from the statuses the lifecycle allows, in the statement that locks the referral) composes the same
// parts into its statement through `changeLogCtes`: the feed, the outbox and the audit row are written
// here and nowhere else.
import { sql, type Compilable, type RawBuilder } from 'kysely';
import type { FieldCipher } from '../../domain/data-keys.ts';
import type { DataKeys } from '../data-keys/data-keys.repository.ts';
import { auditInsert, type AuditEvent } from '../audit/audit.repository.ts';
import type { Executor } from '../executor.ts';
import {
  attachmentWrites,
  type CarriedAttachment,
  type NumberedAttachment,
} from '../attachments.repository.ts';
import { keyClaimInsert, type IdempotentWrite, type StoredKey } from '../idempotency.repository.ts';
import { linkTokenRows, type NewLinkToken } from '../links.repository.ts';
import { outboxRows, type NewOutboxMessage } from '../outbox.repository.ts';
import { EVENT_COLUMNS } from '../events.repository.ts';
import { providerSees } from '../provider-visibility.ts';
import {
  childWrites,
  timelineRows,
  type AppointmentRecord,
  type NewNote,
  type NewOutcome,
  type NewTimelineEvent,
} from './parts.ts';
import type { NewDraftNames, NewReferral, ReferralRecord } from './rows.ts';
import { rowWrite, type RowChange } from './writes.ts';

export interface ChangeRecord {
  readonly timeline: readonly NewTimelineEvent[];
  readonly outbox: readonly NewOutboxMessage[];
  readonly audit: AuditEvent;
}

/**
 * What the CTE `timeline` of a change's statement returns: what the feed copies from each row. Not
 * the sentence: the feed has its own (`FeedOf`).
 */
export const TIMELINE_RETURNING = [
  'seq',
  'id',
  'referral_id',
  'type',
  'system',
  'produced_at',
  'reason_code',
  'reason_display',
] as const;

/** The feed rows of a statement's CTE `timeline`. */
export interface FeedOf {
  /**
   * Where the feed reads each referral's version and parties: `referrals`, as the change's transaction
   * sees it after the change, or a CTE of the same statement that holds the referral's locked row.
   */
  readonly from: string;
  /**
   * The timeline events the CTE may write: each feed row takes its event's `eventDescription`, the
   * sentence without the free text the timeline's quotes (domain/timeline.ts).
   */
  readonly events: readonly NewTimelineEvent[];
}

/** What a change leaves behind besides its timeline rows, as `changeLogCtes` writes it. */
export interface LeftBehind {
  /** The feed rows; undefined when the statement writes no timeline rows (it has no CTE `timeline`). */
  readonly feed: FeedOf | undefined;
  readonly outbox: readonly NewOutboxMessage[];
  /** The audit row, or rows (written in this order). */
  readonly audit: AuditEvent | readonly [AuditEvent, ...AuditEvent[]];
  /**
   * A CTE of the statement that must have a row for the audit row to be written (see `auditInsert`);
   * for one audit row only.
   */
  readonly auditOnlyWith?: string;
}

/**
 * The feed rows of the timeline rows the statement writes in its CTE `timeline`. Each takes the
 * referral's version and parties as `referral` holds them: the provider only while the referral is
 * not a draft, so a provider never reads an event of a referral it may not see.
 */
function isAuditList(audit: LeftBehind['audit']): audit is readonly [AuditEvent, ...AuditEvent[]] {
  return Array.isArray(audit);
}

function feedInsert(feed: FeedOf): RawBuilder<unknown> {
  const columns = sql.join(EVENT_COLUMNS.map((column) => sql.ref(column)));
  const ids = feed.events.map((e) => e.id);
  const sentences = feed.events.map((e) => e.eventDescription);
  return sql`insert into referral_events (${columns})
    select t.id, t.referral_id, r.version, t.type, t.system, e.description, t.produced_at,
      r.sender_id_type, r.sender_id,
      case when ${providerSees('r')} then r.provider_id_type end,
      case when ${providerSees('r')} then r.provider_id end,
      t.reason_code, t.reason_display
    from timeline t
    join unnest(${ids}::uuid[], ${sentences}::text[]) as e (id, description) on e.id = t.id
    join ${sql.table(feed.from)} r on r.id = t.referral_id
    order by t.seq`;
}

/**
 * What a change leaves behind besides its timeline rows, as common table expressions of one statement
 * (`with …, <these> select …`): the feed rows of the statement's CTE `timeline` (which returns
 * TIMELINE_RETURNING), the outbox rows and the audit row.
 */
export function changeLogCtes(db: Executor, change: LeftBehind): RawBuilder<unknown>[] {
  const ctes: RawBuilder<unknown>[] = [];
  if (change.feed !== undefined) ctes.push(sql`feed as (${feedInsert(change.feed)})`);
  // An INSERT needs at least one row, so a part with none is left out of the statement.
  if (change.outbox.length > 0) {
    ctes.push(sql`outbox_rows as (${db.insertInto('outbox').values(outboxRows(change.outbox))})`);
  }
  const audit = change.audit;
  if (!isAuditList(audit)) {
    ctes.push(sql`audit as (${auditInsert(audit, change.auditOnlyWith)})`);
  } else if (change.auditOnlyWith === undefined) {
    ctes.push(sql`audit as (${auditInsert(audit)})`);
  } else {
    throw new Error('an audit row written only with another part of the statement must be alone');
  }
  return ctes;
}

/**
 * The columns the referral's own write returns: the feed reads each event's referral version and
 * parties from them.
 */
export const REFERRAL_WRITE_RETURNING = [
  'id',
  'version',
  'status',
  'sender_id_type',
  'sender_id',
  'provider_id_type',
  'provider_id',
] as const;

/** A command's write on one referral, for `writeReferralChange`. */
export interface ReferralWrite extends ChangeRecord {
  /**
   * The referral's own write, returning REFERRAL_WRITE_RETURNING: an INSERT, or an UPDATE that is a
   * compare-and-set and finds no row when the referral changed since it was read. It must have
   * `guard` among its conditions. Undefined when the referral does not change (a command that would
   * change nothing stores only its audit row, links and key).
   */
  readonly referral?: (guard: RawBuilder<boolean>) => Compilable;
  /** Writes to the referral's other tables (notes, appointments). */
  readonly children?: readonly Compilable[];
  /**
   * A redirect's successor, inserted by the same statement (returning REFERRAL_WRITE_RETURNING), with
   * the writes of its own other rows (the files it carries). Its timeline rows are among `timeline`.
   */
  readonly successor?: { readonly insert: Compilable; readonly children: readonly Compilable[] };
  /**
   * The timeline events that also go to the feed; all of `timeline` unless said (the steps copied
   * into a successor's timeline happened before, and were in the feed then).
   */
  readonly feedEvents?: readonly NewTimelineEvent[];
  /** The one-time links the answer hands out. */
  readonly links: readonly NewLinkToken[];
  /** A second audit row, for what the answer hands out besides the referral (a link upsert's link). */
  readonly alsoAudit?: AuditEvent;
  /** A keyed write's key, with the response it stores. */
  readonly key?: { readonly stored: StoredKey };
  /** Seals the timeline's sentences and a keyed write's stored response. */
  readonly cipher: FieldCipher;
}

/** Raised by `refhub_abort` (migration 0010): the statement rolled back on purpose. */
const ABORTED = 'RH409';

function pgCodeOf(error: unknown): unknown {
  return (error as { code?: unknown } | null)?.code;
}

/**
 * Runs `write` as one statement. Returns false, with nothing written, when the referral's
 * compare-and-set found it changed since it was read (the caller reads and decides again).
 *
 * A keyed write waits for a lock held by another request (the referral's row, or the same key being
 * claimed) at most `key.waitMs`: the statement's first step sets `lock_timeout` for its own
 * transaction, and both writes that can wait take `guard`, which reads that setting, so it is in force
 * before either of them waits. Past it, PostgreSQL raises LOCK_NOT_AVAILABLE. A key another request
 * stored first makes the claim fail on its primary key (UNIQUE_VIOLATION), which rolls the whole
 * statement back too.
 */
export async function writeReferralChange(db: Executor, write: ReferralWrite): Promise<boolean> {
  const ctes: RawBuilder<unknown>[] = [];
  let guard = sql<boolean>`true`;
  if (write.key !== undefined) {
    ctes.push(
      sql`settings as (select set_config('lock_timeout', ${`${write.key.stored.waitMs}ms`}, true) as lock_timeout)`,
    );
    guard = sql<boolean>`(select lock_timeout from settings) is not null`;
  }
  if (write.referral !== undefined) ctes.push(sql`referral as (${write.referral(guard)})`);
  const children = [...(write.children ?? [])];
  if (write.successor !== undefined) {
    if (write.referral === undefined) throw new Error('a successor needs the referral it carries on');
    ctes.push(sql`successor as (${write.successor.insert})`);
    // The feed reads both referrals' versions and parties.
    ctes.push(sql`written as (select * from referral union all select * from successor)`);
    children.push(...write.successor.children);
  }
  children.forEach((child, i) => ctes.push(sql`${sql.id(`child_${i}`)} as (${child})`));
  const timeline = write.timeline.length > 0;
  if (timeline) {
    if (write.referral === undefined) throw new Error('timeline events need the referral they belong to');
    ctes.push(
      sql`timeline as (${db
        .insertInto('timeline_events')
        .values(timelineRows(write.timeline, write.cipher))
        .returning([...TIMELINE_RETURNING])})`,
    );
  }
  ctes.push(
    ...changeLogCtes(db, {
      feed: timeline
        ? {
            from: write.successor === undefined ? 'referral' : 'written',
            events: write.feedEvents ?? write.timeline,
          }
        : undefined,
      outbox: write.outbox,
      audit: write.alsoAudit === undefined ? write.audit : [write.audit, write.alsoAudit],
    }),
  );
  if (write.links.length > 0) {
    ctes.push(sql`minted as (${db.insertInto('link_tokens').values(linkTokenRows(write.links))})`);
  }
  if (write.key !== undefined) {
    ctes.push(sql`claimed as (${keyClaimInsert(write.key.stored, write.cipher, guard)})`);
  }
  const last =
    write.referral === undefined
      ? sql`select 1`
      : sql`select refhub_abort('the referral changed since it was read') where not exists (select 1 from referral)`;
  try {
    await sql`with ${sql.join(ctes)} ${last}`.execute(db);
    return true;
  } catch (error) {
    if (pgCodeOf(error) === ABORTED) return false;
    throw error;
  }
}

/**
 * What a system action leaves behind (its timeline, with the feed, outbox and audit rows), written by
 * a statement of its own in the caller's transaction, after the action's own statements.
 */
export async function recordChange(db: Executor, keys: DataKeys, change: ChangeRecord): Promise<void> {
  const timeline =
    change.timeline.length === 0
      ? []
      : [
          sql`timeline as (${db
            .insertInto('timeline_events')
            .values(timelineRows(change.timeline, await keys.cipher(db)))
            .returning([...TIMELINE_RETURNING])})`,
        ];
  // The feed reads `referrals` as this transaction sees it: after the change, which an earlier
  // statement wrote.
  const leftBehind = changeLogCtes(db, {
    feed: timeline.length === 0 ? undefined : { from: 'referrals', events: change.timeline },
    outbox: change.outbox,
    audit: change.audit,
  });
  await sql`with ${sql.join([...timeline, ...leftBehind])} select 1`.execute(db);
}

/** A change to one of the referral's other rows, written with its compare-and-set. */
export type PartChange =
  | { readonly kind: 'cancel-scheduled-appointments'; readonly now: Date }
  | {
      readonly kind: 'upsert-appointment';
      readonly appointment: Omit<AppointmentRecord, 'updatedAt'>;
      readonly now: Date;
    }
  | { readonly kind: 'add-outcome'; readonly outcome: NewOutcome }
  | { readonly kind: 'acknowledge-outcome'; readonly byName: string | null; readonly now: Date }
  | { readonly kind: 'add-note'; readonly note: NewNote }
  | { readonly kind: 'add-attachment'; readonly attachment: NumberedAttachment; readonly content: Uint8Array }
  | { readonly kind: 'remove-attachment'; readonly attachmentId: string };

/** The statements of `part` of the referral `referralId`, sealed with `cipher`. */
function partWrites(db: Executor, cipher: FieldCipher, referralId: string, part: PartChange): Compilable[] {
  switch (part.kind) {
    case 'cancel-scheduled-appointments':
      return [childWrites.cancelScheduled(db, referralId, part.now)];
    case 'upsert-appointment':
      return [childWrites.upsertAppointment(db, cipher, referralId, part.appointment, part.now)];
    case 'add-outcome':
      return [childWrites.insertOutcome(db, cipher, part.outcome)];
    case 'acknowledge-outcome':
      return [childWrites.acknowledgeOutcome(db, referralId, part.byName, part.now)];
    case 'add-note':
      return [childWrites.insertNote(db, cipher, part.note)];
    case 'add-attachment':
      return attachmentWrites.insert(db, cipher, part.attachment, part.content);
    case 'remove-attachment':
      return [attachmentWrites.remove(db, referralId, part.attachmentId)];
  }
}

/**
 * A redirect's successor, written in the statement of its predecessor's change (the referral's
 * `update`): its row, the files it carries, its own timeline events (in the feed), the predecessor's
 * steps copied into its timeline (not in the feed: they were there when they happened) and its outbox
 * rows. The change's own `timeline` and `outbox` are the predecessor's.
 */
export interface SuccessorChange {
  readonly referral: NewReferral & { readonly redirectedFrom: string };
  readonly names: NewDraftNames;
  readonly attachments: readonly CarriedAttachment[];
  readonly history: readonly NewTimelineEvent[];
  readonly timeline: readonly NewTimelineEvent[];
  readonly outbox: readonly NewOutboxMessage[];
}

/** A command's change of one referral, as the referral store writes it: one statement. */
export interface ReferralChange extends ChangeRecord {
  /** The referral's own row; undefined for a command that changes nothing (it stores its audit row, links and key). */
  readonly referral?: RowChange;
  readonly parts?: readonly PartChange[];
  /** A redirect's successor; only with the referral's compare-and-set (`update`). */
  readonly successor?: SuccessorChange;
}

/** What a write answers, and what the answer hands out that the write's statement must store. */
export interface Answer<T> {
  readonly result: T;
  /** The one-time links the answer hands out, stored by the statement. */
  readonly links: readonly NewLinkToken[];
  /** The audit row of what the answer hands out besides the referral, if anything (a link upsert's link). */
  readonly audit?: AuditEvent;
}

/** A change not yet written: the referral as it will be, and the write that makes it so. */
export interface PendingChange {
  /** The referral after the change (as before it, for a delete); undefined when the row does not change. */
  readonly after: ReferralRecord | undefined;
  /**
   * Writes the change with `answer`, in one statement, with the caller's key (`keyed`) and the answer
   * stored under it, sealed. False, with nothing written, when the referral's compare-and-set lost to
   * another write (then the caller reads and decides again). A keyed write is exactly-once: its key
   * and stored response are rows of the same statement, so a crash leaves both or neither.
   */
  write<T>(answer: Answer<T>, keyed?: IdempotentWrite): Promise<boolean>;
}

/** `change` of the store `db`, to be written (see PendingChange). */
export function pendingChange(db: Executor, keys: DataKeys, change: ReferralChange): PendingChange {
  const row =
    change.referral === undefined ? undefined : rowWrite(db, change.referral, REFERRAL_WRITE_RETURNING);
  const referralId =
    change.referral === undefined
      ? undefined
      : change.referral.kind === 'insert'
        ? change.referral.referral.id
        : change.referral.before.record.id;
  return {
    after: row?.after,
    async write(answer, keyed) {
      const cipher = await keys.cipher(db);
      if (change.parts !== undefined && change.parts.length > 0 && referralId === undefined) {
        throw new Error('a change of a referral’s parts needs the referral’s compare-and-set');
      }
      const successor = change.successor;
      if (successor !== undefined && change.referral?.kind !== 'update') {
        throw new Error('a successor is written with its predecessor’s compare-and-set');
      }
      let won: boolean;
      try {
        won = await writeReferralChange(db, {
          ...(row === undefined ? {} : { referral: (guard) => row.query(cipher, guard) }),
          children: (change.parts ?? []).flatMap((part) => partWrites(db, cipher, referralId ?? '', part)),
          ...(successor === undefined
            ? { timeline: change.timeline }
            : {
                successor: {
                  insert: rowWrite(
                    db,
                    { kind: 'insert', referral: successor.referral, names: successor.names },
                    REFERRAL_WRITE_RETURNING,
                  ).query(cipher, sql<boolean>`true`),
                  children:
                    successor.attachments.length === 0
                      ? []
                      : [
                          attachmentWrites.carry(
                            db,
                            cipher,
                            successor.referral.redirectedFrom,
                            successor.referral.id,
                            successor.attachments,
                          ),
                        ],
                },
                // The predecessor's steps, then the successor's steps copied from them, then its own.
                timeline: [...change.timeline, ...successor.history, ...successor.timeline],
                feedEvents: [...change.timeline, ...successor.timeline],
              }),
          outbox: [...change.outbox, ...(successor?.outbox ?? [])],
          audit: change.audit,
          cipher,
          links: answer.links,
          ...(answer.audit === undefined ? {} : { alsoAudit: answer.audit }),
          ...(keyed === undefined ? {} : { key: { stored: keyed.storedKey(answer.result, answer.links) } }),
        });
      } catch (error) {
        throw keyed?.refusal(error) ?? error;
      }
      if (won) keyed?.committed();
      return won;
    },
  };
}
