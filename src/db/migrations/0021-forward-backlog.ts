// The forward queue's order by clinic (queue/forward.queue.ts) counts each institution's forwards
// waiting for a worker. It was kept beside the jobs in Redis; it is kept here now, so that it works
// the same whichever backend holds the queues (BullMQ's PostgreSQL backend or Redis). A row holds an
// institution key and a job ID (a message ID), nothing about the patient; rows older than the order's
// horizon stop counting and are removed as the institution's next forwards are ranked.
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE forward_backlog (
      institution text NOT NULL,
      job_id text NOT NULL,
      added_at timestamptz NOT NULL,
      PRIMARY KEY (institution, job_id)
    );
    CREATE INDEX forward_backlog_added ON forward_backlog (institution, added_at);
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP TABLE forward_backlog`.execute(db);
}
