// The provider's outcome: what happened to the referral, told back to the sender.
// - `outcome_codes`, the catalog's list of outcomes (seen and discharged, did not attend, …): a code
//   the API takes, the words people read, and whether the provider must write a summary with it.
//   Codes are never deleted (a referral completed with one keeps it); a code withdrawn from use is
//   inactive. `position` keeps the catalog file's order, in which people are offered the codes.
// - `referral_outcomes`, at most one per referral: the code and its words as the catalog had them
//   when the provider completed the referral (so a later rename does not rewrite what was reported),
//   the consult summary, the provider's files that form part of it, who completed it, and when the
//   sender acknowledged it.
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE outcome_codes (
      code              text PRIMARY KEY CHECK (code ~ '^[a-z0-9][a-z0-9-]{0,63}$'),
      display           text NOT NULL,
      summary_required  boolean NOT NULL DEFAULT true,
      active            boolean NOT NULL DEFAULT true,
      position          integer NOT NULL DEFAULT 0,
      created_at        timestamptz NOT NULL DEFAULT now(),
      updated_at        timestamptz NOT NULL DEFAULT now()
    );

    CREATE TABLE referral_outcomes (
      referral_id                 uuid PRIMARY KEY REFERENCES referrals (id),
      code                        text NOT NULL REFERENCES outcome_codes (code),
      display                     text NOT NULL,
      summary                     text CHECK (char_length(summary) BETWEEN 1 AND 8000),
      attachment_ids              jsonb NOT NULL DEFAULT '[]',
      completed_by_name           text,
      requester_identifier        text,
      system                      text NOT NULL REFERENCES systems (name),
      completed_at                timestamptz NOT NULL,
      acknowledged_by_name        text,
      acknowledged_at             timestamptz
    );
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP TABLE referral_outcomes, outcome_codes;`.execute(db);
}
