// Tenancy and authorization (contract §2): a referral exists only for its sender and, once submitted,
// its provider. Everybody else gets 404 on every route and changes nothing. Roles and institutions a
// key may act for are enforced with 403, a missing or bad key with 401, and denied attempts are audited.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LightMyRequestResponse } from 'fastify';
import { APP_ENGINES } from '../../support/engines.ts';
import { REFERRAL_ROUTES, REQUESTER, type ReferralRoute } from '../../support/referral-routes.ts';
import type { Status } from '../../../src/domain/statuses.ts';
import { call, referralIn, type ReferralJson } from '../../support/scenarios.ts';
import { apiKeyIdOf, auditRowsOf, isSoftDeleted, stateOf } from '../../support/store-inspection.ts';
import { createTestApp, type TestApp, type TestParty } from '../../support/test-app.ts';

const BY_NAME = REFERRAL_ROUTES.map((r) => [r.name, r] as const);

function routeNamed(name: string): ReferralRoute {
  const route = REFERRAL_ROUTES.find((r) => r.name === name);
  if (!route) throw new Error(`no route ${name}`);
  return route;
}

function expectProblem(res: LightMyRequestResponse, status: number, code: string) {
  expect(res.statusCode, res.body).toBe(status);
  expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
  expect(res.json()).toMatchObject({ status, code });
}

