// Patient data sealed field by field (domain/data-keys.ts). Data keys are kept here only wrapped by
// a key-encryption key that is not in the database. The values themselves are sealed by the
// repositories as they write, and the values written before this migration are sealed, with the blind
// index of each patient's UIN filled in, by the sweep that runs after it (services/data-keys.service.ts):
// a migration cannot seal, because it does not hold the keys. The patient filter looks up the blind
// index; an index on the sealed UIN would find nothing, so it goes.
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE data_keys (
      id          text PRIMARY KEY,
      purpose     text NOT NULL CHECK (purpose IN ('fields', 'blind-index')),
      kek_id      text NOT NULL,
      wrapped     text NOT NULL,
      created_at  timestamptz NOT NULL,
      swept_at    timestamptz
    );
    CREATE UNIQUE INDEX data_keys_one_blind_index ON data_keys (purpose) WHERE purpose = 'blind-index';

    ALTER TABLE referrals ADD COLUMN patient_uin_index text;
    DROP INDEX referrals_patient_uin;
    -- A sealed value has the form of no date and no length of text: the API checks both.
    ALTER TABLE referrals DROP CONSTRAINT referrals_patient_dob_check;
    ALTER TABLE referral_outcomes DROP CONSTRAINT referral_outcomes_summary_check;
    CREATE INDEX referrals_patient_uin_index ON referrals (patient_uin_index) WHERE deleted_at IS NULL;
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    DROP INDEX referrals_patient_uin_index;
    ALTER TABLE referrals ADD CONSTRAINT referrals_patient_dob_check
      CHECK (patient_dob ~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}$') NOT VALID;
    ALTER TABLE referral_outcomes ADD CONSTRAINT referral_outcomes_summary_check
      CHECK (char_length(summary) BETWEEN 1 AND 8000) NOT VALID;
    ALTER TABLE referrals DROP COLUMN patient_uin_index;
    CREATE INDEX referrals_patient_uin ON referrals (patient_uin) WHERE deleted_at IS NULL;
    DROP TABLE data_keys;
  `.execute(db);
}
