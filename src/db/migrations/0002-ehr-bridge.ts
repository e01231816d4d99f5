// The EHR bridge: the ledger of forward attempts, what is due for forwarding on each referral, and the
// reminders sent to providers. Plain SQL, identical on PostgreSQL and PGlite.
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    -- The version written by the latest submit or cancel (the forward that is due), and the latest
    -- version the EHR accepted. A forward is due while ehr_state is 'queued'.
    ALTER TABLE referrals ADD COLUMN ehr_due_version integer;
    ALTER TABLE referrals ADD COLUMN ehr_forwarded_version integer;
    CREATE INDEX referrals_ehr_queued ON referrals (updated_at) WHERE ehr_state = 'queued';
    CREATE INDEX referrals_ehr_failed ON referrals (ehr_last_attempt_at) WHERE ehr_state = 'failed';
    CREATE INDEX referrals_pending_acceptance ON referrals (id) WHERE status = 'pending-acceptance';

    -- One row per attempt to forward a referral's form. IDs, hashes and outcomes only.
    CREATE TABLE ehr_submissions (
      id             uuid PRIMARY KEY,
      referral_id    uuid NOT NULL REFERENCES referrals (id),
      message_id     text NOT NULL,
      version        integer NOT NULL,
      attempt        integer NOT NULL CHECK (attempt >= 1),
      attempted_at   timestamptz NOT NULL,
      outcome        text NOT NULL CHECK (outcome IN ('delivered', 'retrying', 'failed')),
      http_status    integer,
      error_code     text,
      sha256         text CHECK (sha256 ~ '^[0-9a-f]{64}$'),
      ehr_reference  text,
      duration_ms    integer NOT NULL,
      request_id     text NOT NULL,
      CHECK (http_status IS NOT NULL OR error_code IS NOT NULL)
    );
    CREATE INDEX ehr_submissions_referral ON ehr_submissions (referral_id, attempted_at, id);
    CREATE INDEX ehr_submissions_failed ON ehr_submissions (attempted_at) WHERE outcome = 'failed';

    -- Reminders sent to a provider while a referral waits in pending-acceptance. firing_key is the
    -- queue job of the firing, so a firing that runs twice notifies once.
    CREATE TABLE reminder_notifications (
      id                    uuid PRIMARY KEY,
      referral_id           uuid NOT NULL REFERENCES referrals (id),
      kind                  text NOT NULL,
      recipient_id_type     text NOT NULL,
      recipient_id          text NOT NULL,
      pending_since         timestamptz NOT NULL,
      sequence              integer NOT NULL CHECK (sequence >= 1),
      firing_key            text NOT NULL UNIQUE,
      sent_at               timestamptz NOT NULL,
      UNIQUE (referral_id, pending_since, sequence)
    );
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    DROP TABLE reminder_notifications, ehr_submissions;
    DROP INDEX referrals_pending_acceptance;
    DROP INDEX referrals_ehr_failed;
    DROP INDEX referrals_ehr_queued;
    ALTER TABLE referrals DROP COLUMN ehr_forwarded_version;
    ALTER TABLE referrals DROP COLUMN ehr_due_version;
  `.execute(db);
}
