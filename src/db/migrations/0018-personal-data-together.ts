// A referral's patient data, its referrer's and its clinical information sealed together, as one value
// (db/data-keys/data-keys.repository.ts): a read opens one value where it opened eleven, one a column. The
// eleven columns stay, for the rows written before: they are read as they are until the sweep
// (services/data-keys.service.ts) moves them into the new column, and is owed again here for that: a
// migration cannot seal, because it does not hold the keys. The first serving start after it, or
// `refhub migrate`, runs it (`refhub data-keys rotate` where a rotation was done before).
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    ALTER TABLE referrals ADD COLUMN personal_data text;
    UPDATE data_keys SET swept_at = NULL
    WHERE id = (SELECT id FROM data_keys WHERE purpose = 'fields' ORDER BY created_at DESC, id DESC LIMIT 1)
      AND EXISTS (SELECT 1 FROM referrals);
  `.execute(db);
}

// Down drops the column, and with it the data of every row written or swept since up: it is for a
// database that has not served since.
export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE referrals DROP COLUMN personal_data;`.execute(db);
}
