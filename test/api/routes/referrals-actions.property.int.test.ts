// Property: whatever state a referral is in and whoever asks, an action is in the caller's
// allowedActions exactly when calling it succeeds, and an action in blockedActions fails with the
// listed reason (and sentence) in its problem+json. A reject, a request to act, a cancel, a return to
// draft or a redirect (to another provider's offering) gives a random code of the demo catalog's reasons for it, or none; each code given comes back on
// the timeline, in the event feed (without the comment) and in the FHIR view's Task.statusReason. Random referrals (any status, a cancellable
// offering or not) are driven through random calls of random actions by four callers: the sender,
// the provider, and a key of each role acting for the other side's institution. Each call is made
// with a valid body, as a client that read the referral would make it.
import type { Task } from '@medplum/fhirtypes';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Status } from '../../../src/domain/statuses.ts';
import {
  SUCCESS_STATUS,
  actionRequest,
  getRequest,
  reasonOf,
  type ActionInput,
  type ActionName,
  type ReasonedAction,
} from '../../support/action-calls.ts';
import { readFeedToEnd } from '../../support/event-feed.ts';
import { readFhir, resourcesOf } from '../../support/fhir-view.ts';
import { expectProblem } from '../../support/api-assertions.ts';
import { DOCUMENTED_ACTIONS, type ReferralBody } from '../../support/referral-shapes.ts';
import { APP_ENGINES } from '../../support/engines.ts';
import { call, LIVE_STATUSES, referralIn } from '../../support/scenarios.ts';
import { createTestApp, type TestApp, type TestParty } from '../../support/test-app.ts';

/** The timeline event each action that takes a reason writes. */
const REASONED_EVENT: Readonly<Record<ReasonedAction, string>> = {
  'back-to-draft': 'referral.back-to-draft',
  cancel: 'referral.cancelled',
  redirect: 'referral.redirected',
  reject: 'referral.rejected',
  'request-action': 'referral.sender-action-required',
};
const REASONED_ACTIONS: ReadonlySet<ActionName> = new Set(Object.keys(REASONED_EVENT) as ActionName[]);

/**
 * Random referrals per engine; each takes up to MAX_STEPS calls after reaching its status. Enough of
 * them that a coded step (a reason given on a call that succeeds) is all but sure among them.
 */
const RUNS = 60;
const MAX_STEPS = 8;

type CallerName = 'sender' | 'provider' | 'senderKeyAtProvider' | 'providerKeyAtSender';
const ROLE_OF: Readonly<Record<CallerName, 'sender' | 'provider'>> = {
  sender: 'sender',
  provider: 'provider',
  senderKeyAtProvider: 'sender',
  providerKeyAtSender: 'provider',
};

interface Step {
  readonly caller: CallerName;
  readonly action: ActionName;
  readonly input: ActionInput;
}

interface Plan {
  readonly status: Status;
  readonly offeringId: 'cgh-gastro' | 'cgh-ae';
  /** Who cancels, for a cancelled referral: the sender only where the offering lets it. */
  readonly cancelledBy: 'sender' | 'provider';
  readonly steps: readonly Step[];
}

/** Text a person would send: never blank (the API refuses whitespace alone), never NUL. */
const text = fc
  .oneof(
    fc.string({ minLength: 1, maxLength: 40, unit: 'grapheme' }),
    fc.constantFrom('Patient recovered', 'Please attach the ECG.', '陳大文', "O'Brien & <Sons>"),
  )
  .filter((s) => s.trim() !== '' && !s.includes('\u0000'));

const DAY = 86_400_000;
/** Appointments within the 5 years either side of now that the API accepts. */
const startAt = fc
  .integer({ min: -4 * 365, max: 4 * 365 })
  .map((days) => new Date(Date.now() + days * DAY).toISOString());

const step: fc.Arbitrary<Step> = fc.record({
  caller: fc.constantFrom<CallerName>('sender', 'provider', 'senderKeyAtProvider', 'providerKeyAtSender'),
  action: fc.constantFrom(...(DOCUMENTED_ACTIONS as ActionName[])),
  input: fc.record({
    text,
    appointmentId: fc.constantFrom('appt-1', 'appt-2'),
    appointmentStatus: fc.constantFrom('scheduled', 'actualized', 'no-show', 'cancelled'),
    startAt,
    reasonPick: fc.option(fc.nat({ max: 50 }), { nil: undefined }),
  }),
});

const plan: fc.Arbitrary<Plan> = fc.record({
  status: fc.constantFrom(...LIVE_STATUSES),
  offeringId: fc.constantFrom('cgh-gastro', 'cgh-ae'),
  cancelledBy: fc.constantFrom('sender', 'provider'),
  steps: fc.array(step, { minLength: 1, maxLength: MAX_STEPS }),
});

