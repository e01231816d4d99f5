// The forward backlog (0021) is ranked by the relay for every batch of forwards it queues, and each
// forward leaves it as a worker starts it, so a busy clinic's rows are deleted as fast as they are
// added. Its statements were planned by statistics gathered while it was empty (a new database, or
// PGlite, which has no autovacuum, or any between two of autovacuum's runs): the rank counted the
// clinic's entries with a bitmap scan of `forward_backlog_added`, and the forget found each started
// forward with a sequential scan of the table. Neither marks the entries of deleted rows, so both read
// every row deleted within the order's horizon (an hour) again each time: the relay's rank and each
// job's start cost more with every forward of the hour before, and a third burst of 2,000 submits on
// one database was forwarded markedly slower than the first.
//
// `refhub_rank_forwards` is the same statement, planned without bitmap and sequential scans whatever
// the statistics say: plain index scans, which mark the entries of deleted rows as they pass them, so
// later scans skip them (PostgreSQL drops marked entries when their page fills; VACUUM removes the
// rest). `refhub_forget_forwards` deletes each started forward by its whole primary key, one lookup
// each: a join of the batch with the table was planned as a walk of the clinic's whole backlog for
// every forward started, which a backlog of thousands after an outage made the cost of each start.
// PL/pgSQL, as in 0011: the same on PostgreSQL and PGlite.
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE FUNCTION refhub_rank_forwards(
      institutions text[], entry_institutions text[], job_ids text[], added timestamptz, since timestamptz
    ) RETURNS TABLE (waiting json, added_entries json) LANGUAGE plpgsql
      SET enable_bitmapscan = off SET enable_seqscan = off
    AS $$
    BEGIN
      RETURN QUERY
        WITH gone AS (
          DELETE FROM forward_backlog b
          WHERE b.institution = ANY (institutions) AND b.added_at < since
        ), fresh AS (
          INSERT INTO forward_backlog (institution, job_id, added_at)
          SELECT t.i, t.j, added
          FROM unnest(entry_institutions, job_ids) AS t(i, j)
          ON CONFLICT (institution, job_id) DO NOTHING
          RETURNING forward_backlog.institution || ' ' || forward_backlog.job_id AS entry
        )
        SELECT
          (SELECT coalesce(json_object_agg(c.institution, c.n), '{}')
             FROM (SELECT b.institution, count(*) AS n FROM forward_backlog b
                   WHERE b.institution = ANY (institutions) AND b.added_at >= since
                   GROUP BY b.institution) c),
          (SELECT coalesce(json_agg(fresh.entry), '[]') FROM fresh);
    END $$;
    CREATE FUNCTION refhub_forget_forwards(entry_institutions text[], job_ids text[])
      RETURNS void LANGUAGE plpgsql
      SET enable_bitmapscan = off SET enable_seqscan = off
    AS $$
    BEGIN
      FOR k IN 1 .. coalesce(array_length(job_ids, 1), 0) LOOP
        DELETE FROM forward_backlog WHERE institution = entry_institutions[k] AND job_id = job_ids[k];
      END LOOP;
    END $$;
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    DROP FUNCTION refhub_forget_forwards(text[], text[]);
    DROP FUNCTION refhub_rank_forwards(text[], text[], text[], timestamptz, timestamptz);
  `.execute(db);
}
