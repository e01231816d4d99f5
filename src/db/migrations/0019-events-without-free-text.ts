// The event feed quotes no free text, and the timeline's sentences are sealed (domain/timeline.ts).
//
// The feed's sentences already written quoted a cancel note, a rejection, a request to act or an
// appointment's location. Each is cut at its quote, as the feed now writes it: "… cancelled the
// referral: <note>" becomes "… cancelled the referral.", and an appointment's sentence keeps its time
// and loses " at <location>" (a time, as refhub writes it, never holds " at "; a name before the fixed
// words may, so the cut is taken after them). Webhook deliveries keep no body: each is made from the
// feed when it is sent, so deliveries still to come carry the cut sentence too.
//
// The timeline keeps its quotes, but sealed, and a migration cannot seal: it does not hold the keys.
// The sweep does (services/data-keys.service.ts), for every value not sealed under the active data key;
// a start runs it when the active key was never swept to. An installation that swept before this
// migration therefore has its active fields key marked unswept again here, so that:
// - with one fields key, the next start (or `refhub migrate`) seals the timeline at once, as it sealed
//   everything after 0017;
// - after a rotation (more than one fields key), a start cannot tell this from a rotation left
//   unfinished, which it leaves to `refhub data-keys rotate` rather than hold the start for a whole
//   sweep. It says so in its log, and `refhub data-keys rotate` then seals the timeline under the
//   active key, without making a new one (docs/security.md).
// Until then the timeline's sentences read as they are, as any value written in the clear does.
import { sql, type Kysely } from 'kysely';

/** Sentences that end in what a person typed: cut at the fixed words, which end with a full stop. */
const QUOTING: readonly (readonly [type: string, words: string])[] = [
  ['referral.cancelled', ' cancelled the referral'],
  ['referral.rejected', ' rejected the referral'],
  ['referral.sender-action-required', ' asked the sender to act on the referral'],
];

/** Appointment sentences: the time follows `before`; " at <location>" follows the time, then `after`. */
const LOCATED: readonly (readonly [type: string, before: string, after: string, atStart: boolean])[] = [
  ['appt.scheduled', ' scheduled an appointment for ', '.', false],
  ['appt.actualized', 'The appointment on ', ' took place.', true],
  ['appt.no-show', 'The patient missed the appointment on ', '.', true],
  ['appt.cancelled', 'The appointment on ', ' was cancelled.', true],
];

export async function up(db: Kysely<unknown>): Promise<void> {
  for (const [type, words] of QUOTING) {
    const quoted = `${words}: `;
    await sql`
      UPDATE referral_events
      SET description = left(description, strpos(description, ${quoted}) - 1) || ${`${words}.`}
      WHERE type = ${type} AND strpos(description, ${quoted}) > 0`.execute(db);
  }
  for (const [type, before, after, atStart] of LOCATED) {
    // What follows the fixed words: the time, then " at " and the location.
    const rest = sql`substr(description, strpos(description, ${before}) + ${before.length}::int)`;
    await sql`
      UPDATE referral_events
      SET description = left(description, strpos(description, ${before}) - 1 + ${before.length}::int)
        || split_part(${rest}, ' at ', 1) || ${after}
      WHERE type = ${type}
        AND ${atStart ? sql`strpos(description, ${before}) = 1` : sql`strpos(description, ${before}) > 0`}
        AND strpos(${rest}, ' at ') > 0`.execute(db);
  }
  // The sweep seals the timeline's sentences in the clear, under the active fields key (the newest).
  await sql`
    UPDATE data_keys SET swept_at = NULL
    WHERE swept_at IS NOT NULL
      AND id = (SELECT id FROM data_keys WHERE purpose = 'fields' ORDER BY created_at DESC, id DESC LIMIT 1)
      AND EXISTS (SELECT 1 FROM timeline_events)`.execute(db);
}

export async function down(): Promise<void> {
  // Nothing to undo: the quotes cut from the feed are gone, and sealed sentences still open.
}
