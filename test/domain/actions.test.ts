// allowedActions and blockedActions over every (party, status, offering cancellable) combination.
// What each party may do is transcribed from contract §4 (test/support/contract-actions.ts, not
// derived from LIFECYCLE), and every blocked action is checked against the refusal the commands
// throw: the same reason code and the same sentence. Pure: no database, so it runs once rather than
// per engine.
import { describe, expect, it } from 'vitest';
import {
  ACTIONS,
  BLOCK_REASONS,
  OPERATION_OF_ACTION,
  actionsFor,
  actionsOfParty,
  callerActions,
  type Action,
} from '../../src/domain/actions.ts';
import { actingParty, type InstitutionRef } from '../../src/domain/access.ts';
import { LIFECYCLE, OPERATIONS, decide, isCancellable } from '../../src/domain/lifecycle.ts';
import { STATUSES, type Party, type Status } from '../../src/domain/statuses.ts';
import { ForbiddenRoleError, InvalidTransitionError, REFUSAL_REASONS } from '../../src/errors.ts';
import { CONTRACT_ALLOWED as ALLOWED, PARTY_ACTIONS, contractAllowed } from '../support/contract-actions.ts';

const PARTIES: readonly Party[] = ['sender', 'provider'];
const SENDER: InstitutionRef = { idType: 'hci', id: 'S1234A' };
const PROVIDER: InstitutionRef = { idType: 'hci', id: 'S9001Z' };

const COMBINATIONS = PARTIES.flatMap((party) =>
  STATUSES.flatMap((status) =>
    [true, false].map((offeringCancellable) => ({ party, status, offeringCancellable })),
  ),
);

/** What the commands throw for the action: the refusal a client gets in the problem. */
function refusalThrown(action: Action, party: Party, status: Status, offeringCancellable: boolean) {
  try {
    decide(OPERATION_OF_ACTION[action], party, { status, offeringCancellable });
  } catch (error) {
    if (error instanceof InvalidTransitionError) {
      return { reason: error.reason, detail: error.message, extra: error.extra };
    }
    throw error;
  }
  return undefined;
}

describe('the actions and the lifecycle table', () => {
  it('name every operation a sender or a provider performs on an existing referral, and no other', () => {
    // Removing an attachment is a command on the attachment, not an action on the referral.
    const clientOperations = OPERATIONS.filter(
      (op) =>
        op !== 'create' &&
        op !== 'remove-attachment' &&
        (Object.hasOwn(LIFECYCLE[op].from, 'sender') || Object.hasOwn(LIFECYCLE[op].from, 'provider')),
    );
    expect(Object.values(OPERATION_OF_ACTION).sort()).toEqual([...clientOperations].sort());
    expect(Object.keys(OPERATION_OF_ACTION).sort()).toEqual([...ACTIONS].sort());
    // The names are the table's, except edit, the update.
    for (const action of ACTIONS) {
      expect(OPERATION_OF_ACTION[action]).toBe(action === 'edit' ? 'update' : action);
    }
    // The system's bookkeeping is no client action.
    for (const op of ['reminder-sent', 'ehr-forwarded', 'ehr-forward-failed'] as const) {
      expect(Object.values(OPERATION_OF_ACTION)).not.toContain(op);
    }
  });

  it.each(PARTIES)('the %s has the actions of contract §4 in general', (party) => {
    expect([...actionsOfParty(party)].sort()).toEqual([...PARTY_ACTIONS[party]].sort());
  });

  it('every block reason is a refusal reason of the problem document', () => {
    for (const reason of BLOCK_REASONS) expect(REFUSAL_REASONS).toContain(reason);
  });
});

