// Wait times per offering (domain/wait-times.ts): the figures the last computation wrote, one row per
// offering, replaced whole by each run in one transaction. Percentiles are in seconds and null below
// the threshold of referrals. The partial index finds the referrals first submitted within the window
// without reading the rest of the timeline.
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE wait_times (
      offering_id                text PRIMARY KEY REFERENCES offerings (id),
      computed_at                timestamptz NOT NULL,
      window_start               timestamptz NOT NULL,
      window_end                 timestamptz NOT NULL,
      accepted_referrals         integer NOT NULL,
      accepted_p50_seconds       double precision,
      accepted_p90_seconds       double precision,
      appointment_referrals      integer NOT NULL,
      appointment_p50_seconds    double precision,
      appointment_p90_seconds    double precision,
      decided_referrals          integer NOT NULL,
      declined_share             double precision
    );
    CREATE INDEX timeline_events_submitted ON timeline_events (produced_at, referral_id)
      WHERE type = 'referral.pending-acceptance';
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    DROP INDEX timeline_events_submitted;
    DROP TABLE wait_times;
  `.execute(db);
}
