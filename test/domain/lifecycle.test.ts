// The lifecycle table against contract §4, triple by triple. The expectations below are transcribed
// from the contract on purpose (not derived from LIFECYCLE), so a change to the table that the
// contract does not make fails here. Pure: no database, so it runs once rather than per engine.
import { describe, expect, it } from 'vitest';
import { InvalidTransitionError } from '../../src/errors.ts';
import {
  APPOINTMENT_EVENTS,
  FINAL_STATUSES,
  LIFECYCLE,
  OPERATIONS,
  decide,
  isAllowed,
  isCancellable,
  outboxTopics,
  type Actor,
  type Operation,
} from '../../src/domain/lifecycle.ts';
import {
  APPOINTMENT_STATUSES,
  STATUSES,
  type AppointmentStatus,
  type Status,
} from '../../src/domain/statuses.ts';

const ACTORS: readonly Actor[] = ['sender', 'provider', 'system'];
// An archived referral takes no step at all: every list below is of the statuses before it.
const LIVE: readonly Status[] = STATUSES.filter((s) => s !== 'archived');
const SUBMITTED: readonly Status[] = LIVE.filter((s) => s !== 'draft');
const FINAL: readonly Status[] = ['rejected', 'cancelled', 'outcome-acknowledged', 'redirected'];

/** Contract §4: who may perform each operation from which statuses (cancellable offering). */
const ALLOWED_FROM: Readonly<Record<Operation, Partial<Record<Actor, readonly Status[]>>>> = {
  create: {},
  update: { sender: ['draft', 'sender-action-required'] },
  submit: { sender: ['draft', 'sender-action-required'] },
  delete: { sender: ['draft'] },
  cancel: {
    sender: ['pending-acceptance', 'accepted', 'sender-action-required'],
    provider: ['pending-acceptance', 'accepted', 'sender-action-required', 'scheduled'],
  },
  'back-to-draft': { sender: ['pending-acceptance', 'sender-action-required'] },
  // The sender only while it awaits acceptance (and only while it may cancel, see expectedAllowed).
  redirect: { sender: ['pending-acceptance'], provider: ['pending-acceptance', 'accepted'] },
  accept: { provider: ['pending-acceptance'] },
  reject: { provider: ['pending-acceptance', 'accepted'] },
  'request-action': { provider: ['pending-acceptance', 'accepted'] },
  'upsert-appointment': { provider: ['accepted', 'scheduled'] },
  complete: { provider: ['accepted', 'scheduled'] },
  'acknowledge-outcome': { sender: ['completed'] },
  // "any except deleted"; a provider never sees a draft (contract §2), so it cannot note one.
  'add-note': { sender: [...LIVE], provider: SUBMITTED },
  'add-attachment': {
    sender: ['draft', 'sender-action-required'],
    provider: ['accepted', 'scheduled'],
  },
  'remove-attachment': { sender: ['draft'] },
  'reminder-sent': { system: ['pending-acceptance'] },
  'triage-overdue': { system: ['pending-acceptance'] },
  // A forward may finish after the referral went back to draft; the timeline still records it.
  'ehr-forwarded': { system: [...LIVE] },
  'ehr-forward-failed': { system: [...LIVE] },
  // Retention, by refhub alone, and only once the referral is final (docs/api.md: "final").
  archive: { system: FINAL },
};

/** Contract §4: where each operation leads; 'same' keeps the status, undefined is a deletion. */
const LEADS_TO: Readonly<Record<Exclude<Operation, 'upsert-appointment'>, Status | 'same' | undefined>> = {
  create: 'draft',
  update: 'same',
  submit: 'pending-acceptance',
  delete: undefined,
  cancel: 'cancelled',
  'back-to-draft': 'draft',
  redirect: 'redirected',
  accept: 'accepted',
  reject: 'rejected',
  'request-action': 'sender-action-required',
  complete: 'completed',
  'acknowledge-outcome': 'outcome-acknowledged',
  'add-note': 'same',
  'add-attachment': 'same',
  'remove-attachment': 'same',
  'reminder-sent': 'same',
  'triage-overdue': 'same',
  'ehr-forwarded': 'same',
  'ehr-forward-failed': 'same',
  archive: 'archived',
};

