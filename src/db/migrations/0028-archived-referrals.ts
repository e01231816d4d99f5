// Archiving referrals (services/retention/referrals-archive.ts): a referral that ended long ago is
// written to an archive, then its clinical content is purged from these tables. The referral keeps its
// row, now `archived`, with the archive's name and time, which a read answers 410 with. The columns
// that held sealed patient data and have no other value to take become nullable: null is what a purge
// leaves. The partial index finds the referrals in a final status by the time they were last changed.
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    ALTER TABLE referrals ADD COLUMN archived_at timestamptz, ADD COLUMN archive_name text;
    ALTER TABLE appointments ALTER COLUMN location DROP NOT NULL;
    ALTER TABLE attachments ALTER COLUMN file_name DROP NOT NULL;
    ALTER TABLE ehr_forms ALTER COLUMN html DROP NOT NULL;
    ALTER TABLE timeline_events ALTER COLUMN description DROP NOT NULL;
    CREATE INDEX referrals_final_updated ON referrals (updated_at, id)
      WHERE deleted_at IS NULL AND status IN ('rejected', 'cancelled', 'outcome-acknowledged', 'redirected');
  `.execute(db);
}

// Down gives the columns their constraint back only where no purge left a null: it is for a database
// that has archived nothing since up.
export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    DROP INDEX referrals_final_updated;
    ALTER TABLE timeline_events ALTER COLUMN description SET NOT NULL;
    ALTER TABLE ehr_forms ALTER COLUMN html SET NOT NULL;
    ALTER TABLE attachments ALTER COLUMN file_name SET NOT NULL;
    ALTER TABLE appointments ALTER COLUMN location SET NOT NULL;
    ALTER TABLE referrals DROP COLUMN archive_name, DROP COLUMN archived_at;
  `.execute(db);
}
