// Rate limits per client (domain/rate-limits.ts). A client's own limit, set by the operator
// (`refhub keys limit`, `refhub clients limit`), is two columns of its credential's row, read with
// the row as every request authenticates; null is the installation's default (RATE_LIMIT_PER_SECOND,
// RATE_LIMIT_BURST). Where the queues are in the database, each client's bucket is one row of
// `rate_limit_buckets`, its theoretical arrival time in epoch milliseconds, changed by one UPSERT
// per request. The table is UNLOGGED: it writes no WAL, so a request's UPSERT costs no flush, and
// after a crash or a failover it is empty, which leaves every bucket full (the limit is a guard,
// not a record). A fillfactor below 100 leaves room in each page for the row's next version, so the
// update stays in its page and touches no index (a HOT update).
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    ALTER TABLE api_keys
      ADD COLUMN rate_limit_per_second double precision,
      ADD COLUMN rate_limit_burst integer,
      ADD CONSTRAINT api_keys_rate_limit_both
        CHECK ((rate_limit_per_second IS NULL) = (rate_limit_burst IS NULL)),
      ADD CONSTRAINT api_keys_rate_limit_positive
        CHECK (rate_limit_per_second > 0 AND rate_limit_burst > 0);
    CREATE UNLOGGED TABLE rate_limit_buckets (
      client_id  uuid PRIMARY KEY,
      tat_ms     double precision NOT NULL
    ) WITH (fillfactor = 50);
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    DROP TABLE rate_limit_buckets;
    ALTER TABLE api_keys
      DROP CONSTRAINT api_keys_rate_limit_positive,
      DROP CONSTRAINT api_keys_rate_limit_both,
      DROP COLUMN rate_limit_burst,
      DROP COLUMN rate_limit_per_second;
  `.execute(db);
}
