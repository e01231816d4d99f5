// allowedActions and blockedActions over HTTP: in the get, the list and the writes' answers, for each
// party in every status, and a blocked action's call refused with the reason and sentence the
// referral gave for it. What each party may do is transcribed from contract §4
// (test/support/contract-actions.ts).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { STATUSES, type Party, type Status } from '../../../src/domain/statuses.ts';
import { actionRequest, getRequest, type ActionName } from '../../support/action-calls.ts';
import { expectProblem } from '../../support/api-assertions.ts';
import { PARTY_ACTIONS, contractAllowed } from '../../support/contract-actions.ts';
import { APP_ENGINES } from '../../support/engines.ts';
import { expectReferralShape, expectSummaryShape, type SummaryJson } from '../../support/referral-shapes.ts';
import { call, referralIn } from '../../support/scenarios.ts';
import { createTestApp, type TestApp, type TestParty } from '../../support/test-app.ts';

const sorted = (actions: readonly string[]) => [...actions].sort();

describe.each(APP_ENGINES)('allowed and blocked actions on %s', (engine) => {
  let t: TestApp;
  /** A sender key of the provider's institution, and a provider key of the sender's. */
  let senderKeyAtProvider: TestParty;
  let providerKeyAtSender: TestParty;

  beforeAll(async () => {
    t = await createTestApp(engine);
    const key = async (role: Party, institutionId: string): Promise<TestParty> => {
      const created = await t.ctx.apiKeys.create({
        system: 'Epic',
        role,
        institutions: [{ idType: 'hci', id: institutionId }],
        environment: 'test',
      });
      return { key: created.key, institution: { institutionIdType: 'hci', institutionId } };
    };
    senderKeyAtProvider = await key('sender', t.provider.institution.institutionId);
    providerKeyAtSender = await key('provider', t.sender.institution.institutionId);
  });
  afterAll(async () => {
    await t.close();
  });

  const partyOf = (party: Party) => (party === 'sender' ? t.sender : t.provider);

  async function get(id: string, as: TestParty) {
    const res = await t.request(as, getRequest(id, as));
    expect(res.statusCode, res.body).toBe(200);
    return expectReferralShape(res.json());
  }

  /** The referral as an item of the caller's list. */
  async function listItem(id: string, as: TestParty): Promise<SummaryJson> {
    const { institutionIdType, institutionId } = as.institution;
    const page = (await call(
      t,
      as,
      'GET',
      `/api/v1/institutions/${institutionIdType}/${institutionId}/referrals?pageSize=1000`,
    )) as { data: SummaryJson[] };
    const item = page.data.find((r) => r.id === id);
    expect(item, `referral ${id} in the list`).toBeDefined();
    return expectSummaryShape(item);
  }

  /** Calls a blocked action and checks the refusal carries the reason and sentence listed for it. */
  async function expectRefusedAsListed(
    id: string,
    as: TestParty,
    blocked: { action: string; reason: string; detail: string },
    status: Status,
  ) {
    const res = await t.request(as, actionRequest(blocked.action as ActionName, id, as));
    const problem =
      blocked.reason === 'not-your-side'
        ? expectProblem(res, 403, 'forbidden_role')
        : expectProblem(res, 409, 'invalid_transition');
    expect(problem.reason, blocked.action).toBe(blocked.reason);
    expect(problem.detail).toBe(blocked.detail);
    if (blocked.reason !== 'not-your-side') expect(problem.currentStatus).toBe(status);
  }

  // An archived referral is reached only by retention and answers every read with 410
  // (test/services/retention/referrals-archive.int.test.ts).
  describe.each(STATUSES.filter((status) => status !== 'archived'))('a referral in %s', (status) => {
    it.each(['sender', 'provider'] as const)(
      'the %s gets its actions in the get and the list, and a blocked one is refused as listed',
      async (party) => {
        const { id } = await referralIn(t, status);
        const as = partyOf(party);
        if (party === 'provider' && status === 'draft') {
          expectProblem(await t.request(as, getRequest(id, as)), 404, 'referral_not_found');
          return;
        }
        const view = await get(id, as);
        expect(sorted(view.allowedActions)).toEqual(sorted(contractAllowed(party, status, true)));
        expect(sorted([...view.allowedActions, ...view.blockedActions.map((b) => b.action)])).toEqual(
          sorted(PARTY_ACTIONS[party]),
        );
        for (const b of view.blockedActions) expect(b.reason).toBe('not-in-status');
        // isCancellable is the caller's own answer.
        expect(view.isCancellable).toBe(contractAllowed(party, status, true).includes('cancel'));
        expect(view.isCancellable).toBe(view.allowedActions.includes('cancel'));

        const item = await listItem(id, as);
        expect(item.allowedActions).toEqual(view.allowedActions);
        expect(item.blockedActions).toEqual(view.blockedActions);

        for (const blocked of view.blockedActions) await expectRefusedAsListed(id, as, blocked, status);
        // Refusals change nothing.
        expect((await get(id, as)).version).toBe(view.version);
      },
    );
  });

  it("an offering that is not cancellable blocks the sender's cancel with its own reason, not the provider's", async () => {
    const { id } = await referralIn(t, 'accepted', { offeringId: 'cgh-ae' });
    const asSender = await get(id, t.sender);
    expect(asSender.isCancellable).toBe(false);
    expect(asSender.allowedActions).toEqual(['add-note']);
    const cancel = asSender.blockedActions.find((b) => b.action === 'cancel');
    expect(cancel).toEqual({
      action: 'cancel',
      reason: 'offering-not-cancellable',
      detail: expect.stringMatching(/isCancellable is false/) as unknown,
    });
    expect((await listItem(id, t.sender)).blockedActions).toEqual(asSender.blockedActions);
    await expectRefusedAsListed(id, t.sender, cancel!, 'accepted');

    const asProvider = await get(id, t.provider);
    expect(asProvider.allowedActions).toContain('cancel');
    // The provider's own answer, in allowedActions and isCancellable alike.
    expect(asProvider.isCancellable).toBe(true);
    const res = await t.request(t.provider, actionRequest('cancel', id, t.provider));
    expect(res.statusCode, res.body).toBe(200);
  });

  it.each([
    ['a sender key of the provider institution', 'sender'],
    ['a provider key of the sender institution', 'provider'],
  ] as const)('%s: every action of its role is blocked as not-your-side', async (_label, role) => {
    const as = role === 'sender' ? senderKeyAtProvider : providerKeyAtSender;
    const { id } = await referralIn(t, 'pending-acceptance');
    const view = await get(id, as);
    expect(view.allowedActions).toEqual([]);
    expect(sorted(view.blockedActions.map((b) => b.action))).toEqual(sorted(PARTY_ACTIONS[role]));
    for (const b of view.blockedActions) {
      expect(b.reason).toBe('not-your-side');
      expect(b.detail).toBe(
        `This ${role} key acts for hci:${as.institution.institutionId}, which is not this referral's ${role}.`,
      );
    }
    expect((await listItem(id, as)).blockedActions).toEqual(view.blockedActions);
    for (const blocked of view.blockedActions) {
      await expectRefusedAsListed(id, as, blocked, 'pending-acceptance');
    }
  });

  it('a call of an action the role never has is 403 without a reason', async () => {
    const { id } = await referralIn(t, 'pending-acceptance');
    const problem = expectProblem(
      await t.request(t.sender, actionRequest('accept', id, t.sender)),
      403,
      'forbidden_role',
    );
    expect(problem).not.toHaveProperty('reason');
  });

  it('an edit may not change the offering after submission: 409 offering-locked, while edit is allowed', async () => {
    const { id } = await referralIn(t, 'sender-action-required');
    expect((await get(id, t.sender)).allowedActions).toContain('edit');
    const res = await t.request(t.sender, {
      method: 'PATCH',
      url: `/api/v1/referrals/${id}`,
      payload: { ...t.sender.institution, offeringId: 'cgh-gpfirst' },
    });
    const problem = expectProblem(res, 409, 'invalid_transition');
    expect(problem).toMatchObject({ reason: 'offering-locked', currentStatus: 'sender-action-required' });
  });

  it("the writes' answers carry the actions after the write; a delete's, as the draft was", async () => {
    const { id } = await referralIn(t, 'pending-acceptance');
    const accepted = await call(t, t.provider, 'POST', `/api/v1/referrals/${id}/accept`, {});
    expect(sorted(expectReferralShape(accepted).allowedActions)).toEqual(
      sorted(contractAllowed('provider', 'accepted', true)),
    );
    const cancelled = expectSummaryShape(
      await call(t, t.sender, 'POST', `/api/v1/referrals/${id}/cancel`, { cancelNote: 'Patient recovered' }),
    );
    expect(cancelled.allowedActions).toEqual(['add-note']);
    expect(cancelled.isCancellable).toBe(false);

    const draft = await referralIn(t, 'draft');
    const res = await t.request(t.sender, actionRequest('delete', draft.id, t.sender));
    expect(res.statusCode, res.body).toBe(200);
    const deleted = expectSummaryShape(res.json());
    expect(sorted(deleted.allowedActions)).toEqual(sorted(contractAllowed('sender', 'draft', true)));
  });
});
