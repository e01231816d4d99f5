// Coded reasons (domain/reasons.ts):
// - `reason_codes`, the catalog's list of reasons for rejecting, sending back, cancelling, returning to
//   draft and redirecting a referral: a code, its words, the operations it is for, whether a comment
//   must come with it, and its place in the file's order. A withdrawn code stays, inactive, for the
//   referrals that carry it.
// - the reason a timeline event and its feed event were given for, as code and words (the words as the
//   catalog had them then). Neither is patient data, so neither is sealed; both are null for events
//   without one, and for the events written before reasons had codes, which keep their free text.
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE reason_codes (
      code             text PRIMARY KEY,
      display          text NOT NULL,
      actions          text[] NOT NULL,
      comment_required boolean NOT NULL,
      active           boolean NOT NULL,
      position         integer NOT NULL,
      created_at       timestamptz NOT NULL DEFAULT now(),
      updated_at       timestamptz NOT NULL DEFAULT now()
    );
    ALTER TABLE timeline_events ADD COLUMN reason_code text, ADD COLUMN reason_display text;
    ALTER TABLE referral_events ADD COLUMN reason_code text, ADD COLUMN reason_display text;
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    ALTER TABLE referral_events DROP COLUMN reason_code, DROP COLUMN reason_display;
    ALTER TABLE timeline_events DROP COLUMN reason_code, DROP COLUMN reason_display;
    DROP TABLE reason_codes;
  `.execute(db);
}
