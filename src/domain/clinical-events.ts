// Which timeline events a clinician reads on the referral's documents (the EHR form, the view and
// print pages): what people did to the referral, never what refhub did on its own. Delivery
// bookkeeping (a forward recorded, a reminder sent, and any event a future bridge adds) is left out,
// so recording it cannot change the form the forwarder hashes.
//
// An allow-list, derived from the lifecycle table: the events of the operations a sender or a
// provider performs (creating the draft included), plus the appointment events. An operation the
// table gives to the `system` actor is bookkeeping; an event type the table does not know is left out
// until someone decides it is clinical.
import { APPOINTMENT_EVENTS, isBookkeeping, LIFECYCLE, OPERATIONS, type OperationRule } from './lifecycle.ts';

const peopleEvents = OPERATIONS.filter((operation) => !isBookkeeping(operation))
  .map((operation) => (LIFECYCLE[operation] as OperationRule).event)
  .filter((event): event is string => event !== null);

/** The timeline event types the referral's documents show. */
export const CLINICAL_EVENT_TYPES: ReadonlySet<string> = new Set([
  ...peopleEvents,
  ...Object.values(APPOINTMENT_EVENTS),
]);

export function isClinicalEvent(type: string): boolean {
  return CLINICAL_EVENT_TYPES.has(type);
}
