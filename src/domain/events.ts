// Referral events as institutions read them, in the feed and in webhook deliveries alike: the types a
// subscription can ask for (every timeline event type the lifecycle table and the appointment table
// name; the set grows with them), the view of one event, and the feed's bounds.
import type { InstitutionRef } from './access.ts';
import { APPOINTMENT_EVENTS, LIFECYCLE } from './lifecycle.ts';
import type { ReasonView } from './reasons.ts';

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

/** The most events one feed page returns, and the longest an empty page may be held open. */
export const MAX_FEED_LIMIT = 500;
export const MAX_FEED_WAIT_SECONDS = 30;

/** An event as the store keeps it: what its view is made of. */
export interface StoredEvent {
  readonly id: string;
  readonly type: string;
  readonly occurredAt: Date;
  readonly referralId: string;
  readonly referralVersion: number;
  readonly system: string;
  readonly description: string;
  readonly reason?: ReasonView | undefined;
}

/**
 * An event as an institution reads it (feed and webhook alike): IDs and a sentence, no patient data.
 * The sentence is the timeline's without the free text it quotes (`eventDescription`,
 * domain/timeline.ts): a cancel note, a reason or a location may name the patient.
 */
export interface EventView {
  readonly id: string;
  readonly type: string;
  readonly occurredAt: string;
  readonly referralId: string;
  readonly referralVersion: number;
  /** The institution the event is for: the one reading the feed, or the subscription's. */
  readonly institution: { readonly idType: string; readonly id: string };
  readonly system: string;
  readonly description: string;
  /**
   * The coded reason the step was given for (a rejection, a request to act, a cancellation, a return
   * to draft, a redirect): the catalog's code and its words, never the comment a person wrote.
   */
  readonly reason?: ReasonView;
}

export function toEventView(event: StoredEvent, institution: InstitutionRef): EventView {
  return {
    id: event.id,
    type: event.type,
    occurredAt: event.occurredAt.toISOString(),
    referralId: event.referralId,
    referralVersion: event.referralVersion,
    institution: { idType: institution.idType, id: institution.id },
    system: event.system,
    description: event.description,
    ...(event.reason === undefined
      ? {}
      : { reason: { code: event.reason.code, display: event.reason.display } }),
  };
}

/** A place in the feed: just after the event written at `position` by transaction `xid`. */
export interface FeedPosition {
  /** The writing transaction's 64-bit ID, as decimal text. */
  readonly xid: string;
  /** The event's identity value, as decimal text. */
  readonly position: string;
}

/** Before every event. */
export const FEED_START: FeedPosition = { xid: '0', position: '0' };
