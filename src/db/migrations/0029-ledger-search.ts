// Searching and replaying the ledgers (db/ledger-search.repository.ts): indexes that answer a search
// by time range in keyset order, with or without an outcome, from the index alone; the link from a
// replayed attempt to the one it repeats; the replay a forward carries until an attempt settles it;
// and the record of each operator's replay (its filter and counts). The indexes are plain, and
// `replay_of` has no foreign key: the attempt tables are partitioned by their time (0027), where no
// unique constraint on `id` alone exists to reference. The indexes are made on the partitioned parents,
// so each month's partition has its own.
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    ALTER TABLE ehr_submissions ADD COLUMN replay_of uuid;
    ALTER TABLE webhook_attempts ADD COLUMN replay_of uuid;
    -- The attempt an operator's replay repeats, until an attempt of the forward settles it.
    ALTER TABLE referrals ADD COLUMN ehr_replay_of uuid;

    CREATE INDEX ehr_submissions_attempted ON ehr_submissions (attempted_at, id);
    CREATE INDEX ehr_submissions_outcome ON ehr_submissions (outcome, attempted_at, id);
    CREATE INDEX ehr_submissions_replay ON ehr_submissions (replay_of) WHERE replay_of IS NOT NULL;
    CREATE INDEX webhook_attempts_attempted_id ON webhook_attempts (attempted_at, id);
    CREATE INDEX webhook_attempts_outcome ON webhook_attempts (outcome, attempted_at, id);
    CREATE INDEX webhook_attempts_event ON webhook_attempts (event_id, subscription_id);
    CREATE INDEX webhook_attempts_replay ON webhook_attempts (replay_of) WHERE replay_of IS NOT NULL;
    CREATE INDEX referral_events_referral ON referral_events (referral_id);

    -- One row per replay an operator ran (not a dry run): who, the filter as given, and the counts.
    -- IDs and codes only, as the ledgers themselves.
    CREATE TABLE ledger_replays (
      id                    uuid PRIMARY KEY,
      request_id            text NOT NULL,
      ledger                text NOT NULL CHECK (ledger IN ('forwards', 'webhooks')),
      requested_at          timestamptz NOT NULL,
      api_key_id            uuid,
      requester_identifier  text,
      filter                jsonb NOT NULL,
      matched               integer NOT NULL,
      replayed              integer NOT NULL,
      skipped               jsonb NOT NULL
    );
    CREATE INDEX ledger_replays_requested ON ledger_replays (requested_at);
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    DROP TABLE ledger_replays;
    DROP INDEX referral_events_referral;
    DROP INDEX webhook_attempts_replay;
    DROP INDEX webhook_attempts_event;
    DROP INDEX webhook_attempts_outcome;
    DROP INDEX webhook_attempts_attempted_id;
    DROP INDEX ehr_submissions_replay;
    DROP INDEX ehr_submissions_outcome;
    DROP INDEX ehr_submissions_attempted;
    ALTER TABLE referrals DROP COLUMN ehr_replay_of;
    ALTER TABLE webhook_attempts DROP COLUMN replay_of;
    ALTER TABLE ehr_submissions DROP COLUMN replay_of;
  `.execute(db);
}
