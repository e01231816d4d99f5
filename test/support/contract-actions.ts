// Contract §4, transcribed as actions (docs/api.md, "Allowed and blocked actions"): what each party
// may do in each status for a cancellable offering. Not derived from the lifecycle table on purpose,
// so a change to the table that the contract does not make fails the tests that read this.
import type { Party, Status } from '../../src/domain/statuses.ts';
import type { ActionName } from './action-calls.ts';

/** The actions each party has at all. */
export const PARTY_ACTIONS: Readonly<Record<Party, readonly ActionName[]>> = {
  sender: [
    'edit',
    'submit',
    'delete',
    'back-to-draft',
    'cancel',
    'redirect',
    'acknowledge-outcome',
    'add-note',
    'add-attachment',
  ],
  provider: [
    'cancel',
    'redirect',
    'accept',
    'reject',
    'request-action',
    'upsert-appointment',
    'complete',
    'add-note',
    'add-attachment',
  ],
};

export const CONTRACT_ALLOWED: Readonly<Record<Party, Readonly<Record<Status, readonly ActionName[]>>>> = {
  sender: {
    draft: ['edit', 'submit', 'delete', 'add-note', 'add-attachment'],
    'pending-acceptance': ['back-to-draft', 'cancel', 'redirect', 'add-note'],
    accepted: ['cancel', 'add-note'],
    'sender-action-required': ['edit', 'submit', 'back-to-draft', 'cancel', 'add-note', 'add-attachment'],
    scheduled: ['add-note'],
    rejected: ['add-note'],
    cancelled: ['add-note'],
    completed: ['acknowledge-outcome', 'add-note'],
    'outcome-acknowledged': ['add-note'],
    redirected: ['add-note'],
    // Archived: nothing at all (every request answers 410).
    archived: [],
  },
  provider: {
    // A provider never sees a draft (contract §2); the table gives it nothing there either.
    draft: [],
    'pending-acceptance': ['cancel', 'redirect', 'accept', 'reject', 'request-action', 'add-note'],
    accepted: [
      'cancel',
      'redirect',
      'reject',
      'request-action',
      'upsert-appointment',
      'complete',
      'add-note',
      'add-attachment',
    ],
    'sender-action-required': ['cancel', 'add-note'],
    scheduled: ['cancel', 'upsert-appointment', 'complete', 'add-note', 'add-attachment'],
    rejected: ['add-note'],
    cancelled: ['add-note'],
    completed: ['add-note'],
    'outcome-acknowledged': ['add-note'],
    redirected: ['add-note'],
    // Archived: nothing at all (every request answers 410).
    archived: [],
  },
};

/**
 * What `party` may do in `status`: "and isCancellable" binds the sender's cancel only, and its
 * redirect, which takes the referral from its provider as a cancel does.
 */
export function contractAllowed(party: Party, status: Status, offeringCancellable: boolean): ActionName[] {
  return CONTRACT_ALLOWED[party][status].filter(
    (action) => offeringCancellable || party !== 'sender' || (action !== 'cancel' && action !== 'redirect'),
  );
}
