// The audit trail's second hash form, linked checkpoints, and the institution a refused request claimed.
//
// - `claimed_institution_id_type`, `claimed_institution_id`: the institution a request named when its
//   credential may not act for it. The row's own institution columns name the credential's
//   institution (api/request-audit.ts), so a refused claim never joins the claimed institution's chain
//   or its patients' access reports.
// - `hash_form`: which form of a row's content its hash covers (domain/audit-chain.ts). Rows sealed
//   before this migration keep form 1, which does not cover what the sealer sets (`sealed_at`, the
//   chain and the index); the sealer now writes form 2, which covers every column but the hashes
//   themselves, the claim included. The form is part of the hashed text, so a row signed in form 2
//   cannot be passed off as form 1.
// - `audit_checkpoints.form`, `prev_hash`: a checkpoint of form 2 signs the hash of the checkpoint
//   before it, so that a checkpoint removed from the middle of the trail breaks the link after it.
//
// The columns are added with a default and the default dropped at once: PostgreSQL (and PGlite) keep
// the value for the rows already there without rewriting the table, and new rows get what the writer
// gives. Unsealed rows have no form until the sealer sets one.
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    ALTER TABLE audit_events
      ADD COLUMN claimed_institution_id_type  text,
      ADD COLUMN claimed_institution_id       text,
      ADD COLUMN hash_form                    smallint DEFAULT 1;
    ALTER TABLE audit_events ALTER COLUMN hash_form DROP DEFAULT;
    UPDATE audit_events SET hash_form = NULL WHERE sealed_at IS NULL;
    ALTER TABLE audit_events ADD CONSTRAINT audit_events_claim_whole
      CHECK ((claimed_institution_id_type IS NULL) = (claimed_institution_id IS NULL));
    ALTER TABLE audit_events ADD CONSTRAINT audit_events_hash_form
      CHECK ((hash_form IS NULL) = (sealed_at IS NULL));

    ALTER TABLE audit_checkpoints
      ADD COLUMN form      smallint NOT NULL DEFAULT 1,
      ADD COLUMN prev_hash text;
    ALTER TABLE audit_checkpoints ALTER COLUMN form DROP DEFAULT;
    ALTER TABLE audit_checkpoints ADD CONSTRAINT audit_checkpoints_linked
      CHECK ((form = 1) = (prev_hash IS NULL));
  `.execute(db);
}

/** Rolling back leaves rows and checkpoints of form 2 that an older refhub cannot verify. */
export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    ALTER TABLE audit_checkpoints DROP CONSTRAINT audit_checkpoints_linked;
    ALTER TABLE audit_checkpoints DROP COLUMN form, DROP COLUMN prev_hash;
    ALTER TABLE audit_events DROP CONSTRAINT audit_events_hash_form;
    ALTER TABLE audit_events DROP CONSTRAINT audit_events_claim_whole;
    ALTER TABLE audit_events DROP COLUMN claimed_institution_id_type, DROP COLUMN claimed_institution_id,
      DROP COLUMN hash_form;
  `.execute(db);
}
