// The audit trail made tamper-evident. Rows are written as before, by the statements whose work they
// record, so no write waits for another; a sealer then chains them, in the background, in the order
// they were written: one chain per institution and day (and one per day for what refhub and ops do),
// each row holding the SHA-256 of the previous row of its chain and of its own content. After each
// round the sealer writes a checkpoint, the head of every chain it touched, signed with a key that is
// not in the database (AUDIT_SIGNING_KEY). Changing, deleting, inserting or reordering a sealed row
// breaks a chain or disagrees with a signed head (`refhub audit verify`).
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    ALTER TABLE audit_events
      ADD COLUMN chain        text,
      ADD COLUMN chain_index  integer,
      ADD COLUMN prev_hash    text,
      ADD COLUMN row_hash     text,
      ADD COLUMN sealed_at    timestamptz;
    ALTER TABLE audit_events ADD CONSTRAINT audit_events_sealed_whole
      CHECK ((sealed_at IS NULL) = (row_hash IS NULL) AND (sealed_at IS NULL) = (chain IS NULL)
         AND (sealed_at IS NULL) = (chain_index IS NULL) AND (sealed_at IS NULL) = (prev_hash IS NULL));
    CREATE INDEX audit_events_unsealed ON audit_events (seq) WHERE sealed_at IS NULL;
    CREATE INDEX audit_events_chain ON audit_events (chain, chain_index) WHERE chain IS NOT NULL;

    CREATE TABLE audit_chain_heads (
      chain        text PRIMARY KEY,
      chain_index  integer NOT NULL,
      row_hash     text NOT NULL
    );

    CREATE TABLE audit_checkpoints (
      seq          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      created_at   timestamptz NOT NULL,
      heads        jsonb NOT NULL,
      signature    text,
      key_id       text
    );
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    DROP TABLE audit_checkpoints, audit_chain_heads;
    ALTER TABLE audit_events DROP CONSTRAINT audit_events_sealed_whole;
    DROP INDEX audit_events_unsealed;
    DROP INDEX audit_events_chain;
    ALTER TABLE audit_events DROP COLUMN chain, DROP COLUMN chain_index, DROP COLUMN prev_hash,
      DROP COLUMN row_hash, DROP COLUMN sealed_at;
  `.execute(db);
}
