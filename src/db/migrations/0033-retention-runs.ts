// Retention runs (services/retention/retention.service.ts): one row per run, scheduled or from the
// CLI, from its start to its end. At most one runs at a time (the partial unique index): two runs at
// once would write the same month's archive or purge the same referrals together. A run says it is
// alive every 30 seconds (`heartbeat_at`); one not heard from for five minutes died with its process,
// and the next run ends it as `abandoned` and starts. The rows hold times, words and counts only.
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE retention_runs (
      id            uuid PRIMARY KEY,
      started_by    text NOT NULL,
      started_at    timestamptz NOT NULL,
      heartbeat_at  timestamptz NOT NULL,
      finished_at   timestamptz,
      outcome       text CHECK (outcome IN ('succeeded', 'failed', 'abandoned')),
      summary       jsonb,
      CHECK ((finished_at IS NULL) = (outcome IS NULL))
    );
    CREATE UNIQUE INDEX retention_runs_one_running ON retention_runs ((true)) WHERE finished_at IS NULL;
    CREATE INDEX retention_runs_started ON retention_runs (started_at);
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP TABLE retention_runs;`.execute(db);
}
