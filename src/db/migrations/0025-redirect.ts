// Redirects (domain/lifecycle.ts, `redirect`): a submitted referral ends as `redirected`, and a
// successor carries it on at another offering.
// - `referrals.redirected_to`, the successor a redirected referral was handed on to, and
//   `referrals.redirected_from`, the referral a successor carries on; each names the other. One
//   referral has at most one successor (the unique index), whatever the requests that race.
// - `timeline_events.from_referral_id`, for the steps copied into a successor's timeline at the
//   redirect: the referral they were taken on. Null for a referral's own steps.
// - `attachments.content_of`, for the files a successor carries: the attachment whose stored bytes
//   it reads (sealed once, under that attachment's place), so a redirect copies no file. The stored
//   bytes cannot be removed while a successor's file reads them.
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    ALTER TABLE referrals
      ADD COLUMN redirected_from uuid REFERENCES referrals (id),
      ADD COLUMN redirected_to uuid REFERENCES referrals (id);
    CREATE UNIQUE INDEX referrals_redirected_from ON referrals (redirected_from)
      WHERE redirected_from IS NOT NULL;
    ALTER TABLE timeline_events ADD COLUMN from_referral_id uuid;
    ALTER TABLE attachments ADD COLUMN content_of uuid REFERENCES attachment_contents (attachment_id);
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    ALTER TABLE attachments DROP COLUMN content_of;
    ALTER TABLE timeline_events DROP COLUMN from_referral_id;
    DROP INDEX referrals_redirected_from;
    ALTER TABLE referrals DROP COLUMN redirected_to, DROP COLUMN redirected_from;
  `.execute(db);
}
