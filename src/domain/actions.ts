// What a party may do with a referral now (`allowedActions[]`), and why it may not do the rest of
// what its side can ever do (`blockedActions[]`), read from the lifecycle table alone. A refused call
// carries the same reason code in its problem: decide() and actingParty() refuse with the refusal
// this module lists, so a client's screen and the API cannot disagree.
//
// An action is a command of a sender or a provider on an existing referral: each operation of the
// table that a sender or a provider performs, except `create` (no referral yet). The system's
// bookkeeping (reminders, EHR deliveries) is not an action, and neither is removing an attachment (a
// command on the attachment, which the table allows from a draft). An action the party's side never
// has (a sender accepting) is in neither list.
import type { RefusalReason } from '../errors.ts';
import { isOnSide, notYourSideDetail, type InstitutionRef, type ReferralParties } from './access.ts';
import { LIFECYCLE, refusalOf, type DecisionInput, type Operation } from './lifecycle.ts';
import type { Party, Role } from './statuses.ts';

/** The actions, in the order the lists give them: the sender's way through, then the provider's. */
export const ACTIONS = [
  'edit',
  'submit',
  'delete',
  'back-to-draft',
  'cancel',
  'redirect',
  'accept',
  'reject',
  'request-action',
  'upsert-appointment',
  'complete',
  'acknowledge-outcome',
  'add-note',
  'add-attachment',
] as const;
export type Action = (typeof ACTIONS)[number];

/**
 * The operation of the lifecycle table each action runs. The names are the table's, except `edit`:
 * the `update` operation (PATCH, the link upsert on an existing referral, the web form's save).
 */
export const OPERATION_OF_ACTION: Readonly<Record<Action, Operation>> = {
  edit: 'update',
  submit: 'submit',
  delete: 'delete',
  'back-to-draft': 'back-to-draft',
  cancel: 'cancel',
  redirect: 'redirect',
  accept: 'accept',
  reject: 'reject',
  'request-action': 'request-action',
  'upsert-appointment': 'upsert-appointment',
  complete: 'complete',
  'acknowledge-outcome': 'acknowledge-outcome',
  'add-note': 'add-note',
  'add-attachment': 'add-attachment',
};

/** The reasons blockedActions[] gives; `offering-locked` depends on a request's body, not on state. */
export type BlockReason = Extract<
  RefusalReason,
  'not-your-side' | 'not-in-status' | 'offering-not-cancellable'
>;
export const BLOCK_REASONS: readonly BlockReason[] = [
  'not-your-side',
  'not-in-status',
  'offering-not-cancellable',
];

export interface BlockedAction {
  readonly action: Action;
  readonly reason: BlockReason;
  /** A sentence for people; the same as the refused call's problem `detail`. */
  readonly detail: string;
}

export interface ReferralActions {
  readonly allowedActions: Action[];
  readonly blockedActions: BlockedAction[];
}

/** The actions a party's side has at all: those whose operation names the party in the table. */
export function actionsOfParty(party: Party): Action[] {
  return ACTIONS.filter((action) => Object.hasOwn(LIFECYCLE[OPERATION_OF_ACTION[action]].from, party));
}

/**
 * The actions of `party` on a referral in `input.status`: allowed, or blocked with the table's
 * reason. `onSide` is false when the calling institution is not that side of this referral (a sender
 * key acting for the referral's provider); then every action is blocked as `not-your-side`, with
 * `sideDetail` as the sentence.
 */
export function actionsFor(
  party: Party,
  input: DecisionInput,
  side: { readonly onSide: boolean; readonly sideDetail?: string } = { onSide: true },
): ReferralActions {
  const allowedActions: Action[] = [];
  const blockedActions: BlockedAction[] = [];
  for (const action of actionsOfParty(party)) {
    if (!side.onSide) {
      blockedActions.push({
        action,
        reason: 'not-your-side',
        detail: side.sideDetail ?? `This referral's ${party} is another institution.`,
      });
      continue;
    }
    const refusal = refusalOf(OPERATION_OF_ACTION[action], party, input);
    if (refusal === undefined) allowedActions.push(action);
    else blockedActions.push({ action, ...refusal });
  }
  return { allowedActions, blockedActions };
}

/**
 * The actions of a caller on a referral it sees: its key's role is the party it acts as (as
 * actingParty decides), for the institution it names. An ops key acts on no referral.
 */
export function callerActions(
  caller: { readonly role: Role; readonly institution: InstitutionRef },
  referral: ReferralParties,
  offeringCancellable: boolean,
): ReferralActions {
  if (caller.role === 'ops') return { allowedActions: [], blockedActions: [] };
  const onSide = isOnSide(referral, caller.institution, caller.role);
  // On its side, a party's actions depend on the status and the offering alone, so a list of fifty
  // referrals shares a handful of answers (each caller gets its own arrays; the entries are read-only).
  // Off its side, every action is blocked with a sentence that names the caller's institution.
  if (!onSide) {
    return actionsFor(
      caller.role,
      { status: referral.status, offeringCancellable },
      { onSide, sideDetail: notYourSideDetail(caller.role, caller.institution) },
    );
  }
  const key = `${caller.role} ${referral.status} ${offeringCancellable}`;
  let actions = ON_SIDE_ACTIONS.get(key);
  if (actions === undefined) {
    actions = actionsFor(caller.role, { status: referral.status, offeringCancellable });
    ON_SIDE_ACTIONS.set(key, actions);
  }
  return { allowedActions: [...actions.allowedActions], blockedActions: [...actions.blockedActions] };
}

/** callerActions' answers on the caller's own side, by role, status and the offering's cancellability. */
const ON_SIDE_ACTIONS = new Map<string, ReferralActions>();
