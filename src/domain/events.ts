// The types of referral events a webhook subscription can ask for: every timeline event type the
// lifecycle table and the appointment table name. The set grows with them.
import { APPOINTMENT_EVENTS, LIFECYCLE } from './lifecycle.ts';

export const EVENT_TYPES: readonly string[] = [
  ...new Set([
    ...Object.values(LIFECYCLE)
      .map((rule) => rule.event)
      .filter((event): event is NonNullable<typeof event> => event !== null),
    ...Object.values(APPOINTMENT_EVENTS),
  ]),
].sort();

/** The type of the event a subscription's test sends: never in the feed, never on a timeline. */
export const TEST_EVENT_TYPE = 'webhook.test';
