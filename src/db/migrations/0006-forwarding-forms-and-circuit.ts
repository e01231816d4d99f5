// The forms refhub sent to the EHR, and the EHR's circuit. Plain SQL, identical on PostgreSQL and
// PGlite.
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    -- The exact bytes sent under each message ID (one referral version): every retry of the message
    -- sends them, a Get of that version returns them, and the ledger's hash can be checked against
    -- them afterwards. The form holds patient data, like the referral it was rendered from.
    CREATE TABLE ehr_forms (
      message_id   text PRIMARY KEY,
      referral_id  uuid NOT NULL REFERENCES referrals (id),
      version      integer NOT NULL CHECK (version >= 1),
      form_type    text NOT NULL,
      sha256       text NOT NULL CHECK (sha256 ~ '^[0-9a-f]{64}$'),
      html         text NOT NULL,
      created_at   timestamptz NOT NULL,
      UNIQUE (referral_id, version)
    );

    -- The EHR's circuit, shared by every worker: after too many failures in a row it opens, and
    -- forwarding waits, probing the EHR with one forward at growing intervals, until it answers.
    CREATE TABLE ehr_circuit (
      name               text PRIMARY KEY,
      state              text NOT NULL CHECK (state IN ('closed', 'open')),
      failures           integer NOT NULL DEFAULT 0,
      window_started_at  timestamptz,
      opened_at          timestamptz,
      probe_at           timestamptz,
      probe_interval_ms  integer,
      probing_until      timestamptz,
      updated_at         timestamptz NOT NULL
    );
    INSERT INTO ehr_circuit (name, state, updated_at) VALUES ('ehr', 'closed', now());
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP TABLE ehr_circuit, ehr_forms`.execute(db);
}
