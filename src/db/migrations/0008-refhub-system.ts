// refhub as a system of its own. The steps refhub takes by itself (a delivery to the EHR recorded, a
// failed one, a reminder sent to the provider) name `refhub` on the timeline and in the event feed:
// neither the sender's system nor the provider's took part in them. `refhub` is not a catalog system:
// no API key and no offering may name it. The events written before this migration named the
// referral's sender system (deliveries) or the offering's system (reminders); they are corrected, so
// that a referral's timeline says one thing about all of its deliveries. Plain SQL, identical on
// PostgreSQL and PGlite.
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    INSERT INTO systems (name) VALUES ('refhub') ON CONFLICT (name) DO NOTHING;
    UPDATE timeline_events SET system = 'refhub'
      WHERE type IN ('ehr.forwarded', 'ehr.forward-failed', 'referral.provider-patient-create-reminder-sent');
    UPDATE referral_events SET system = 'refhub'
      WHERE type IN ('ehr.forwarded', 'ehr.forward-failed', 'referral.provider-patient-create-reminder-sent');
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    UPDATE timeline_events AS t SET system = r.sender_system FROM referrals AS r
      WHERE r.id = t.referral_id AND t.type IN ('ehr.forwarded', 'ehr.forward-failed');
    UPDATE referral_events AS e SET system = r.sender_system FROM referrals AS r
      WHERE r.id = e.referral_id AND e.type IN ('ehr.forwarded', 'ehr.forward-failed');
    UPDATE timeline_events AS t SET system = o.system FROM referrals AS r JOIN offerings AS o ON o.id = r.offering_id
      WHERE r.id = t.referral_id AND t.type = 'referral.provider-patient-create-reminder-sent';
    UPDATE referral_events AS e SET system = o.system FROM referrals AS r JOIN offerings AS o ON o.id = r.offering_id
      WHERE r.id = e.referral_id AND e.type = 'referral.provider-patient-create-reminder-sent';
    DELETE FROM systems WHERE name = 'refhub'
      AND NOT EXISTS (SELECT 1 FROM timeline_events WHERE system = 'refhub')
      AND NOT EXISTS (SELECT 1 FROM api_keys WHERE system = 'refhub')
      AND NOT EXISTS (SELECT 1 FROM offerings WHERE system = 'refhub')
      AND NOT EXISTS (SELECT 1 FROM referrals WHERE sender_system = 'refhub')
      AND NOT EXISTS (SELECT 1 FROM notes WHERE system = 'refhub');
  `.execute(db);
}
