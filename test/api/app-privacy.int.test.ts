// Patient data stays in the database and in the responses that are meant to carry it (contract §8,
// §9): never in logs, error bodies, URLs or outbox rows. Secrets (API keys, one-time link tokens)
// are stored only as hashes, anywhere in the database.
import { openColumns } from '../../src/db/data-keys/data-keys.repository.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { hashApiKey } from '../../src/services/api-key.service.ts';
import { hashLinkToken } from '../../src/services/links/minter.ts';
import { APP_ENGINES } from '../support/engines.ts';
import { CANARY, CANARY_MARKERS } from '../support/fixtures/patients.ts';
import { REQUESTER } from '../support/referral-routes.ts';
import { referralIn } from '../support/scenarios.ts';
import { dumpStore, tokenOf } from '../support/store-inspection.ts';
import { createTestApp, type TestApp, type TestParty } from '../support/test-app.ts';

const CANARY_TEXT = 'Canaryquokka';

function describeRequest(options: InjectOptions): string {
  return `${options.method ?? 'GET'} ${typeof options.url === 'string' ? options.url : 'URL object'}`;
}

function leakedMarkers(text: string): string[] {
  return CANARY_MARKERS.filter((marker) => text.includes(marker));
}

/** Every URL in a JSON document: link URLs, and anything else that looks like one. */
function urlsIn(value: unknown): string[] {
  if (typeof value === 'string') return /^https?:\/\//.test(value) ? [value] : [];
  if (Array.isArray(value)) return value.flatMap(urlsIn);
  if (value !== null && typeof value === 'object') return Object.values(value).flatMap(urlsIn);
  return [];
}

