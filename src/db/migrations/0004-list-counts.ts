// Narrow indexes for the referral list's total. The total counts every referral an institution sends
// or receives; in an index of the institution alone, PostgreSQL stores each institution's key once
// with the list of its rows (B-tree deduplication): counting one institution's 10,000 referrals reads
// a handful of pages instead of the dozens of a wide sorted index, and takes half the time. Plain
// SQL, identical on PostgreSQL and PGlite.
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE INDEX referrals_sender_count ON referrals (sender_id_type, sender_id) WHERE deleted_at IS NULL;
    CREATE INDEX referrals_provider_count ON referrals (provider_id_type, provider_id)
      WHERE deleted_at IS NULL AND status <> 'draft';
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    DROP INDEX referrals_provider_count;
    DROP INDEX referrals_sender_count;
  `.execute(db);
}
