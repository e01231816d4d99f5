// Seeding at scale: a referral written once the way the API writes it (a template), then copied in
// SQL, `count` times in one INSERT … SELECT over generate_series per table, so that a million
// referrals take minutes instead of the hours a million API calls would.
//
// Every column of the template is copied as it is, but for those that tell referrals apart: the IDs
// (UUIDv7, time-ordered, made from the copy's time and number), the patient's UIN and name, and the
// times (the copy's own, one second apart going back from `newest`). The columns are read from the
// database's catalog, so a column that a migration adds is copied too. The template's timeline events,
// the audit rows of its writes (not of reads since its last change, which a scenario may have made by
// the thousand) are copied with it, pointing at the copy, and, when asked, each copy's outbox rows are
// written as a submit writes them. Link tokens are not: they are what a read hands out, not part of
// the referral.
//
// The copies hold their patient data (a column each) and their timeline's sentences in the clear, as
// rows written before field encryption do (and without the blind index of the UIN): a sealed value
// opens only in the row it was sealed for, and sealing a million rows one by one in this process would
// take the time the SQL copy saves. refhub reads such rows as it reads data written before encryption
// was turned on; the scenarios that measure a read's cost (api.ts) read drafts seeded sealed, as the
// API writes them. test/system/bench/bulk-seed.int.test.ts checks that a copy reads and behaves like
// an API-made referral.
import { sql, type Kysely, type RawBuilder } from 'kysely';
import type { Database } from '../src/db/schema.ts';
import { openColumns, SEALED_COLUMNS } from '../src/db/data-keys/data-keys.repository.ts';
import type { FieldCipher } from '../src/domain/data-keys.ts';
import { OUTBOX_TOPICS } from '../src/domain/lifecycle.ts';

export interface CloneBatch {
  /** The referral to copy. */
  readonly templateId: string;
  readonly count: number;
  /** The number of the first copy; batches of one template with different numbers do not collide. */
  readonly firstNumber: number;
  /** The newest copy's time; copy n is n seconds older than `newest` (numbers count from 0). */
  readonly newest: Date;
  /** Distinguishes the IDs of copies of different templates (0–4095). */
  readonly salt: number;
  /** Give each copy the outbox rows a submit writes (its forward and reminders), due now. */
  readonly withOutbox?: boolean;
  /**
   * When set, the batch's copies are this many milliseconds apart, counted from `newest` by their place
   * in the batch rather than by their number: a batch of recent arrivals (a backlog of submits).
   */
  readonly spacingMs?: number;
}

/** The columns of `table`, in order, without identity or serial ones (`seq`, the outbox's `id`). */
async function columnsOf(db: Kysely<Database>, table: string): Promise<string[]> {
  const { rows } = await sql<{ column_name: string; column_default: string | null; is_identity: string }>`
    SELECT column_name, column_default, is_identity FROM information_schema.columns
    WHERE table_schema = current_schema() AND table_name = ${table}
    ORDER BY ordinal_position`.execute(db);
  return rows
    .filter((r) => r.is_identity !== 'YES' && !(r.column_default ?? '').startsWith('nextval('))
    .map((r) => r.column_name);
}

/**
 * A UUIDv7 in SQL: its time is `atMs` (milliseconds), and its random bits hold the salt, the kind of
 * row (0–3) and `number`, so that every ID is unique and IDs sort by time, as the API's do.
 */
export function uuidv7Sql(
  atMs: RawBuilder<unknown>,
  salt: number,
  kind: number,
  number: RawBuilder<unknown>,
): RawBuilder<string> {
  const variant = (8 + (kind % 4)).toString(16);
  const saltHex = (salt % 4096).toString(16).padStart(3, '0');
  return sql<string>`(lpad(to_hex(${atMs}), 12, '0') || '7' || ${sql.lit(saltHex)} || ${sql.lit(variant)}
    || lpad(to_hex(${number}), 15, '0'))::uuid`;
}

function copyOf(
  columns: readonly string[],
  replace: Readonly<Record<string, RawBuilder<unknown>>>,
): { names: RawBuilder<unknown>; values: RawBuilder<unknown> } {
  return {
    names: sql.join(columns.map((c) => sql.ref(c))),
    values: sql.join(columns.map((c) => replace[c] ?? sql.ref(`t.${c}`))),
  };
}

