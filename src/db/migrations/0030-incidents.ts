// Incidents (domain/incidents.ts): one row per incident of a condition refhub watches, from when it
// opened to when it resolved, with the latest evidence (counts, ages, codes: no patient data) and
// what remains to send of its two ops webhooks. At most one incident of a condition is open at a time
// (the partial unique index), so sweeps that overlap open it once.
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE incidents (
      id                uuid PRIMARY KEY,
      condition         text NOT NULL,
      opened_at         timestamptz NOT NULL,
      resolved_at       timestamptz,
      evidence          jsonb NOT NULL,
      evidence_at       timestamptz NOT NULL,
      opened_sent_at    timestamptz,
      resolved_sent_at  timestamptz,
      send_attempts     integer NOT NULL DEFAULT 0,
      next_send_at      timestamptz,
      CHECK (resolved_at IS NULL OR resolved_at >= opened_at)
    );
    CREATE UNIQUE INDEX incidents_open ON incidents (condition) WHERE resolved_at IS NULL;
    CREATE INDEX incidents_to_send ON incidents (next_send_at) WHERE next_send_at IS NOT NULL;
    CREATE INDEX incidents_opened ON incidents (opened_at);
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP TABLE incidents;`.execute(db);
}
