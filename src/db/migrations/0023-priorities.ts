// Priorities (domain/priorities.ts):
// - `priority_codes`, the catalog's list of priorities: a code, its words, the FHIR request priority it
//   maps to, whether it is in use, and its place in the file's order;
// - `offerings.priorities`, the codes an offering takes (null: every code in use);
// - a referral's priority: its code, words and FHIR priority as the catalog had them when the sender
//   set it; null until then, and for the referrals made before priorities, which keep `is_urgent`.
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE priority_codes (
      code          text PRIMARY KEY,
      display       text NOT NULL,
      fhir_priority text NOT NULL CHECK (fhir_priority IN ('routine', 'urgent', 'asap', 'stat')),
      active        boolean NOT NULL,
      position      integer NOT NULL,
      created_at    timestamptz NOT NULL DEFAULT now(),
      updated_at    timestamptz NOT NULL DEFAULT now()
    );
    ALTER TABLE offerings ADD COLUMN priorities text[];
    ALTER TABLE referrals
      ADD COLUMN priority text,
      ADD COLUMN priority_display text,
      ADD COLUMN priority_fhir text;
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    ALTER TABLE referrals DROP COLUMN priority, DROP COLUMN priority_display, DROP COLUMN priority_fhir;
    ALTER TABLE offerings DROP COLUMN priorities;
    DROP TABLE priority_codes;
  `.execute(db);
}
