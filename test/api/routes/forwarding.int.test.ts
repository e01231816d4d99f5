// GET /api/v1/referrals/{id}/ehr-submissions: the ledger of forward attempts. Sender and provider
// keys read it for referrals their institution can see; ops keys for any referral. It is audited,
// and it holds IDs, hashes and outcomes only. Attempts are recorded through the same service the
// forward worker uses.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LightMyRequestResponse } from 'fastify';
import { APP_ENGINES } from '../../support/engines.ts';
import { CANARY, CANARY_MARKERS } from '../../support/fixtures/patients.ts';
import { referralIn, type ReferralJson } from '../../support/scenarios.ts';
import { apiKeyIdOf, auditRowsOf } from '../../support/store-inspection.ts';
import { createTestApp, type TestApp, type TestParty } from '../../support/test-app.ts';

const SHA = 'a'.repeat(64);

describe.each(APP_ENGINES)('the EHR submissions ledger on %s', (engine) => {
  let t: TestApp;
  let referral: ReferralJson;

  beforeAll(async () => {
    t = await createTestApp(engine);
    referral = await referralIn(t, 'pending-acceptance', CANARY);
    const at = (s: number) => new Date(Date.parse('2026-06-04T03:15:00.000Z') + s * 1000);
    const attempt = {
      referralId: referral.id,
      messageId: `${referral.id}.v${referral.version}`,
      version: referral.version,
      sha256: SHA,
      reference: null,
      durationMs: 12,
      requestId: 'req-ledger',
    };
    await t.ctx.ehrForwarding.recordAttempt({
      ...attempt,
      attempt: 1,
      startedAt: at(0),
      outcome: 'retrying',
      httpStatus: null,
      errorCode: 'ECONNREFUSED',
    });
    await t.ctx.ehrForwarding.recordAttempt({
      ...attempt,
      attempt: 2,
      startedAt: at(4),
      outcome: 'delivered',
      httpStatus: 201,
      errorCode: null,
      reference: 'EHR-0001',
    });
  });
  afterAll(async () => {
    await t.close();
  });

  const ledgerUrl = (id: string, query = '') => `/api/v1/referrals/${id}/ehr-submissions${query}`;
  const actingFor = (p: TestParty) => `?institutionIdType=hci&institutionId=${p.institution.institutionId}`;
  const get = (who: TestParty | null, url: string) => t.request(who, { method: 'GET', url });
  const expectProblem = (res: LightMyRequestResponse, status: number, code: string) => {
    expect(res.statusCode, res.body).toBe(status);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(res.json()).toMatchObject({ status, code });
  };

  it('lists every attempt, oldest first, for the sender and the provider', async () => {
    for (const party of [t.sender, t.provider]) {
      const res = await get(party, ledgerUrl(referral.id, actingFor(party)));
      expect(res.statusCode, res.body).toBe(200);
      expect(res.headers['cache-control']).toBe('no-store');
      expect(res.json()).toEqual({
        data: [
          {
            id: expect.any(String) as unknown,
            messageId: `${referral.id}.v${referral.version}`,
            version: referral.version,
            attempt: 1,
            attemptedAt: '2026-06-04T03:15:00.000Z',
            outcome: 'retrying',
            errorCode: 'ECONNREFUSED',
            sha256: SHA,
            durationMs: 12,
          },
          {
            id: expect.any(String) as unknown,
            messageId: `${referral.id}.v${referral.version}`,
            version: referral.version,
            attempt: 2,
            attemptedAt: '2026-06-04T03:15:04.000Z',
            outcome: 'delivered',
            httpStatus: 201,
            sha256: SHA,
            ehrReference: 'EHR-0001',
            durationMs: 12,
          },
        ],
      });
      for (const marker of CANARY_MARKERS) expect(res.body).not.toContain(marker);
    }
  });

  it('the delivery is bookkeeping: forwarded, with its sentence, at the same version', async () => {
    const view = await t.ctx.referralQueries.get({ ...(await callerFor(t, t.sender)) }, referral.id, {
      ehrForm: false,
    });
    expect(view.ehrForwarding).toEqual({
      state: 'forwarded',
      attempts: 2,
      lastAttemptAt: '2026-06-04T03:15:04.000Z',
      sha256: SHA,
    });
    expect(view.version).toBe(referral.version);
    expect(view.timelineEvents.at(-1)).toMatchObject({
      type: 'ehr.forwarded',
      system: 'refhub',
      description: 'The referral form was delivered to the national health record (reference EHR-0001).',
    });
  });

  it('is audited as ehr.submissions.read, with the key, institution and requester', async () => {
    const res = await get(
      t.provider,
      ledgerUrl(referral.id, `${actingFor(t.provider)}&requesterIdentifier=dr.wong@cgh.example`),
    );
    expect(await auditRowsOf(t, res)).toEqual([
      expect.objectContaining({
        action: 'ehr.submissions.read',
        outcome: 'success',
        api_key_id: await apiKeyIdOf(t, t.provider),
        institution_id: 'S9001Z',
        requester_identifier: 'dr.wong@cgh.example',
        referral_ids: [referral.id],
      }),
    ]);
  });

  it('ops keys read any referral’s ledger without naming an institution, and are audited', async () => {
    const res = await get(t.ops, ledgerUrl(referral.id));
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json<{ data: unknown[] }>().data).toHaveLength(2);
    expect(await auditRowsOf(t, res)).toEqual([
      expect.objectContaining({
        action: 'ehr.submissions.read',
        outcome: 'success',
        api_key_id: await apiKeyIdOf(t, t.ops),
        institution_id: null,
        referral_ids: [referral.id],
      }),
    ]);
  });

  it('is 404 for an institution that cannot see the referral, audited as denied', async () => {
    for (const intruder of [t.otherSender, t.otherProvider]) {
      const res = await get(intruder, ledgerUrl(referral.id, actingFor(intruder)));
      expectProblem(res, 404, 'referral_not_found');
      expect(await auditRowsOf(t, res)).toEqual([
        expect.objectContaining({ outcome: 'denied', api_key_id: await apiKeyIdOf(t, intruder) }),
      ]);
    }
    const draft = await referralIn(t, 'draft');
    expectProblem(
      await get(t.provider, ledgerUrl(draft.id, actingFor(t.provider))),
      404,
      'referral_not_found',
    );
  });

  it('is 404 for a referral that does not exist, for ops too', async () => {
    const missing = '01900000-0000-7000-8000-000000000000';
    expectProblem(await get(t.sender, ledgerUrl(missing, actingFor(t.sender))), 404, 'referral_not_found');
    expectProblem(await get(t.ops, ledgerUrl(missing)), 404, 'referral_not_found');
  });

  it('needs the institution from sender and provider keys, naming what is missing', async () => {
    const res = await get(t.sender, ledgerUrl(referral.id));
    expectProblem(res, 400, 'validation_failed');
    expect(res.json()).toMatchObject({
      errors: [
        { path: 'query.institutionIdType', message: 'is required' },
        { path: 'query.institutionId', message: 'is required' },
      ],
    });
    const half = await get(t.sender, ledgerUrl(referral.id, '?institutionIdType=hci'));
    expect(half.json()).toMatchObject({ errors: [{ path: 'query.institutionId' }] });
  });

  it('rejects an institution the key may not act for, unknown parameters, bad IDs and missing keys', async () => {
    expectProblem(
      await get(t.otherSender, ledgerUrl(referral.id, actingFor(t.sender))),
      403,
      'institution_not_permitted',
    );
    const unknown = await get(t.sender, ledgerUrl(referral.id, `${actingFor(t.sender)}&page=2`));
    expectProblem(unknown, 400, 'validation_failed');
    expect(JSON.stringify(unknown.json())).toContain('page');
    expectProblem(
      await get(t.sender, ledgerUrl('not-a-uuid', actingFor(t.sender))),
      400,
      'validation_failed',
    );
    expectProblem(await get(null, ledgerUrl(referral.id, actingFor(t.sender))), 401, 'unauthorized');
  });
});

async function callerFor(t: TestApp, party: TestParty) {
  return {
    apiKeyId: await apiKeyIdOf(t, party),
    system: 'HAS',
    role: 'sender' as const,
    institution: { idType: 'hci', id: party.institution.institutionId },
    requesterIdentifier: null,
    requestId: 'test-read',
  };
}
