// Referral events for clinic and hospital systems: the feed every institution reads in one total
// order, and the webhook subscriptions, their delivery attempts and the relay's place in the feed.
// Plain SQL, identical on PostgreSQL and PGlite.
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    -- One row per timeline event, written by the same statement that writes the timeline row, so an
    -- event exists exactly when its change committed. It holds no patient data: the referral's ID and
    -- version, the event's type and sentence, and the institutions that may see it (the provider only
    -- while the referral is not a draft, as the API's tenancy rule says).
    --
    -- Order: identity values are handed out before commit, so a reader that pages by position alone
    -- skips a row whose transaction commits after a later one was read. Each row therefore keeps the
    -- ID of the transaction that wrote it, and readers take only rows of transactions older than every
    -- transaction still running, in (xid, position) order: a row that can still appear always sorts
    -- after everything already handed out (db/events.repository.ts).
    CREATE TABLE referral_events (
      position          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      xid               xid8 NOT NULL DEFAULT pg_current_xact_id(),
      id                uuid NOT NULL UNIQUE,
      referral_id       uuid NOT NULL REFERENCES referrals (id),
      referral_version  integer NOT NULL,
      type              text NOT NULL,
      system            text NOT NULL,
      description       text NOT NULL,
      occurred_at       timestamptz NOT NULL,
      sender_id_type    text NOT NULL,
      sender_id         text NOT NULL,
      provider_id_type  text,
      provider_id       text
    );
    CREATE INDEX referral_events_order ON referral_events (xid, position);
    CREATE INDEX referral_events_sender ON referral_events (sender_id_type, sender_id, xid, position);
    CREATE INDEX referral_events_provider ON referral_events (provider_id_type, provider_id, xid, position)
      WHERE provider_id IS NOT NULL;

    -- Where an institution wants its events pushed. The secret signs deliveries (Standard Webhooks);
    -- during a rotation the previous one keeps signing beside the new one until it expires.
    CREATE TABLE webhook_subscriptions (
      id                          uuid PRIMARY KEY,
      institution_id_type         text NOT NULL,
      institution_id              text NOT NULL,
      url                         text NOT NULL,
      event_types                 text[],
      description                 text,
      secret                      text NOT NULL,
      previous_secret             text,
      previous_secret_expires_at  timestamptz,
      disabled_at                 timestamptz,
      disabled_reason             text CHECK (disabled_reason IN ('by-institution', 'gone', 'failing')),
      failing_since               timestamptz,
      created_at                  timestamptz NOT NULL,
      updated_at                  timestamptz NOT NULL,
      FOREIGN KEY (institution_id_type, institution_id) REFERENCES institutions (id_type, id)
    );
    CREATE INDEX webhook_subscriptions_institution ON webhook_subscriptions (institution_id_type, institution_id);

    -- Every attempt to deliver an event to a subscription: when, the receiver's status, how long, and
    -- an error code when no answer came. IDs and codes only.
    CREATE TABLE webhook_attempts (
      id               uuid PRIMARY KEY,
      subscription_id  uuid NOT NULL REFERENCES webhook_subscriptions (id) ON DELETE CASCADE,
      event_id         uuid NOT NULL,
      event_type       text NOT NULL,
      attempt          integer NOT NULL CHECK (attempt >= 1),
      attempted_at     timestamptz NOT NULL,
      outcome          text NOT NULL CHECK (outcome IN ('delivered', 'retrying', 'failed')),
      http_status      integer,
      duration_ms      integer NOT NULL,
      error_code       text
    );
    CREATE INDEX webhook_attempts_subscription ON webhook_attempts (subscription_id, attempted_at DESC, id DESC);
    CREATE INDEX webhook_attempts_attempted ON webhook_attempts (attempted_at);

    -- How far the webhook relay has turned events into delivery jobs, in the feed's order.
    CREATE TABLE webhook_relay (
      name        text PRIMARY KEY,
      xid         xid8 NOT NULL,
      position    bigint NOT NULL,
      updated_at  timestamptz NOT NULL
    );
    INSERT INTO webhook_relay (name, xid, position, updated_at) VALUES ('events', '0', 0, now());
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP TABLE webhook_relay, webhook_attempts, webhook_subscriptions, referral_events`.execute(db);
}