describe.each(APP_ENGINES)('tenancy on %s', (engine) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp(engine);
  });
  afterAll(async () => {
    await t.close();
  });

  const shared = new Map<Status, Promise<ReferralJson>>();
  /** One referral per status, shared by the tests that must leave it exactly as it is. */
  function untouched(status: Status): Promise<ReferralJson> {
    let referral = shared.get(status);
    if (!referral) {
      referral = referralIn(t, status);
      shared.set(status, referral);
    }
    return referral;
  }

  async function expectDeniedAudit(res: LightMyRequestResponse, who: TestParty, referralId?: string) {
    expect(await auditRowsOf(t, res)).toEqual([
      expect.objectContaining({
        outcome: 'denied',
        api_key_id: await apiKeyIdOf(t, who),
        ...(referralId === undefined ? {} : { referral_ids: [referralId] }),
      }),
    ]);
  }

  describe('a key of another institution, acting for its own institution', () => {
    it.each(BY_NAME)('%s → 404 referral_not_found, and the referral is unchanged', async (_name, route) => {
      const referral = await untouched(route.status);
      const before = await stateOf(t, referral.id);
      for (const intruder of [t.otherSender, t.otherProvider]) {
        const res = await t.request(intruder, route.request(referral.id, intruder));
        expectProblem(res, 404, 'referral_not_found');
        expect(await auditRowsOf(t, res)).toEqual([
          expect.objectContaining({
            outcome: 'denied',
            api_key_id: await apiKeyIdOf(t, intruder),
            institution_id_type: 'hci',
            institution_id: intruder.institution.institutionId,
            referral_ids: [referral.id],
          }),
        ]);
      }
      expect(await stateOf(t, referral.id)).toEqual(before);
      expect(await isSoftDeleted(t, referral.id)).toBe(false);
    });

    it('answers exactly as for an ID that does not exist, so IDs cannot be probed', async () => {
      const referral = await referralIn(t, 'pending-acceptance');
      const route = routeNamed('POST notes');
      const existing = await t.request(t.otherSender, route.request(referral.id, t.otherSender));
      const missingId = randomUUID();
      const missing = await t.request(t.otherSender, route.request(missingId, t.otherSender));
      const shape = (res: LightMyRequestResponse, id: string) => {
        const body = res.json<Record<string, unknown>>();
        delete body.requestId;
        return { ...body, detail: String(body.detail).replace(id, '<id>') };
      };
      expect(existing.statusCode).toBe(404);
      expect(shape(existing, referral.id)).toEqual(shape(missing, missingId));
    });
  });

  describe('visibility of drafts and lists', () => {
    it('the provider sees a referral only once it is submitted; other institutions never list it', async () => {
      const draft = await referralIn(t, 'draft');
      const get = routeNamed('GET /referrals/:id');
      const listIds = async (who: TestParty) => {
        const { institutionIdType, institutionId } = who.institution;
        const base = `/api/v1/institutions/${institutionIdType}/${institutionId}/referrals`;
        const listed = await call(t, who, 'GET', `${base}?pageSize=1000`);
        const searched = await t.request(who, {
          method: 'POST',
          url: `${base}/search`,
          payload: { pageSize: 1000, patientUin: 'S1234567D' },
        });
        expect(searched.statusCode, searched.body).toBe(200);
        const ids = (page: Record<string, unknown>) => (page.data as { id: string }[]).map((r) => r.id);
        return { list: ids(listed), search: ids(searched.json()) };
      };

      expectProblem(
        await t.request(t.provider, get.request(draft.id, t.provider)),
        404,
        'referral_not_found',
      );
      const listedBy = async (who: TestParty) => {
        const { list, search } = await listIds(who);
        return { list: list.includes(draft.id), search: search.includes(draft.id) };
      };
      expect(await listedBy(t.provider)).toEqual({ list: false, search: false });
      expect(await listedBy(t.sender)).toEqual({ list: true, search: true });

      await call(t, t.sender, 'POST', `/api/v1/referrals/${draft.id}/submit`, {});
      const seen = await t.request(t.provider, get.request(draft.id, t.provider));
      expect(seen.statusCode, seen.body).toBe(200);
      expect(seen.json()).toMatchObject({ id: draft.id, status: 'pending-acceptance' });
      expect(await listedBy(t.provider)).toEqual({ list: true, search: true });

      for (const other of [t.otherSender, t.otherProvider]) {
        expect(await listedBy(other)).toEqual({ list: false, search: false });
      }
    });

    it('a provider sees its own referrals and not those of another provider', async () => {
      const toOther = await referralIn(t, 'draft', { offeringId: 'erh-cardio' });
      await call(t, t.sender, 'POST', `/api/v1/referrals/${toOther.id}/submit`, {});
      const get = routeNamed('GET /referrals/:id');
      expect((await t.request(t.otherProvider, get.request(toOther.id, t.otherProvider))).statusCode).toBe(
        200,
      );
      expectProblem(
        await t.request(t.provider, get.request(toOther.id, t.provider)),
        404,
        'referral_not_found',
      );
    });
  });

  describe('institutions a key may act for', () => {
    it.each(BY_NAME)(
      '%s acting for an institution the key is not permitted for → 403',
      async (_name, route) => {
        const referral = await untouched(route.status);
        const before = await stateOf(t, referral.id);
        // Each key names the institution that owns the referral, which it may not act for.
        const owner = route.owner === 'sender' ? t.sender : t.provider;
        const impostor = route.owner === 'sender' ? t.otherSender : t.otherProvider;
        const res = await t.request(impostor, route.request(referral.id, owner));
        expectProblem(res, 403, 'institution_not_permitted');
        await expectDeniedAudit(res, impostor, referral.id);
        expect(await stateOf(t, referral.id)).toEqual(before);
        expect(await isSoftDeleted(t, referral.id)).toBe(false);
      },
    );

    it('the list, search and create endpoints check the institution too', async () => {
      const { institutionIdType, institutionId } = t.sender.institution;
      const base = `/api/v1/institutions/${institutionIdType}/${institutionId}/referrals`;
      const attempts = [
        { method: 'GET' as const, url: base },
        { method: 'POST' as const, url: `${base}/search`, payload: {} },
        {
          method: 'POST' as const,
          url: '/api/v1/referrals',
          payload: { ...t.sender.institution, offeringId: 'cgh-gastro' },
        },
        {
          method: 'POST' as const,
          url: '/api/v1/links/upsert',
          payload: { ...t.sender.institution, requesterIdentifier: REQUESTER },
        },
      ];
      for (const attempt of attempts) {
        const res = await t.request(t.otherSender, attempt);
        expectProblem(res, 403, 'institution_not_permitted');
        await expectDeniedAudit(res, t.otherSender);
      }
    });
  });

  describe('roles', () => {
    it.each(BY_NAME)('an ops key on %s → 403 forbidden_role', async (_name, route) => {
      const referral = await untouched(route.status);
      const before = await stateOf(t, referral.id);
      const res = await t.request(t.ops, route.request(referral.id, t.ops));
      expectProblem(res, 403, 'forbidden_role');
      await expectDeniedAudit(res, t.ops, referral.id);
      expect(await stateOf(t, referral.id)).toEqual(before);
    });

    it('an ops key may not list, search or create referrals either', async () => {
      const { institutionIdType, institutionId } = t.ops.institution;
      const base = `/api/v1/institutions/${institutionIdType}/${institutionId}/referrals`;
      for (const attempt of [
        { method: 'GET' as const, url: base },
        { method: 'POST' as const, url: `${base}/search`, payload: {} },
        { method: 'POST' as const, url: '/api/v1/referrals', payload: { ...t.ops.institution } },
      ]) {
        const res = await t.request(t.ops, attempt);
        expectProblem(res, 403, 'forbidden_role');
        await expectDeniedAudit(res, t.ops);
      }
    });

    it.each([
      ['POST submit', 'sender-action-required'],
      ['POST back-to-draft', 'pending-acceptance'],
      ['DELETE /referrals/:id', 'pending-acceptance'],
      ['PATCH /referrals/:id', 'sender-action-required'],
      ['POST /links/upsert with referralId', 'sender-action-required'],
    ] as const)('the provider calling the sender operation %s (from %s) → 403', async (name, status) => {
      const referral = await untouched(status);
      const before = await stateOf(t, referral.id);
      const res = await t.request(t.provider, routeNamed(name).request(referral.id, t.provider));
      expectProblem(res, 403, 'forbidden_role');
      await expectDeniedAudit(res, t.provider, referral.id);
      expect(await stateOf(t, referral.id)).toEqual(before);
      expect(await isSoftDeleted(t, referral.id)).toBe(false);
    });

    it.each([
      ['POST accept', 'pending-acceptance'],
      ['POST reject', 'pending-acceptance'],
      ['POST request-action', 'pending-acceptance'],
      ['PUT appointments/:appointmentId', 'accepted'],
    ] as const)('the sender calling the provider operation %s → 403', async (name, status) => {
      const referral = await untouched(status);
      const before = await stateOf(t, referral.id);
      const res = await t.request(t.sender, routeNamed(name).request(referral.id, t.sender));
      expectProblem(res, 403, 'forbidden_role');
      await expectDeniedAudit(res, t.sender, referral.id);
      expect(await stateOf(t, referral.id)).toEqual(before);
    });

    it('a provider key may not create referrals', async () => {
      const res = await t.request(t.provider, {
        method: 'POST',
        url: '/api/v1/referrals',
        payload: { ...t.provider.institution, offeringId: 'cgh-gastro' },
      });
      expectProblem(res, 403, 'forbidden_role');
      await expectDeniedAudit(res, t.provider);
    });
  });

  describe('authentication', () => {
    const get = routeNamed('GET /referrals/:id');

    async function expectUnauthorized(res: LightMyRequestResponse, challenge: string) {
      expectProblem(res, 401, 'unauthorized');
      expect(res.headers['www-authenticate']).toBe(challenge);
      expect(await auditRowsOf(t, res)).toEqual([]);
    }

    const BOTH = 'ApiKey, Bearer';
    const BAD_TOKEN = 'Bearer error="invalid_token"';
    it.each([
      ['no Authorization header', undefined, BOTH],
      ['an empty header', '', BOTH],
      ['another scheme', 'Basic dXNlcjpwYXNz', BOTH],
      [
        'an API key sent as a bearer token',
        'Bearer rfh_test_0123456789012345678901234567890123456789012',
        BAD_TOKEN,
      ],
      [
        'a well-formed token nobody holds',
        'Bearer rfh_at_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA',
        BAD_TOKEN,
      ],
      ['garbage', 'ApiKey not-a-key', BOTH],
      ['a well-formed key nobody holds', 'ApiKey rfh_test_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA', BOTH],
    ])('%s → 401 unauthorized with its challenge', async (_label, authorization, challenge) => {
      const referral = await referralIn(t, 'pending-acceptance');
      const options = get.request(referral.id, t.sender);
      const headers = authorization === undefined ? {} : { authorization };
      await expectUnauthorized(await t.request(null, { ...options, headers }), challenge);
      const write = routeNamed('POST cancel').request(referral.id, t.sender);
      await expectUnauthorized(await t.request(null, { ...write, headers }), challenge);
      expect((await stateOf(t, referral.id)).status).toBe('pending-acceptance');
    });

    it('a revoked key → 401', async () => {
      const referral = await referralIn(t, 'draft');
      const { key, record } = await t.ctx.apiKeys.create({
        system: 'HAS',
        role: 'sender',
        institutions: [{ idType: 'hci', id: 'S1234A' }],
        environment: 'test',
      });
      const holder: TestParty = { key, institution: t.sender.institution };
      expect((await t.request(holder, get.request(referral.id, holder))).statusCode).toBe(200);
      await t.ctx.apiKeys.revoke(record.id);
      await expectUnauthorized(await t.request(holder, get.request(referral.id, holder)), BOTH);
      const before = await stateOf(t, referral.id);
      await expectUnauthorized(
        await t.request(holder, routeNamed('DELETE /referrals/:id').request(referral.id, holder)),
        BOTH,
      );
      expect(await stateOf(t, referral.id)).toEqual(before);
    });
  });
});