describe('actionsFor every (party, status, offering cancellable)', () => {
  it('covers every combination', () => {
    expect(COMBINATIONS).toHaveLength(PARTIES.length * STATUSES.length * 2);
  });

  it.each(COMBINATIONS)(
    '$party in $status, offering cancellable: $offeringCancellable',
    ({ party, status, offeringCancellable }) => {
      const { allowedActions, blockedActions } = actionsFor(party, { status, offeringCancellable });
      const expected = contractAllowed(party, status, offeringCancellable);
      expect([...allowedActions].sort()).toEqual([...expected].sort());

      // Allowed and blocked split the party's actions, in the order of ACTIONS, each once.
      const blocked = blockedActions.map((b) => b.action);
      expect([...allowedActions, ...blocked].sort()).toEqual([...PARTY_ACTIONS[party]].sort());
      expect(allowedActions).toEqual(ACTIONS.filter((a) => allowedActions.includes(a)));
      expect(blocked).toEqual(ACTIONS.filter((a) => blocked.includes(a)));

      // An allowed action is decided; a blocked one is refused with the same reason and sentence.
      for (const action of allowedActions) {
        expect(refusalThrown(action, party, status, offeringCancellable)).toBeUndefined();
      }
      for (const b of blockedActions) {
        const thrown = refusalThrown(b.action, party, status, offeringCancellable);
        expect(thrown).toEqual({
          reason: b.reason,
          detail: b.detail,
          extra: { currentStatus: status, reason: b.reason },
        });
        const offeringBlocks =
          party === 'sender' &&
          (b.action === 'cancel' || b.action === 'redirect') &&
          !offeringCancellable &&
          ALLOWED.sender[status].includes(b.action);
        expect(b.reason).toBe(offeringBlocks ? 'offering-not-cancellable' : 'not-in-status');
        if (b.reason === 'not-in-status') expect(b.detail).toContain(`whose status is ${status}`);
        else expect(b.detail).toMatch(/isCancellable is false/);
      }

      // isCancellable stays the sender's answer: whether the sender may cancel.
      if (party === 'sender') {
        expect(isCancellable(status, offeringCancellable)).toBe(allowedActions.includes('cancel'));
      }
    },
  );

  it.each(COMBINATIONS)(
    'not on the $party side in $status: every action of the side is blocked as not-your-side',
    ({ party, status, offeringCancellable }) => {
      const { allowedActions, blockedActions } = actionsFor(
        party,
        { status, offeringCancellable },
        { onSide: false, sideDetail: 'Not this side.' },
      );
      expect(allowedActions).toEqual([]);
      expect(blockedActions).toEqual(
        ACTIONS.filter((a) => PARTY_ACTIONS[party].includes(a)).map((action) => ({
          action,
          reason: 'not-your-side',
          detail: 'Not this side.',
        })),
      );
    },
  );
});

describe('callerActions', () => {
  const referral = (status: Status) => ({ status, sender: SENDER, provider: PROVIDER });

  it('gives a key the actions of its role, on its own side', () => {
    expect(callerActions({ role: 'sender', institution: SENDER }, referral('draft'), true)).toEqual(
      actionsFor('sender', { status: 'draft', offeringCancellable: true }),
    );
    expect(callerActions({ role: 'provider', institution: PROVIDER }, referral('accepted'), false)).toEqual(
      actionsFor('provider', { status: 'accepted', offeringCancellable: false }),
    );
  });

  it('answers every status and offering alike on repeated calls, each caller with arrays of its own', () => {
    for (const { party, status, offeringCancellable } of COMBINATIONS) {
      const institution = party === 'sender' ? SENDER : PROVIDER;
      const first = callerActions({ role: party, institution }, referral(status), offeringCancellable);
      const answer = structuredClone(first);
      first.allowedActions.push('accept');
      first.blockedActions.length = 0;
      expect(callerActions({ role: party, institution }, referral(status), offeringCancellable)).toEqual(
        answer,
      );
    }
  });

  it('blocks a key on the other side with the reason and sentence actingParty refuses with', () => {
    for (const [role, institution] of [
      ['sender', PROVIDER],
      ['provider', SENDER],
    ] as const) {
      const { allowedActions, blockedActions } = callerActions(
        { role, institution },
        referral('pending-acceptance'),
        true,
      );
      expect(allowedActions).toEqual([]);
      expect(blockedActions.map((b) => b.action).sort()).toEqual([...PARTY_ACTIONS[role]].sort());
      for (const b of blockedActions) {
        let thrown: unknown;
        try {
          actingParty(OPERATION_OF_ACTION[b.action], role, referral('pending-acceptance'), institution);
        } catch (error) {
          thrown = error;
        }
        expect(thrown).toBeInstanceOf(ForbiddenRoleError);
        const refused = thrown as ForbiddenRoleError;
        expect(refused.extra).toEqual({ reason: 'not-your-side' });
        expect(b).toEqual({ action: b.action, reason: 'not-your-side', detail: refused.message });
      }
    }
  });

  it('a provider key on a draft: the provider side does not exist yet', () => {
    const { allowedActions, blockedActions } = callerActions(
      { role: 'provider', institution: PROVIDER },
      referral('draft'),
      true,
    );
    expect(allowedActions).toEqual([]);
    expect(new Set(blockedActions.map((b) => b.reason))).toEqual(new Set(['not-your-side']));
  });

  it('an ops key acts on no referral: no actions at all', () => {
    expect(callerActions({ role: 'ops', institution: SENDER }, referral('accepted'), true)).toEqual({
      allowedActions: [],
      blockedActions: [],
    });
  });

  it('a key whose role never has an action gets 403 without a reason, and the action is in neither list', () => {
    const { allowedActions, blockedActions } = callerActions(
      { role: 'sender', institution: SENDER },
      referral('pending-acceptance'),
      true,
    );
    const listed = [...allowedActions, ...blockedActions.map((b) => b.action)];
    expect(listed).not.toContain('accept');
    let thrown: unknown;
    try {
      actingParty('accept', 'sender', referral('pending-acceptance'), SENDER);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(ForbiddenRoleError);
    expect((thrown as ForbiddenRoleError).extra).toEqual({});
  });
});
