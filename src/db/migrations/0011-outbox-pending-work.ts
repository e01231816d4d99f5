// The outbox holds only work still to be done. The relay used to mark a dispatched row processed and
// keep it, and its index of pending rows, `outbox_pending (available_at, id)`, kept an entry for every
// version of every row ever written until VACUUM removed it (each claim and each mark wrote a version).
// The relay's claim read all of those entries and sorted what was due by ID, and the reconciler, which
// asks for each referral awaiting acceptance whether it has a row still to dispatch, read them all
// once per referral: the claim grew with the work done, the reconciler with its square.
//
// Now the relay deletes a row once it is dispatched (db/outbox.repository.ts), and:
// - `outbox_referral (referral_id)` serves the lookups by referral (the reconciler, `pendingFor`).
// - `outbox_due (id)` serves the claim in the order it takes rows: it reads from the oldest and stops
//   at the batch's size. No index holds `available_at`, so the lease a claim writes is a HOT update,
//   with no new index entries at all.
// - `refhub_claim_outbox` is the claim, planned as a walk of `outbox_due`. A plain index scan marks
//   the entries of deleted rows as it passes them, so the next claim skips them, and PostgreSQL drops
//   marked entries when their page fills. Without statistics of the outbox (a new database, or one
//   that is never analysed), the planner prefers a bitmap scan of a whole partial index and a sort,
//   which reads and never marks every entry a deleted row left behind; so the function plans without
//   bitmap and sequential scans. It takes the batch's IDs once, as an array: as `id IN (subquery)`,
//   statistics of a nearly empty outbox (after VACUUM) let the planner run the subquery again for
//   each row it updates.
// The indexes keep `processed_at IS NULL`, so a row an older refhub marks processed during a rolling
// restart is left out, as before. Rows processed before this migration are deleted here.
// PL/pgSQL, as in 0009: the same on PostgreSQL and PGlite.
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    DELETE FROM outbox WHERE processed_at IS NOT NULL;
    DROP INDEX outbox_pending;
    CREATE INDEX outbox_due ON outbox (id) WHERE processed_at IS NULL;
    CREATE INDEX outbox_referral ON outbox (referral_id) WHERE processed_at IS NULL;
    CREATE FUNCTION refhub_claim_outbox(batch integer, due timestamptz, lease_until timestamptz)
      RETURNS SETOF outbox LANGUAGE plpgsql
      SET enable_bitmapscan = off SET enable_seqscan = off
    AS $$
    BEGIN
      RETURN QUERY
        UPDATE outbox SET available_at = lease_until, attempts = attempts + 1
        WHERE id = ANY (ARRAY(SELECT o.id FROM outbox o
                              WHERE o.processed_at IS NULL AND o.available_at <= due
                              ORDER BY o.id LIMIT batch FOR UPDATE SKIP LOCKED))
        RETURNING *;
    END $$;
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    DROP FUNCTION refhub_claim_outbox(integer, timestamptz, timestamptz);
    DROP INDEX outbox_referral;
    DROP INDEX outbox_due;
    CREATE INDEX outbox_pending ON outbox (available_at, id) WHERE processed_at IS NULL;
  `.execute(db);
}