describe.each(APP_ENGINES)('actions listed against calls made, on %s', (engine) => {
  let t: TestApp;
  let callers: Record<CallerName, TestParty>;

  beforeAll(async () => {
    t = await createTestApp(engine);
    const key = async (role: 'sender' | 'provider', institutionId: string): Promise<TestParty> => {
      const created = await t.ctx.apiKeys.create({
        system: 'Epic',
        role,
        institutions: [{ idType: 'hci', id: institutionId }],
        environment: 'test',
      });
      return { key: created.key, institution: { institutionIdType: 'hci', institutionId } };
    };
    callers = {
      sender: t.sender,
      provider: t.provider,
      senderKeyAtProvider: await key('sender', t.provider.institution.institutionId),
      providerKeyAtSender: await key('provider', t.sender.institution.institutionId),
    };
  });
  afterAll(async () => {
    await t.close();
  });

  /** A referral in the plan's status, made over the API; returns its ID. */
  async function make({ status, offeringId, cancelledBy }: Plan): Promise<string> {
    if (status !== 'cancelled') return (await referralIn(t, status, { offeringId })).id;
    const { id } = await referralIn(t, 'pending-acceptance', { offeringId });
    const by = offeringId === 'cgh-ae' ? t.provider : callers[cancelledBy];
    await call(t, by, 'POST', `/api/v1/referrals/${id}/cancel`, { cancelNote: 'Patient recovered' });
    return id;
  }

  /** The coded reason each timeline event was given, by event ID: the feed must carry the same. */
  const coded = new Map<string, { code: string; display: string }>();

  /** After a call that gave a code: the timeline's latest event and the FHIR view carry it. */
  async function expectReasonKept(id: string, as: TestParty, action: ReasonedAction, input: ActionInput) {
    const reason = reasonOf(action, input.reasonPick);
    if (reason === undefined) return;
    const read = await t.request(as, getRequest(id, as));
    expect(read.statusCode, read.body).toBe(200);
    const view = read.json<ReferralBody>();
    // The step's own event: a cancel writes its appointments' cancellations after it.
    const last = view.timelineEvents.findLast((e) => e.type === REASONED_EVENT[action]);
    expect(last?.reason, `${action} ${reason.code}`).toEqual(reason);
    expect(last?.description).toContain(reason.display);
    coded.set(last!.id, reason);
    if (['rejected', 'cancelled', 'sender-action-required', 'redirected'].includes(view.status)) {
      const [task] = resourcesOf<Task>((await readFhir(t, as, id)).bundle, 'Task');
      expect(task?.statusReason?.coding?.[0]).toMatchObject({ code: reason.code, display: reason.display });
    }
    tally('coded');
  }

  /** How often each kind of answer was checked, so the property cannot pass on refusals alone. */
  const seen = new Map<string, number>();
  const tally = (kind: string) => seen.set(kind, (seen.get(kind) ?? 0) + 1);

  /** Reads the referral as the caller does, calls the step's action, and checks the two agree. */
  async function check(id: string, { caller, action, input }: Step): Promise<void> {
    const as = callers[caller];
    const read = await t.request(as, getRequest(id, as));
    const res = await t.request(as, actionRequest(action, id, as, input));
    if (read.statusCode === 404) {
      // Not visible to this caller (a provider's view of a draft, or deleted): no actions, no call.
      expectProblem(read, 404, 'referral_not_found');
      expectProblem(res, 404, 'referral_not_found');
      tally('not-visible');
      return;
    }
    expect(read.statusCode, read.body).toBe(200);
    const view = read.json<ReferralBody>();
    if (caller === 'sender') expect(view.isCancellable).toBe(view.allowedActions.includes('cancel'));

    const blocked = view.blockedActions.find((b) => b.action === action);
    if (view.allowedActions.includes(action)) {
      expect(res.statusCode, `${caller} ${action} from ${view.status}: ${res.body}`).toBe(
        SUCCESS_STATUS[action],
      );
      tally('allowed');
      if (REASONED_ACTIONS.has(action)) await expectReasonKept(id, as, action as ReasonedAction, input);
    } else if (blocked !== undefined) {
      const problem =
        blocked.reason === 'not-your-side'
          ? expectProblem(res, 403, 'forbidden_role')
          : expectProblem(res, 409, 'invalid_transition');
      expect(problem.reason, `${caller} ${action} from ${view.status}`).toBe(blocked.reason);
      expect(problem.detail).toBe(blocked.detail);
      tally(blocked.reason);
    } else {
      // An action the caller's role never has: refused for the role, whatever the state.
      expect(DOCUMENTED_ACTIONS).toContain(action);
      const problem = expectProblem(res, 403, 'forbidden_role');
      expect(problem).not.toHaveProperty('reason');
      tally('never');
      expect(
        ROLE_OF[caller] === 'sender'
          ? ['accept', 'reject', 'request-action', 'upsert-appointment', 'complete']
          : ['edit', 'submit', 'delete', 'back-to-draft', 'acknowledge-outcome'],
      ).toContain(action);
    }
  }

  it('an action is allowed exactly when its call succeeds, and a blocked one fails with its reason', async () => {
    await fc.assert(
      fc.asyncProperty(plan, async (p) => {
        const id = await make(p);
        for (const s of p.steps) await check(id, s);
      }),
      // Each run makes a referral over the API; a failure is reported as found, without shrinking.
      { numRuns: RUNS, endOnFailure: true },
    );
    for (const kind of ['allowed', 'not-in-status', 'not-your-side', 'never', 'coded']) {
      expect(seen.get(kind) ?? 0, kind).toBeGreaterThan(0);
    }
    // Every coded step is in both sides' feeds with its code and words, and no comment.
    for (const party of [t.sender, t.provider]) {
      const { events } = await readFeedToEnd(t, party, undefined, 500);
      for (const event of events.filter((e) => coded.has(e.id))) {
        expect(event.reason, event.type).toEqual(coded.get(event.id));
        expect(event.description).toContain(coded.get(event.id)!.display);
      }
    }
  }, 120_000);
});
