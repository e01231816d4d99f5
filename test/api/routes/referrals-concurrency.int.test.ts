// Optimistic concurrency (contract §4): GET returns ETag "<version>", a write may send If-Match and a
// stale one is 412 with nothing changed, and concurrent transitions are decided by a compare-and-set
// on `version`, so exactly one of two conflicting requests wins and the version moves once per change.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { ENGINES } from '../../support/engines.ts';
import { CONDITIONAL_ROUTES, REFERRAL_ROUTES, type ReferralRoute } from '../../support/referral-routes.ts';
import { referralIn, type ReferralJson } from '../../support/scenarios.ts';
import { isSoftDeleted, senderView, stateOf } from '../../support/store-inspection.ts';
import { createTestApp, type TestApp, type TestParty } from '../../support/test-app.ts';

const BY_NAME = CONDITIONAL_ROUTES.map((r) => [r.name, r] as const);

function routeNamed(name: string): ReferralRoute {
  const route = REFERRAL_ROUTES.find((r) => r.name === name);
  if (!route) throw new Error(`no route ${name}`);
  return route;
}

describe.each(ENGINES)('concurrency on %s', (engine) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp(engine);
  });
  afterAll(async () => {
    await t.close();
  });

  /** A referral that the malformed If-Match tests share: none of them may change it. */
  let shared: Promise<ReferralJson> | undefined;
  const ownerOf = (route: ReferralRoute): TestParty => (route.owner === 'sender' ? t.sender : t.provider);
  const ifMatch = (value: string) => ({ 'if-match': value });

  async function timelineTypes(id: string): Promise<string[]> {
    const rows = await t.ctx.db
      .selectFrom('timeline_events')
      .select('type')
      .where('referral_id', '=', id)
      .orderBy('seq')
      .execute();
    return rows.map((r) => r.type);
  }

  describe('If-Match', () => {
    it.each(BY_NAME)(
      '%s with a stale version → 412 and no change; the current one succeeds',
      async (_n, route) => {
        const referral = await referralIn(t, route.status);
        const owner = ownerOf(route);
        const before = await stateOf(t, referral.id);

        const stale = await t.request(
          owner,
          route.request(referral.id, owner, ifMatch(`"${before.version - 1}"`)),
        );
        expect(stale.statusCode, stale.body).toBe(412);
        expect(stale.headers['content-type']).toMatch(/^application\/problem\+json/);
        expect(stale.json()).toMatchObject({
          status: 412,
          code: 'version_mismatch',
          currentVersion: before.version,
        });
        const ahead = await t.request(
          owner,
          route.request(referral.id, owner, ifMatch(`"${before.version + 7}"`)),
        );
        expect(ahead.json()).toMatchObject({ code: 'version_mismatch' });
        expect(await stateOf(t, referral.id)).toEqual(before);
        expect(await isSoftDeleted(t, referral.id)).toBe(false);

        const current = await t.request(
          owner,
          route.request(referral.id, owner, ifMatch(`"${before.version}"`)),
        );
        expect(current.statusCode, current.body).toBeLessThan(300);
        if (route.name.startsWith('DELETE')) {
          expect(await isSoftDeleted(t, referral.id)).toBe(true);
        } else {
          expect((await stateOf(t, referral.id)).version).toBe(before.version + 1);
        }
      },
    );

    it('GET answers ETag "<version>", and that ETag is what If-Match takes', async () => {
      const referral = await referralIn(t, 'draft');
      const get = routeNamed('GET /referrals/:id').request(referral.id, t.sender);
      const read = await t.request(t.sender, get);
      expect(read.headers.etag).toBe(`W/"${referral.version}"`);
      const patch = routeNamed('PATCH /referrals/:id');
      const res = await t.request(
        t.sender,
        patch.request(referral.id, t.sender, ifMatch(String(read.headers.etag))),
      );
      expect(res.statusCode, res.body).toBe(200);
      expect(res.headers.etag).toBe(`W/"${referral.version + 1}"`);
      expect(res.json()).toMatchObject({ version: referral.version + 1 });
    });

    it.each([
      ['a weak ETag', (v: number) => `W/"${v}"`],
      ['*', () => '*'],
    ])('accepts %s', async (_label, value) => {
      const referral = await referralIn(t, 'pending-acceptance');
      const cancel = routeNamed('POST cancel');
      const res = await t.request(
        t.sender,
        cancel.request(referral.id, t.sender, ifMatch(value(referral.version))),
      );
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json()).toMatchObject({ status: 'cancelled', version: referral.version + 1 });
    });

    it('a weak ETag of another version is still a mismatch', async () => {
      const referral = await referralIn(t, 'pending-acceptance');
      const cancel = routeNamed('POST cancel');
      const res = await t.request(
        t.sender,
        cancel.request(referral.id, t.sender, ifMatch(`W/"${referral.version + 1}"`)),
      );
      expect(res.json()).toMatchObject({ status: 412, code: 'version_mismatch' });
    });

    it.each(['abc', '"v2"', '""', '"-1"', '"99999999999"', '2', '"2', '"1", "2"'])(
      'a malformed If-Match %s → 400 naming header.If-Match, and no change',
      async (value) => {
        shared ??= referralIn(t, 'pending-acceptance');
        const referral = await shared;
        const before = await stateOf(t, referral.id);
        const res = await t.request(
          t.sender,
          routeNamed('POST cancel').request(referral.id, t.sender, ifMatch(value)),
        );
        expect(res.statusCode, res.body).toBe(400);
        expect(res.json()).toMatchObject({
          code: 'validation_failed',
          errors: [expect.objectContaining({ path: 'header.If-Match' })],
        });
        expect(await stateOf(t, referral.id)).toEqual(before);
      },
    );
  });

  describe('If-Match on the link upsert', () => {
    it('applies when a referralId is given: a stale version is 412 and nothing changes', async () => {
      const draft = await referralIn(t, 'draft');
      const upsert = (version: number) =>
        t.request(t.sender, {
          method: 'POST',
          url: '/api/v1/links/upsert',
          headers: { 'if-match': `"${version}"` },
          payload: {
            ...t.sender.institution,
            requesterIdentifier: 'dr@example.org',
            referralId: draft.id,
            clinicalInfo: 'Updated through the link',
          },
        });
      const stale = await upsert(draft.version + 1);
      expect(stale.statusCode, stale.body).toBe(412);
      expect(stale.json()).toMatchObject({ code: 'version_mismatch', currentVersion: draft.version });
      expect(await stateOf(t, draft.id)).toMatchObject({ version: draft.version });
      const current = await upsert(draft.version);
      expect(current.statusCode, current.body).toBe(200);
      expect(await stateOf(t, draft.id)).toMatchObject({ version: draft.version + 1 });
    });
  });

  describe('concurrent transitions', () => {
    function outcomes(responses: LightMyRequestResponse[]) {
      const won = responses.filter((r) => r.statusCode === 200);
      const lost = responses.filter((r) => r.statusCode !== 200);
      return { won, lost };
    }

    it.each([1, 2, 3])('two cancels at once (round %i): one wins, the other is 409', async () => {
      const referral = await referralIn(t, 'accepted');
      const cancel = routeNamed('POST cancel');
      const responses = await Promise.all([
        t.request(t.sender, cancel.request(referral.id, t.sender)),
        t.request(t.provider, cancel.request(referral.id, t.provider)),
      ]);
      const { won, lost } = outcomes(responses);
      expect(won, responses.map((r) => r.body).join('\n')).toHaveLength(1);
      expect(lost).toHaveLength(1);
      expect(lost[0]!.json()).toMatchObject({
        status: 409,
        code: 'invalid_transition',
        currentStatus: 'cancelled',
      });
      const after = await senderView(t, referral.id);
      expect(after).toMatchObject({ status: 'cancelled', version: referral.version + 1 });
      expect((await timelineTypes(referral.id)).filter((type) => type === 'referral.cancelled')).toHaveLength(
        1,
      );
      const forwards = await t.ctx.db
        .selectFrom('outbox')
        .select('version')
        .where('referral_id', '=', referral.id)
        .where('version', '=', referral.version + 1)
        .execute();
      expect(forwards).toHaveLength(1);
    });

    it('two accepts at once: one wins, the other is 409', async () => {
      const referral = await referralIn(t, 'pending-acceptance');
      const accept = routeNamed('POST accept');
      const responses = await Promise.all([
        t.request(t.provider, accept.request(referral.id, t.provider)),
        t.request(t.provider, accept.request(referral.id, t.provider)),
      ]);
      const { won, lost } = outcomes(responses);
      expect(won).toHaveLength(1);
      expect(lost[0]!.json()).toMatchObject({ code: 'invalid_transition', currentStatus: 'accepted' });
      expect(won[0]!.json()).toMatchObject({ status: 'accepted', version: referral.version + 1 });
      expect((await timelineTypes(referral.id)).filter((type) => type === 'referral.accepted')).toHaveLength(
        1,
      );
      expect((await stateOf(t, referral.id)).version).toBe(referral.version + 1);
    });

    it('cancel against back-to-draft: exactly one of them happens', async () => {
      const referral = await referralIn(t, 'pending-acceptance');
      const responses = await Promise.all([
        t.request(t.sender, routeNamed('POST cancel').request(referral.id, t.sender)),
        t.request(t.sender, routeNamed('POST back-to-draft').request(referral.id, t.sender)),
      ]);
      const { won, lost } = outcomes(responses);
      expect(won).toHaveLength(1);
      expect(lost[0]!.json()).toMatchObject({ status: 409, code: 'invalid_transition' });
      const after = await stateOf(t, referral.id);
      expect(after.version).toBe(referral.version + 1);
      expect(['cancelled', 'draft']).toContain(after.status);
      const types = await timelineTypes(referral.id);
      expect(
        types.filter((type) => type === 'referral.cancelled' || type === 'referral.back-to-draft'),
      ).toEqual([after.status === 'cancelled' ? 'referral.cancelled' : 'referral.back-to-draft']);
    });

    it('two writes with the same If-Match: one wins, the other is 412', async () => {
      const referral = await referralIn(t, 'pending-acceptance');
      const headers = ifMatch(`"${referral.version}"`);
      const requests: [TestParty, InjectOptions][] = [
        [t.sender, routeNamed('POST cancel').request(referral.id, t.sender, headers)],
        [t.provider, routeNamed('POST accept').request(referral.id, t.provider, headers)],
      ];
      const responses = await Promise.all(requests.map(([who, options]) => t.request(who, options)));
      const { won, lost } = outcomes(responses);
      expect(won).toHaveLength(1);
      expect(lost[0]!.json()).toMatchObject({ status: 412, code: 'version_mismatch' });
      expect((await stateOf(t, referral.id)).version).toBe(referral.version + 1);
    });

    it('concurrent notes all land, each moving the version once', async () => {
      const referral = await referralIn(t, 'pending-acceptance');
      const notes = routeNamed('POST notes');
      const responses = await Promise.all(
        [t.sender, t.provider, t.sender, t.provider].map((who) =>
          t.request(who, notes.request(referral.id, who)),
        ),
      );
      for (const res of responses) expect(res.statusCode, res.body).toBe(201);
      const after = await stateOf(t, referral.id);
      expect(after.notes).toBe(4);
      expect(after.version).toBe(referral.version + 4);
      expect((await timelineTypes(referral.id)).filter((type) => type === 'note.created')).toHaveLength(4);
    });
  });
});