/** Contract §4: the timeline event of each operation (appointments choose by their own status). */
const EVENTS: Readonly<Record<Operation, string | null>> = {
  create: 'referral.created',
  update: 'referral.updated',
  submit: 'referral.pending-acceptance',
  delete: null,
  cancel: 'referral.cancelled',
  'back-to-draft': 'referral.back-to-draft',
  redirect: 'referral.redirected',
  accept: 'referral.accepted',
  reject: 'referral.rejected',
  'request-action': 'referral.sender-action-required',
  'upsert-appointment': null,
  complete: 'referral.completed',
  'acknowledge-outcome': 'referral.outcome-acknowledged',
  'add-note': 'note.created',
  'add-attachment': 'referral.attachment-added',
  'remove-attachment': 'referral.attachment-removed',
  'reminder-sent': 'referral.provider-patient-create-reminder-sent',
  'triage-overdue': 'referral.triage-overdue',
  'ehr-forwarded': 'ehr.forwarded',
  'ehr-forward-failed': 'ehr.forward-failed',
  archive: 'referral.archived',
};

function expectedAllowed(op: Operation, actor: Actor, status: Status, cancellable: boolean): boolean {
  const from = ALLOWED_FROM[op][actor] ?? [];
  if (!from.includes(status)) return false;
  // "and isCancellable" binds the sender only; the provider may cancel a non-cancellable offering.
  return !((op === 'cancel' || op === 'redirect') && actor === 'sender' && !cancellable);
}

const TRIPLES = STATUSES.flatMap((status) =>
  OPERATIONS.flatMap((operation) => ACTORS.map((actor) => ({ status, operation, actor }))),
);

describe('LIFECYCLE against contract §4', () => {
  it('has exactly the operations of the contract', () => {
    expect([...OPERATIONS].sort()).toEqual(Object.keys(ALLOWED_FROM).sort());
  });

  it('walks every (status, operation, actor) triple', () => {
    // A guard that the walk below is exhaustive: 11 statuses × 21 operations × 3 actors.
    expect(TRIPLES).toHaveLength(STATUSES.length * OPERATIONS.length * ACTORS.length);
    expect(TRIPLES.length).toBe(693);
  });

  it("reads the final statuses from the table: those no person's step leaves, and archive's own", () => {
    expect([...FINAL_STATUSES].sort()).toEqual([...FINAL].sort());
    expect([...(LIFECYCLE.archive.from.system as readonly Status[])].sort()).toEqual([...FINAL].sort());
  });

  describe.each([true, false])('offering cancellable: %s', (cancellable) => {
    it.each(TRIPLES)('$operation by $actor from $status', ({ status, operation, actor }) => {
      const input = { status, offeringCancellable: cancellable, appointmentStatuses: ['scheduled' as const] };
      const allowed = expectedAllowed(operation, actor, status, cancellable);
      expect(isAllowed(operation, actor, input)).toBe(allowed);
      if (allowed) {
        const decision = decide(operation, actor, input);
        expect(decision.rule).toBe(LIFECYCLE[operation]);
        if (operation === 'upsert-appointment') {
          expect(decision.next).toBe('scheduled');
        } else {
          const to = LEADS_TO[operation];
          expect(decision.next).toBe(to === 'same' ? status : to);
        }
        return;
      }
      let thrown: unknown;
      try {
        decide(operation, actor, input);
      } catch (error) {
        thrown = error;
      }
      expect(thrown).toBeInstanceOf(InvalidTransitionError);
      const error = thrown as InvalidTransitionError;
      expect(error.code).toBe('invalid_transition');
      expect(error.status).toBe(409);
      expect(error.extra.currentStatus).toBe(status);
      if (
        (operation === 'cancel' || operation === 'redirect') &&
        actor === 'sender' &&
        ALLOWED_FROM[operation].sender?.includes(status)
      ) {
        // Allowed by status but the offering forbids it: the detail says why, not just the status.
        expect(error.message).toMatch(/isCancellable is false/);
      } else {
        expect(error.message).toContain(status);
      }
    });
  });

  it('names the timeline event of each operation as the contract does', () => {
    for (const operation of OPERATIONS) {
      expect(LIFECYCLE[operation].event, operation).toBe(EVENTS[operation]);
    }
    expect(APPOINTMENT_EVENTS).toEqual({
      scheduled: 'appt.scheduled',
      actualized: 'appt.actualized',
      'no-show': 'appt.no-show',
      cancelled: 'appt.cancelled',
    });
  });

  it('refuses create through decide: a new draft has no status to come from', () => {
    for (const status of STATUSES) {
      for (const actor of ACTORS) {
        expect(() => decide('create', actor, { status, offeringCancellable: true })).toThrow(
          InvalidTransitionError,
        );
      }
    }
    expect(LIFECYCLE.create.to).toEqual({ kind: 'status', status: 'draft' });
  });
});