describe.each(APP_ENGINES)('privacy on %s', (engine) => {
  let t: TestApp;
  const responses: LightMyRequestResponse[] = [];

  beforeAll(async () => {
    t = await createTestApp(engine);
  });
  afterAll(async () => {
    await t.close();
  });

  async function send(who: TestParty | null, options: InjectOptions): Promise<LightMyRequestResponse> {
    const res = await t.request(who, options);
    responses.push(res);
    return res;
  }

  const institutionOf = (who: TestParty) => who.institution;
  const base = (who: TestParty) => `/api/v1/institutions/hci/${who.institution.institutionId}/referrals`;

  describe('the canary patient through the API', () => {
    let referralId: string;

    beforeAll(async () => {
      const S = t.sender;
      const P = t.provider;
      const created = await send(S, {
        method: 'POST',
        url: '/api/v1/referrals',
        payload: { ...institutionOf(S), requesterIdentifier: REQUESTER, offeringId: 'cgh-gastro', ...CANARY },
      });
      expect(created.statusCode, created.body).toBe(201);
      referralId = created.json<{ id: string }>().id;
      const byId = `/api/v1/referrals/${referralId}`;
      const getQuery = (who: TestParty, extra = '') =>
        `${new URLSearchParams({ ...who.institution, requesterIdentifier: REQUESTER }).toString()}${extra}`;

      const linked = await send(S, {
        method: 'POST',
        url: '/api/v1/links/upsert',
        payload: { ...institutionOf(S), requesterIdentifier: REQUESTER, offeringId: 'cgh-ae', ...CANARY },
      });
      expect(linked.statusCode, linked.body).toBe(200);

      const steps: [TestParty, InjectOptions, number][] = [
        [
          S,
          {
            method: 'POST',
            url: '/api/v1/links/upsert',
            payload: { ...institutionOf(S), requesterIdentifier: REQUESTER, referralId, ...CANARY },
          },
          200,
        ],
        [
          S,
          {
            method: 'PATCH',
            url: byId,
            payload: { ...institutionOf(S), ...CANARY, patientGender: 'Male', nationality: 'SG' },
          },
          200,
        ],
        [S, { method: 'GET', url: `${byId}?${getQuery(S)}` }, 200],
        [
          S,
          {
            method: 'POST',
            url: `${base(S)}/search`,
            payload: { patientUin: CANARY.patientUin, requesterIdentifier: REQUESTER },
          },
          200,
        ],
        [
          S,
          {
            method: 'POST',
            url: `${byId}/notes`,
            payload: { ...institutionOf(S), content: CANARY.clinicalInfo },
          },
          201,
        ],
        [
          S,
          {
            method: 'POST',
            url: `${byId}/submit`,
            payload: { ...institutionOf(S), requesterIdentifier: REQUESTER },
          },
          200,
        ],
        [P, { method: 'GET', url: `${byId}?${getQuery(P, '&additionalField=ehrForm')}` }, 200],
        [P, { method: 'POST', url: `${base(P)}/search`, payload: { patientUin: CANARY.patientUin } }, 200],
        [
          P,
          {
            method: 'POST',
            url: `${byId}/request-action`,
            payload: { ...institutionOf(P), reason: `Confirm ${CANARY.patientName} (${CANARY.patientUin})` },
          },
          200,
        ],
        [
          S,
          {
            method: 'POST',
            url: '/api/v1/links/upsert',
            payload: {
              ...institutionOf(S),
              requesterIdentifier: REQUESTER,
              referralId,
              clinicalInfo: CANARY.clinicalInfo,
            },
          },
          200,
        ],
        [S, { method: 'POST', url: `${byId}/submit`, payload: institutionOf(S) }, 200],
        [
          P,
          {
            method: 'POST',
            url: `${byId}/accept`,
            payload: { ...institutionOf(P), acceptedByName: 'Dr Lee' },
          },
          200,
        ],
        [
          P,
          {
            method: 'PUT',
            url: `${byId}/appointments/appt-1`,
            payload: {
              ...institutionOf(P),
              status: 'scheduled',
              startAt: '2030-01-15T01:30:00.000Z',
              location: 'Clinic 3B',
            },
          },
          200,
        ],
        [
          P,
          {
            method: 'GET',
            url: `${base(P)}?${new URLSearchParams({ requesterIdentifier: REQUESTER }).toString()}`,
          },
          200,
        ],
        [
          P,
          {
            method: 'POST',
            url: `${byId}/cancel`,
            payload: { ...institutionOf(P), cancelNote: `${CANARY.patientName} moved overseas` },
          },
          200,
        ],
        [S, { method: 'GET', url: `${byId}?${getQuery(S)}` }, 200],
      ];
      for (const [who, options, status] of steps) {
        const res = await send(who, options);
        expect(res.statusCode, `${describeRequest(options)}: ${res.body}`).toBe(status);
      }
      // The provider's outcome carries clinical text about the patient; the sender acknowledges it.
      const seen = await referralIn(t, 'accepted', CANARY);
      for (const [who, options] of [
        [
          P,
          {
            method: 'POST',
            url: `/api/v1/referrals/${seen.id}/complete`,
            payload: {
              ...institutionOf(P),
              outcomeCode: 'seen-follow-up',
              summary: `${CANARY.patientName} (${CANARY.patientUin}): ${CANARY.clinicalInfo}`,
            },
          },
        ],
        [
          S,
          {
            method: 'POST',
            url: `/api/v1/referrals/${seen.id}/acknowledge-outcome`,
            payload: { ...institutionOf(S), requesterIdentifier: REQUESTER },
          },
        ],
      ] as const) {
        const res = await send(who, options);
        expect(res.statusCode, `${describeRequest(options)}: ${res.body}`).toBe(200);
      }

      // Requests that fail while carrying canary values in this or other fields.
      const draft = await referralIn(t, 'draft', { ...CANARY, patientUin: null });
      const create = (fields: Record<string, unknown>): InjectOptions => ({
        method: 'POST',
        url: '/api/v1/referrals',
        payload: { ...institutionOf(S), ...CANARY, ...fields },
      });
      const failing: [TestParty | null, InjectOptions][] = [
        [S, create({ dob: CANARY_TEXT })],
        [S, create({ dob: '2999-01-01' })],
        [S, create({ patientUin: `${CANARY_TEXT}1` })],
        [S, create({ patientPhoneNumber: CANARY.patientUin })],
        [S, create({ nationality: CANARY_TEXT, patientGender: CANARY.patientName })],
        [S, create({ residentialStatus: CANARY.patientUin, referrerEmail: CANARY.patientName })],
        [S, create({ clinicalInfo: `${CANARY.clinicalInfo} `.repeat(400) })],
        [S, create({ patientNotes: CANARY.clinicalInfo })],
        [S, create({ offeringId: 'no-such-offering' })],
        [null, create({})],
        [t.ops, create({})],
        [t.provider, { ...create({}), payload: { ...institutionOf(t.provider), ...CANARY } }],
        [t.otherSender, create({})],
        [
          S,
          {
            method: 'POST',
            url: '/api/v1/referrals',
            headers: { 'content-type': 'application/json' },
            payload: `{"patientName": "${CANARY.patientName}", "patientUin": ${CANARY.patientUin}}`,
          },
        ],
        [
          S,
          {
            method: 'POST',
            url: '/api/v1/referrals',
            headers: { 'content-type': 'text/plain' },
            payload: `${CANARY.patientName} ${CANARY.patientUin}`,
          },
        ],
        [S, { ...create({ clinicalInfo: CANARY.clinicalInfo.repeat(6000) }) }],
        [S, { method: 'PATCH', url: byId, payload: { ...institutionOf(S), ...CANARY } }],
        [S, { method: 'POST', url: `/api/v1/referrals/${draft.id}/submit`, payload: institutionOf(S) }],
        [
          S,
          {
            method: 'POST',
            url: `/api/v1/referrals/${draft.id}/cancel`,
            payload: { ...institutionOf(S), cancelNote: CANARY.clinicalInfo },
          },
        ],
        [
          t.otherSender,
          {
            method: 'POST',
            url: `${byId}/notes`,
            payload: { ...institutionOf(t.otherSender), content: CANARY.clinicalInfo },
          },
        ],
        [
          S,
          {
            method: 'POST',
            url: '/api/v1/links/upsert',
            payload: { ...institutionOf(S), requesterIdentifier: REQUESTER, referralId, ...CANARY },
          },
        ],
        [
          S,
          { method: 'POST', url: `${base(t.provider)}/search`, payload: { patientUin: CANARY.patientUin } },
        ],
        [S, { method: 'POST', url: `${base(S)}/search`, payload: { patientUin: CANARY_TEXT } }],
        [
          S,
          {
            method: 'POST',
            url: `${base(S)}/search`,
            payload: { patientUin: CANARY.patientUin, name: CANARY_TEXT },
          },
        ],
        [S, { method: 'GET', url: `${base(S)}?patientUin=${CANARY.patientUin}` }],
        [S, { method: 'GET', url: `/api/v1/patients/lookup?uin=${CANARY.patientUin}&name=${CANARY_TEXT}` }],
        [S, { method: 'GET', url: `${byId}?${getQuery(S, `&additionalField=${CANARY_TEXT}`)}` }],
      ];
      for (const [who, options] of failing) {
        const res = await send(who, options);
        expect(res.statusCode, `${describeRequest(options)}: ${res.body}`).toBeGreaterThanOrEqual(400);
      }
    });

    it('the requests reached the store (the canary is there, where it belongs)', async () => {
      const row = await t.ctx.db
        .selectFrom('referrals')
        .select(['id', 'patient_name', 'patient_uin', 'personal_data', 'status'])
        .where('id', '=', referralId)
        .executeTakeFirstOrThrow();
      // Sealed (docs/security.md): the row holds the canary only as ciphertext that opens to it.
      expect(row).toMatchObject({ patient_name: null, patient_uin: null });
      expect(row.personal_data).toMatch(/^rh1:/);
      expect(openColumns('referrals', row, await t.ctx.dataKeys.cipher(t.ctx.db))).toMatchObject({
        id: referralId,
        patient_name: CANARY.patientName,
        patient_uin: CANARY.patientUin,
        status: 'cancelled',
      });
      expect(responses.filter((r) => r.statusCode >= 400).length).toBeGreaterThanOrEqual(25);
    });

    it('no log line carries patient data', () => {
      expect(t.logs.filter((line) => line.includes('request completed')).length).toBeGreaterThanOrEqual(
        responses.length,
      );
      const leaking = t.logs.filter((line) => leakedMarkers(line).length > 0);
      expect(leaking).toEqual([]);
    });

    it('no error response carries patient data', () => {
      const errors = responses.filter((r) => r.statusCode >= 400);
      for (const res of errors) {
        expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
        expect(leakedMarkers(res.body), res.body).toEqual([]);
      }
    });

    it('no URL the API hands out carries patient data', () => {
      const urls = responses
        .filter((r) => r.statusCode < 400)
        .flatMap((r) => [...urlsIn(r.json()), ...(r.headers.location ? [r.headers.location] : [])]);
      const links = urls.filter((u) => u.includes('/l/'));
      expect(links.length).toBeGreaterThanOrEqual(8);
      for (const url of links) expect(url).toMatch(/^http:\/\/refhub\.test\/l\/[A-Za-z0-9_-]{43}$/);
      for (const url of urls) expect(leakedMarkers(decodeURIComponent(url)), url).toEqual([]);
    });

    it('outbox rows hold IDs only', async () => {
      const rows = await t.ctx.db.selectFrom('outbox').selectAll().execute();
      expect(rows.length).toBeGreaterThanOrEqual(3);
      for (const row of rows) {
        expect(Object.keys(row).sort()).toEqual(
          [
            'attempts',
            'available_at',
            'created_at',
            'id',
            'last_error',
            'processed_at',
            'referral_id',
            'request_id',
            'topic',
            'version',
          ].sort(),
        );
        expect(['ehr-forward', 'reminders']).toContain(row.topic);
        expect(row.referral_id).toMatch(/^[0-9a-f-]{36}$/);
        expect(leakedMarkers(JSON.stringify(row))).toEqual([]);
      }
    });
  });

  describe('secrets in the database', () => {
    it('no API key and no one-time link token is stored in clear, anywhere', async () => {
      const { key: extraKey, record } = await t.ctx.apiKeys.create({
        system: 'HAS',
        role: 'sender',
        institutions: [{ idType: 'hci', id: 'S1234A' }],
        label: 'privacy-test',
        environment: 'live',
      });
      const extra: TestParty = { key: extraKey, institution: t.sender.institution };
      const { key: revokedKey, record: revoked } = await t.ctx.apiKeys.create({
        system: 'Epic',
        role: 'provider',
        institutions: [{ idType: 'hci', id: 'S9001Z' }],
        environment: 'test',
      });
      await t.ctx.apiKeys.revoke(revoked.id);
      const keys = [t.sender, t.otherSender, t.provider, t.otherProvider, t.ops].map((p) => p.key);
      keys.push(extraKey, revokedKey);

      const urls: string[] = [];
      const collect = (res: LightMyRequestResponse) => {
        expect(res.statusCode, res.body).toBeLessThan(300);
        urls.push(...urlsIn(res.json()).filter((u) => u.includes('/l/')));
      };
      const upsert = (fields: Record<string, unknown>): InjectOptions => ({
        method: 'POST',
        url: '/api/v1/links/upsert',
        headers: {
          'idempotency-key': `privacy-${typeof fields.referralId === 'string' ? fields.referralId : 'new'}`,
        },
        payload: { ...t.sender.institution, requesterIdentifier: REQUESTER, ...CANARY, ...fields },
      });
      for (const who of [t.sender, extra]) {
        const first = await t.request(who, upsert({}));
        collect(first);
        collect(await t.request(who, upsert({}))); // a replay mints another token
        const referralId = first.json<{ referralId: string }>().referralId;
        collect(await t.request(who, upsert({ referralId })));
        collect(await t.request(who, upsert({ referralId })));
        collect(
          await t.request(who, {
            method: 'POST',
            url: '/api/v1/referrals',
            headers: { 'idempotency-key': `privacy-create-${record.id}` },
            payload: { ...t.sender.institution, requesterIdentifier: REQUESTER, ...CANARY },
          }),
        );
        collect(
          await t.request(who, {
            method: 'GET',
            url: `/api/v1/referrals/${referralId}?${new URLSearchParams({ ...t.sender.institution, requesterIdentifier: REQUESTER }).toString()}`,
          }),
        );
      }
      const submitted = await referralIn(t, 'accepted', CANARY);
      collect(
        await t.request(t.provider, {
          method: 'GET',
          url: `/api/v1/referrals/${submitted.id}?${new URLSearchParams({ ...t.provider.institution, requesterIdentifier: REQUESTER }).toString()}`,
        }),
      );
      const tokens = [...new Set(urls.map(tokenOf))];
      expect(tokens.length).toBeGreaterThanOrEqual(16);

      const cells = await dumpStore(t);
      const all = cells.join('\n');
      // The dump is complete enough to find what is meant to be there: patient data (sealed, and
      // nowhere in the clear, not even where a cancel note or a reason quotes it) and the hashes.
      expect(cells.some((c) => c.startsWith('referrals.personal_data=rh1:'))).toBe(true);
      expect(cells.filter((c) => c.includes(CANARY.patientName))).toEqual([]);
      for (const key of keys) expect(all).toContain(hashApiKey(key));
      for (const token of tokens) expect(all).toContain(hashLinkToken(token));

      for (const key of keys) {
        expect(cells.filter((c) => c.includes(key))).toEqual([]);
        // Not even the secret part alone, for instance with another prefix.
        const secret = key.replace(/^rfh_(live|test)_/, '');
        expect(cells.filter((c) => c.includes(secret))).toEqual([]);
      }
      for (const token of tokens) expect(cells.filter((c) => c.includes(token))).toEqual([]);

      // Nor in the logs.
      for (const secret of [...keys, ...tokens]) {
        expect(t.logs.filter((line) => line.includes(secret))).toEqual([]);
      }
    });
  });
});
