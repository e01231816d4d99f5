// Worklists and service levels (domain/worklists.ts):
// - `offerings.triage_within`, an offering's triage service levels: working days by priority code
//   (null: none, and its referrals have no due time);
// - `public_holidays`, the catalog's days that are not working days, withdrawn by `active`;
// - a referral's triage due time, set when it is submitted (from the levels and holidays of that
//   moment), and when `referral.triage-overdue` was recorded for that due time (null: not yet);
// - the indexes the worklists read in their order: the provider's by status and due time, the
//   sender's by status and last change, and the overdue sweep's due referrals not yet marked.
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    ALTER TABLE offerings ADD COLUMN triage_within jsonb;
    CREATE TABLE public_holidays (
      day        date PRIMARY KEY,
      name       text NOT NULL,
      active     boolean NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now()
    );
    ALTER TABLE referrals
      ADD COLUMN triage_due_at timestamptz,
      ADD COLUMN triage_overdue_at timestamptz;
    CREATE INDEX referrals_provider_worklist
      ON referrals (provider_id_type, provider_id, status, triage_due_at, submitted_at, id)
      WHERE deleted_at IS NULL AND status <> 'draft';
    CREATE INDEX referrals_sender_worklist
      ON referrals (sender_id_type, sender_id, status, updated_at DESC, id DESC)
      WHERE deleted_at IS NULL;
    CREATE INDEX referrals_triage_overdue_due
      ON referrals (triage_due_at)
      WHERE status = 'pending-acceptance' AND triage_overdue_at IS NULL AND deleted_at IS NULL;
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    DROP INDEX referrals_triage_overdue_due;
    DROP INDEX referrals_sender_worklist;
    DROP INDEX referrals_provider_worklist;
    ALTER TABLE referrals DROP COLUMN triage_due_at, DROP COLUMN triage_overdue_at;
    DROP TABLE public_holidays;
    ALTER TABLE offerings DROP COLUMN triage_within;
  `.execute(db);
}