describe('isCancellable', () => {
  const CANCELLABLE_STATUSES: readonly Status[] = [
    'pending-acceptance',
    'accepted',
    'sender-action-required',
  ];
  const rows = STATUSES.flatMap((status) =>
    [true, false].map((offeringCancellable) => ({
      status,
      offeringCancellable,
      expected: offeringCancellable && CANCELLABLE_STATUSES.includes(status),
    })),
  );

  it.each(rows)(
    '$status with offering cancellable=$offeringCancellable → $expected',
    ({ status, offeringCancellable, expected }) => {
      expect(isCancellable(status, offeringCancellable)).toBe(expected);
    },
  );

  it('is false for a scheduled referral even though its provider may still cancel it', () => {
    expect(isCancellable('scheduled', true)).toBe(false);
    expect(isAllowed('cancel', 'provider', { status: 'scheduled', offeringCancellable: false })).toBe(true);
  });
});

describe('outbox topics', () => {
  /** Every allowed transition from another status into pending-acceptance, over the whole table. */
  const intoPending = TRIPLES.filter(({ status, operation, actor }) => {
    const input = { status, offeringCancellable: true, appointmentStatuses: [] };
    return (
      status !== 'pending-acceptance' &&
      isAllowed(operation, actor, input) &&
      decide(operation, actor, input).next === 'pending-acceptance'
    );
  });

  it('finds the operations that lead to pending-acceptance (submit from draft and from sender-action-required)', () => {
    expect(intoPending.map((t) => `${t.operation}:${t.actor}:${t.status}`).sort()).toEqual([
      'submit:sender:draft',
      'submit:sender:sender-action-required',
    ]);
  });

  it('writes reminders exactly when the status enters or leaves pending-acceptance', () => {
    for (const { status, operation, actor } of TRIPLES) {
      const input = { status, offeringCancellable: true, appointmentStatuses: [] };
      if (!isAllowed(operation, actor, input)) continue;
      const decision = decide(operation, actor, input);
      const crosses = (status === 'pending-acceptance') !== (decision.next === 'pending-acceptance');
      const topics = outboxTopics(decision, status);
      expect(topics.includes('reminders'), `${operation}:${actor}:${status}`).toBe(crosses);
      expect(topics.filter((t) => t === 'reminders').length).toBeLessThanOrEqual(1);
    }
  });

  it('enqueues ehr-forward for submit, cancel, complete and redirect, and for nothing else (contract §7)', () => {
    // Complete sends the national record the form again, with the provider's outcome; a redirect
    // sends the redirected referral's final form (its successor's first goes as a submit's).
    const forwarding = OPERATIONS.filter((op) =>
      (LIFECYCLE[op].outbox as readonly string[]).includes('ehr-forward'),
    );
    expect(forwarding.sort()).toEqual(['cancel', 'complete', 'redirect', 'submit']);
  });
});

describe('upsert-appointment', () => {
  /** Every sequence of up to three appointment statuses. */
  const sequences: AppointmentStatus[][] = [[]];
  for (let length = 1; length <= 3; length++) {
    for (const prefix of sequences.filter((s) => s.length === length - 1)) {
      for (const status of APPOINTMENT_STATUSES) sequences.push([...prefix, status]);
    }
  }

  it.each(['accepted', 'scheduled'] as const)(
    'from %s: scheduled while any appointment is not cancelled, else accepted',
    (status) => {
      expect(sequences).toHaveLength(1 + 4 + 16 + 64);
      for (const appointmentStatuses of sequences) {
        const expected = appointmentStatuses.some((s) => s !== 'cancelled') ? 'scheduled' : 'accepted';
        const decision = decide('upsert-appointment', 'provider', {
          status,
          offeringCancellable: true,
          appointmentStatuses,
        });
        expect(decision.next, appointmentStatuses.join(',')).toBe(expected);
      }
    },
  );

  it('keeps a referral scheduled when an appointment took place or was missed', () => {
    for (const outcome of ['actualized', 'no-show'] as const) {
      expect(
        decide('upsert-appointment', 'provider', {
          status: 'scheduled',
          offeringCancellable: true,
          appointmentStatuses: [outcome],
        }).next,
      ).toBe('scheduled');
    }
  });

  it('goes back to accepted when the last live appointment is cancelled', () => {
    expect(
      decide('upsert-appointment', 'provider', {
        status: 'scheduled',
        offeringCancellable: true,
        appointmentStatuses: ['cancelled', 'cancelled'],
      }).next,
    ).toBe('accepted');
  });
});