/** Copies the template `batch.count` times with its timeline, audit and (optionally) outbox rows. */
export async function cloneReferral(
  db: Kysely<Database>,
  cipher: FieldCipher,
  batch: CloneBatch,
): Promise<void> {
  if (batch.count <= 0) return;
  const from = batch.firstNumber;
  const to = batch.firstNumber + batch.count - 1;
  const newestMs = batch.newest.getTime();
  // Copy g: its time, its referral's ID; each of its rows of another table has the number g * 8 + k,
  // k the row's rank among the template's rows of that table (a referral has a handful).
  const atMs = (g: RawBuilder<unknown>) =>
    batch.spacingMs === undefined
      ? sql`(${sql.lit(newestMs)}::bigint - ${g} * 1000)`
      : sql`(${sql.lit(newestMs)}::bigint - (${g} - ${sql.lit(from)}) * ${sql.lit(batch.spacingMs)})`;
  const at = (g: RawBuilder<unknown>) => sql`to_timestamp((${atMs(g)})::double precision / 1000)`;
  const g = sql`g`;
  const referralId = uuidv7Sql(atMs(g), batch.salt, 0, g);
  const rowNumber = sql`(g * 8 + t.k)`;
  const series = sql`generate_series(${sql.lit(from)}::bigint, ${sql.lit(to)}::bigint) AS g`;
  await db.transaction().execute(async (trx) => {
    const template = openColumns(
      'referrals',
      await trx
        .selectFrom('referrals')
        .select(['id', ...SEALED_COLUMNS.referrals.columns, SEALED_COLUMNS.referrals.together])
        .where('id', '=', batch.templateId)
        .executeTakeFirstOrThrow(),
      cipher,
    );
    const referral = copyOf(await columnsOf(trx, 'referrals'), {
      ...Object.fromEntries(SEALED_COLUMNS.referrals.columns.map((c) => [c, sql`${template[c]}::text`])),
      [SEALED_COLUMNS.referrals.together]: sql`NULL`,
      patient_uin_index: sql`NULL`,
      id: referralId,
      patient_uin: sql`'S' || lpad((1000000 + g % 9000000)::text, 7, '0') || 'D'`,
      patient_name: sql`'Tan Ah Kow ' || g`,
      created_at: at(g),
      updated_at: sql`${at(g)} + (t.updated_at - t.created_at)`,
      submitted_at: sql`${at(g)} + (t.submitted_at - t.created_at)`,
    });
    await sql`INSERT INTO referrals (${referral.names})
      SELECT ${referral.values} FROM referrals t, ${series} WHERE t.id = ${batch.templateId}`.execute(trx);

    // The template's sentences in the clear, in its order: a copy's own rows hold them as a refhub
    // before the timeline was sealed wrote them.
    const sentences = (
      await trx
        .selectFrom('timeline_events')
        .select(['id', 'description'])
        .where('referral_id', '=', batch.templateId)
        .orderBy('seq')
        .execute()
    ).map((row) => openColumns('timeline_events', row, cipher).description);
    const timeline = copyOf(await columnsOf(trx, 'timeline_events'), {
      id: uuidv7Sql(atMs(g), batch.salt, 1, rowNumber),
      referral_id: referralId,
      description: sql`(${sentences}::text[])[t.k + 1]`,
      produced_at: sql`${at(g)} + (t.produced_at - r.created_at)`,
    });
    // One template referral may have several events; each copy's IDs differ by the event's rank.
    await sql`INSERT INTO timeline_events (${timeline.names})
      SELECT ${timeline.values}
      FROM (SELECT *, row_number() OVER (ORDER BY seq) - 1 AS k FROM timeline_events
            WHERE referral_id = ${batch.templateId}) t
      JOIN referrals r ON r.id = t.referral_id, ${series}
      ORDER BY g, t.k`.execute(trx);

    const audit = copyOf(await columnsOf(trx, 'audit_events'), {
      id: uuidv7Sql(atMs(g), batch.salt, 2, rowNumber),
      request_id: uuidv7Sql(atMs(g), batch.salt, 3, rowNumber),
      occurred_at: sql`${at(g)} + (t.occurred_at - r.created_at)`,
      referral_ids: sql`ARRAY[${referralId}]`,
    });
    await sql`INSERT INTO audit_events (${audit.names})
      SELECT ${audit.values}
      FROM (SELECT *, row_number() OVER (ORDER BY seq) - 1 AS k FROM audit_events
            WHERE ${batch.templateId} = ANY (referral_ids) AND cardinality(referral_ids) = 1
              AND occurred_at <= (SELECT updated_at FROM referrals WHERE id = ${batch.templateId})) t
      JOIN referrals r ON r.id = ${batch.templateId}, ${series}
      ORDER BY g, t.k`.execute(trx);

    if (batch.withOutbox === true) {
      // The copy's outbox rows, due now, as a submit from draft writes them (domain/lifecycle.ts,
      // `outboxTopics`): its forward, and its reminders. The template's own rows are no help: the
      // relay deletes a row once its work is queued, so a submitted template has none left.
      const topics = [OUTBOX_TOPICS.forward, OUTBOX_TOPICS.reminders];
      await sql`INSERT INTO outbox (topic, referral_id, version, request_id, created_at, available_at,
                                    last_error, processed_at)
        SELECT o.topic, ${referralId}, t.version,
               ${uuidv7Sql(atMs(g), batch.salt, 3, sql`(g * 8 + 6 + o.k)`)}, now(), now(), NULL, NULL
        FROM referrals t, ${series},
             unnest(${topics}::text[]) WITH ORDINALITY AS o(topic, k)
        WHERE t.id = ${batch.templateId} ORDER BY g, o.k`.execute(trx);
    }
  });
}
