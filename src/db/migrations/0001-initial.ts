// The initial schema. Plain SQL, identical on PostgreSQL and PGlite.
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE systems (
      name        text PRIMARY KEY CHECK (name ~ '^[A-Za-z][A-Za-z0-9 ._-]{0,63}$'),
      created_at  timestamptz NOT NULL DEFAULT now()
    );
    INSERT INTO systems (name) VALUES ('Manual');

    CREATE TABLE institutions (
      id_type     text NOT NULL,
      id          text NOT NULL,
      name        text NOT NULL,
      created_at  timestamptz NOT NULL DEFAULT now(),
      updated_at  timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (id_type, id)
    );

    CREATE TABLE offerings (
      id                   text PRIMARY KEY,
      name                 text NOT NULL,
      category             text NOT NULL,
      description          text NOT NULL,
      specialty            text NOT NULL,
      ehr_code             text NOT NULL,
      institution_id_type  text NOT NULL,
      institution_id       text NOT NULL,
      system               text NOT NULL REFERENCES systems (name),
      cancellable          boolean NOT NULL DEFAULT true,
      active               boolean NOT NULL DEFAULT true,
      created_at           timestamptz NOT NULL DEFAULT now(),
      updated_at           timestamptz NOT NULL DEFAULT now(),
      FOREIGN KEY (institution_id_type, institution_id) REFERENCES institutions (id_type, id)
    );

    CREATE TABLE api_keys (
      id            uuid PRIMARY KEY,
      prefix        text NOT NULL,
      secret_hash   text NOT NULL UNIQUE,
      system        text NOT NULL REFERENCES systems (name),
      role          text NOT NULL CHECK (role IN ('sender', 'provider', 'ops')),
      label         text,
      created_at    timestamptz NOT NULL DEFAULT now(),
      revoked_at    timestamptz
    );

    CREATE TABLE api_key_institutions (
      api_key_id           uuid NOT NULL REFERENCES api_keys (id) ON DELETE CASCADE,
      institution_id_type  text NOT NULL,
      institution_id       text NOT NULL,
      PRIMARY KEY (api_key_id, institution_id_type, institution_id),
      FOREIGN KEY (institution_id_type, institution_id) REFERENCES institutions (id_type, id)
    );

    CREATE TABLE referrals (
      id                          uuid PRIMARY KEY,
      version                     integer NOT NULL DEFAULT 1,
      status                      text NOT NULL,
      sender_id_type              text NOT NULL,
      sender_id                   text NOT NULL,
      sender_system               text NOT NULL REFERENCES systems (name),
      provider_id_type            text,
      provider_id                 text,
      offering_id                 text REFERENCES offerings (id),
      patient_uin                 text,
      patient_name                text,
      patient_dob                 text CHECK (patient_dob ~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}$'),
      patient_gender              text,
      patient_nationality         text,
      patient_phone_number        text,
      patient_residential_status  text,
      referrer_id                 text,
      referrer_id_type            text,
      referrer_name               text,
      referrer_email              text,
      referrer_contact_number     text,
      clinical_info               text,
      is_urgent                   boolean NOT NULL DEFAULT false,
      ehr_state                   text NOT NULL DEFAULT 'not-sent',
      ehr_attempts                integer NOT NULL DEFAULT 0,
      ehr_last_attempt_at         timestamptz,
      ehr_sha256                  text,
      created_at                  timestamptz NOT NULL,
      updated_at                  timestamptz NOT NULL,
      submitted_at                timestamptz,
      deleted_at                  timestamptz,
      FOREIGN KEY (sender_id_type, sender_id) REFERENCES institutions (id_type, id),
      FOREIGN KEY (provider_id_type, provider_id) REFERENCES institutions (id_type, id)
    );
    -- The list query: one institution as sender or as provider, newest first by one of three keys.
    CREATE INDEX referrals_sender_updated ON referrals (sender_id_type, sender_id, updated_at DESC, id DESC) WHERE deleted_at IS NULL;
    CREATE INDEX referrals_sender_submitted ON referrals (sender_id_type, sender_id, submitted_at DESC NULLS LAST, id DESC) WHERE deleted_at IS NULL;
    CREATE INDEX referrals_sender_created ON referrals (sender_id_type, sender_id, created_at DESC, id DESC) WHERE deleted_at IS NULL;
    CREATE INDEX referrals_provider_updated ON referrals (provider_id_type, provider_id, updated_at DESC, id DESC) WHERE deleted_at IS NULL AND status <> 'draft';
    CREATE INDEX referrals_provider_submitted ON referrals (provider_id_type, provider_id, submitted_at DESC NULLS LAST, id DESC) WHERE deleted_at IS NULL AND status <> 'draft';
    CREATE INDEX referrals_provider_created ON referrals (provider_id_type, provider_id, created_at DESC, id DESC) WHERE deleted_at IS NULL AND status <> 'draft';
    CREATE INDEX referrals_patient_uin ON referrals (patient_uin) WHERE deleted_at IS NULL;

    CREATE TABLE appointments (
      referral_id  uuid NOT NULL REFERENCES referrals (id),
      id           text NOT NULL,
      status       text NOT NULL CHECK (status IN ('scheduled', 'actualized', 'no-show', 'cancelled')),
      start_at     timestamptz NOT NULL,
      location     text NOT NULL,
      created_at   timestamptz NOT NULL,
      updated_at   timestamptz NOT NULL,
      PRIMARY KEY (referral_id, id)
    );

    CREATE TABLE notes (
      id                          uuid PRIMARY KEY,
      referral_id                 uuid NOT NULL REFERENCES referrals (id),
      content                     text NOT NULL,
      author_name                 text,
      author_institution_id_type  text NOT NULL,
      author_institution_id       text NOT NULL,
      requester_identifier        text,
      system                      text NOT NULL REFERENCES systems (name),
      created_at                  timestamptz NOT NULL
    );
    CREATE INDEX notes_referral ON notes (referral_id, created_at, id);

    CREATE TABLE timeline_events (
      seq           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      id            uuid NOT NULL UNIQUE,
      referral_id   uuid NOT NULL REFERENCES referrals (id),
      type          text NOT NULL,
      system        text NOT NULL REFERENCES systems (name),
      description   text NOT NULL,
      produced_at   timestamptz NOT NULL
    );
    CREATE INDEX timeline_events_referral ON timeline_events (referral_id, seq);

    CREATE TABLE audit_events (
      seq                   bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      id                    uuid NOT NULL UNIQUE,
      occurred_at           timestamptz NOT NULL,
      request_id            text NOT NULL,
      api_key_id            uuid,
      system                text,
      institution_id_type   text,
      institution_id        text,
      requester_identifier  text,
      action                text NOT NULL,
      outcome               text NOT NULL CHECK (outcome IN ('success', 'denied')),
      referral_ids          uuid[] NOT NULL DEFAULT '{}'
    );
    CREATE INDEX audit_events_occurred ON audit_events (occurred_at);
    CREATE INDEX audit_events_referral ON audit_events USING gin (referral_ids);

    CREATE TABLE idempotency_keys (
      api_key_id       uuid NOT NULL REFERENCES api_keys (id),
      key              text NOT NULL,
      request_hash     text NOT NULL,
      state            text NOT NULL CHECK (state IN ('in-progress', 'completed')),
      response_status  integer,
      response_headers jsonb,
      response_body    text,
      created_at       timestamptz NOT NULL,
      expires_at       timestamptz NOT NULL,
      PRIMARY KEY (api_key_id, key)
    );
    CREATE INDEX idempotency_keys_expires ON idempotency_keys (expires_at);

    CREATE TABLE outbox (
      id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      topic         text NOT NULL,
      referral_id   uuid NOT NULL REFERENCES referrals (id),
      version       integer NOT NULL,
      request_id    text NOT NULL,
      created_at    timestamptz NOT NULL,
      available_at  timestamptz NOT NULL,
      attempts      integer NOT NULL DEFAULT 0,
      last_error    text,
      processed_at  timestamptz
    );
    CREATE INDEX outbox_pending ON outbox (available_at, id) WHERE processed_at IS NULL;

    CREATE TABLE link_tokens (
      id                    uuid PRIMARY KEY,
      token_hash            text NOT NULL UNIQUE,
      referral_id           uuid NOT NULL REFERENCES referrals (id),
      action                text NOT NULL CHECK (action IN ('edit', 'respond', 'print', 'view')),
      institution_id_type   text NOT NULL,
      institution_id        text NOT NULL,
      requester_identifier  text NOT NULL,
      api_key_id            uuid REFERENCES api_keys (id),
      created_at            timestamptz NOT NULL,
      expires_at            timestamptz NOT NULL,
      used_at               timestamptz
    );
    CREATE INDEX link_tokens_expires ON link_tokens (expires_at);
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    DROP TABLE link_tokens, outbox, idempotency_keys, audit_events, timeline_events, notes, appointments,
      referrals, api_key_institutions, api_keys, offerings, institutions, systems;
  `.execute(db);
}
