// A notification in the statement that writes work for a relay: an outbox row (`refhub_outbox`) or
// an event of the feed (`refhub_events`). PostgreSQL delivers it when the transaction commits, and
// never for one that rolls back, so a relay woken by it finds the rows it was told of. One per
// statement, not per row, and PostgreSQL folds equal notifications of one transaction into one.
// On PGlite the triggers run too and nobody listens (db/change-notifications.ts). Plain SQL, identical
// on both engines.
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE FUNCTION refhub_notify_outbox() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      PERFORM pg_notify('refhub_outbox', '');
      RETURN NULL;
    END $$;
    CREATE TRIGGER outbox_notify AFTER INSERT ON outbox
      FOR EACH STATEMENT EXECUTE FUNCTION refhub_notify_outbox();
    CREATE FUNCTION refhub_notify_events() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      PERFORM pg_notify('refhub_events', '');
      RETURN NULL;
    END $$;
    CREATE TRIGGER referral_events_notify AFTER INSERT ON referral_events
      FOR EACH STATEMENT EXECUTE FUNCTION refhub_notify_events();
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    DROP TRIGGER referral_events_notify ON referral_events;
    DROP FUNCTION refhub_notify_events();
    DROP TRIGGER outbox_notify ON outbox;
    DROP FUNCTION refhub_notify_outbox();
  `.execute(db);
}
