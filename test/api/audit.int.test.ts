// The audit trail (contract §1, §4): every read and every change of referral data writes its audit
// row in the same transaction as the work, naming the key, system, institution, requester, action,
// request and referrals. Work that fails leaves no success row, and no row ever holds patient data.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { sql } from 'kysely';
import { APP_ENGINES } from '../support/engines.ts';
import { CANARY, CANARY_MARKERS } from '../support/fixtures/patients.ts';
import {
  REFERRAL_ROUTES,
  REQUESTER,
  type ReferralRoute,
  type RouteRequest,
} from '../support/referral-routes.ts';
import { referralIn } from '../support/scenarios.ts';
import { apiKeyIdOf, auditRowsOf, countRows, type AuditRow } from '../support/store-inspection.ts';
import { createTestApp, type TestApp, type TestParty } from '../support/test-app.ts';

const ACTIONS: Readonly<Record<string, string>> = {
  'GET /referrals/:id': 'referral.read',
  'DELETE /referrals/:id': 'referral.delete',
  'PATCH /referrals/:id': 'referral.update',
  'POST submit': 'referral.submit',
  'POST cancel': 'referral.cancel',
  'POST back-to-draft': 'referral.back-to-draft',
  'POST notes': 'referral.add-note',
  'POST accept': 'referral.accept',
  'POST reject': 'referral.reject',
  'POST request-action': 'referral.request-action',
  'PUT appointments/:appointmentId': 'referral.upsert-appointment',
};
const SINGLE_ROW_ROUTES = REFERRAL_ROUTES.filter((r) => r.name in ACTIONS).map((r) => [r.name, r] as const);

function routeNamed(name: string): ReferralRoute {
  const route = REFERRAL_ROUTES.find((r) => r.name === name);
  if (!route) throw new Error(`no route ${name}`);
  return route;
}

function leakedMarkers(text: string): string[] {
  return CANARY_MARKERS.filter((marker) => text.includes(marker));
}

let sequence = 0;

/** The same request naming a requester and carrying our own X-Request-Id. */
function traced(options: RouteRequest, requester: string | undefined): InjectOptions {
  const requestId = `audit-test-${process.pid}-${++sequence}`;
  const headers = { ...options.headers, 'x-request-id': requestId };
  if (requester === undefined) return { ...options, headers };
  const { url } = options;
  if (options.method === 'GET' || options.method === 'DELETE') {
    const [path, query = ''] = url.split('?');
    const params = new URLSearchParams(query);
    params.set('requesterIdentifier', requester);
    return { ...options, headers, url: `${path}?${params.toString()}` };
  }
  return { ...options, headers, payload: { ...(options.payload as object), requesterIdentifier: requester } };
}

describe.each(APP_ENGINES)('audit on %s', (engine) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp(engine);
  });
  afterAll(async () => {
    await t.close();
  });

  /** Sends a request and returns its response and the audit rows it added, checking none went astray. */
  async function audited(who: TestParty, options: InjectOptions) {
    const before = await countRows(t, 'audit_events');
    const res = await t.request(who, options);
    const rows = await auditRowsOf(t, res);
    expect(res.headers['x-request-id']).toBe((options.headers as Record<string, string>)['x-request-id']);
    expect(await countRows(t, 'audit_events'), 'rows written under another request ID').toBe(
      before + rows.length,
    );
    return { res, rows };
  }

  async function expectedRow(
    who: TestParty,
    res: LightMyRequestResponse,
    action: string,
    referralIds: string[],
    requester: string | null,
  ): Promise<AuditRow> {
    return {
      request_id: String(res.headers['x-request-id']),
      api_key_id: await apiKeyIdOf(t, who),
      system: who === t.sender ? 'HAS' : 'Epic',
      institution_id_type: who.institution.institutionIdType,
      institution_id: who.institution.institutionId,
      requester_identifier: requester,
      action,
      outcome: 'success',
      referral_ids: referralIds,
    };
  }

  describe('reads', () => {
    it.each([
      ['a doctor', REQUESTER],
      ['a nurse', 'nurse.lim@example.org'],
    ])('GET one referral writes one row naming the requester (%s)', async (_label, requester) => {
      const referral = await referralIn(t, 'pending-acceptance', CANARY);
      for (const who of [t.sender, t.provider]) {
        const { res, rows } = await audited(
          who,
          traced(routeNamed('GET /referrals/:id').request(referral.id, who), requester),
        );
        expect(res.statusCode).toBe(200);
        expect(rows).toEqual([await expectedRow(who, res, 'referral.read', [referral.id], requester)]);
      }
    });

    it('GET with additionalField=ehrForm is audited as a form read', async () => {
      const referral = await referralIn(t, 'pending-acceptance', CANARY);
      const get = routeNamed('GET /referrals/:id').request(referral.id, t.provider);
      const { res, rows } = await audited(
        t.provider,
        traced({ ...get, url: `${get.url}&additionalField=ehrForm` }, undefined),
      );
      expect(res.statusCode, res.body).toBe(200);
      expect(rows).toEqual([
        await expectedRow(t.provider, res, 'referral.read-ehr-form', [referral.id], REQUESTER),
      ]);
    });

    it('the list and the search each write one row naming the referrals they returned', async () => {
      await referralIn(t, 'draft', CANARY);
      await referralIn(t, 'accepted', CANARY);
      const base = `/api/v1/institutions/hci/${t.sender.institution.institutionId}/referrals`;
      const requests: [InjectOptions, string | null][] = [
        [traced({ method: 'GET', url: `${base}?pageSize=3` }, undefined), null],
        [traced({ method: 'GET', url: `${base}?pageSize=3` }, REQUESTER), REQUESTER],
        [
          traced(
            { method: 'POST', url: `${base}/search`, payload: { patientUin: CANARY.patientUin } },
            REQUESTER,
          ),
          REQUESTER,
        ],
      ];
      for (const [options, requester] of requests) {
        const { res, rows } = await audited(t.sender, options);
        expect(res.statusCode, res.body).toBe(200);
        const ids = res.json<{ data: { id: string }[] }>().data.map((r) => r.id);
        expect(ids.length).toBeGreaterThan(0);
        const action = options.method === 'POST' ? 'referral.search' : 'referral.list';
        expect(rows).toEqual([await expectedRow(t.sender, res, action, ids, requester)]);
      }
    });

    it('an empty page is audited too', async () => {
      const base = `/api/v1/institutions/hci/${t.sender.institution.institutionId}/referrals`;
      const { res, rows } = await audited(
        t.sender,
        traced({ method: 'POST', url: `${base}/search`, payload: { patientUin: 'S0000000A' } }, undefined),
      );
      expect(res.json<{ data: unknown[] }>().data).toEqual([]);
      expect(rows).toEqual([await expectedRow(t.sender, res, 'referral.search', [], null)]);
    });
  });

  describe('writes', () => {
    it.each(SINGLE_ROW_ROUTES)('%s writes exactly one success row', async (name, route) => {
      const referral = await referralIn(t, route.status, CANARY);
      const who = route.owner === 'sender' ? t.sender : t.provider;
      for (const requester of [REQUESTER, undefined]) {
        const target = requester === undefined ? await referralIn(t, route.status, CANARY) : referral;
        const { res, rows } = await audited(who, traced(route.request(target.id, who), requester));
        expect(res.statusCode, res.body).toBeLessThan(300);
        expect(rows).toEqual([
          await expectedRow(
            who,
            res,
            ACTIONS[name]!,
            [target.id],
            requester ?? (name.startsWith('GET') ? REQUESTER : null),
          ),
        ]);
      }
    });

    it('creating a referral writes one row naming the new referral', async () => {
      const { res, rows } = await audited(
        t.sender,
        traced(
          { method: 'POST', url: '/api/v1/referrals', payload: { ...t.sender.institution, ...CANARY } },
          REQUESTER,
        ),
      );
      expect(res.statusCode, res.body).toBe(201);
      expect(rows).toEqual([
        await expectedRow(t.sender, res, 'referral.create', [res.json<{ id: string }>().id], REQUESTER),
      ]);
    });

    it('a link upsert that creates a draft writes one row', async () => {
      const { res, rows } = await audited(
        t.sender,
        traced(
          {
            method: 'POST',
            url: '/api/v1/links/upsert',
            payload: { ...t.sender.institution, requesterIdentifier: REQUESTER, ...CANARY },
          },
          undefined,
        ),
      );
      expect(res.statusCode, res.body).toBe(200);
      const id = res.json<{ referralId: string }>().referralId;
      expect(rows).toEqual([await expectedRow(t.sender, res, 'link.upsert', [id], REQUESTER)]);
    });

    it('a link upsert on an existing referral writes two rows: the update and the link', async () => {
      const referral = await referralIn(t, 'draft', CANARY);
      const { res, rows } = await audited(
        t.sender,
        traced(routeNamed('POST /links/upsert with referralId').request(referral.id, t.sender), undefined),
      );
      expect(res.statusCode, res.body).toBe(200);
      expect(rows).toEqual([
        await expectedRow(t.sender, res, 'referral.update', [referral.id], REQUESTER),
        await expectedRow(t.sender, res, 'link.upsert', [referral.id], REQUESTER),
      ]);
    });
  });

  describe('failures', () => {
    it.each([
      ['409 invalid_transition', 'POST cancel', 'draft', {}],
      [
        '409 invalid_transition (link upsert)',
        'POST /links/upsert with referralId',
        'pending-acceptance',
        {},
      ],
      ['412 version_mismatch', 'POST accept', 'pending-acceptance', { 'if-match': '"42"' }],
      ['422 incomplete_referral', 'POST submit', 'draft', {}],
    ] as const)('%s leaves no audit row', async (_label, name, status, headers) => {
      const fields = name === 'POST submit' ? { ...CANARY, patientUin: null } : CANARY;
      const referral = await referralIn(t, status, fields);
      const route = routeNamed(name);
      const who = route.owner === 'sender' ? t.sender : t.provider;
      const { res, rows } = await audited(who, traced(route.request(referral.id, who, headers), REQUESTER));
      expect(res.statusCode, res.body).toBeGreaterThanOrEqual(400);
      expect(rows).toEqual([]);
    });

    it('a 400 leaves no audit row', async () => {
      const referral = await referralIn(t, 'draft', CANARY);
      const { res, rows } = await audited(
        t.sender,
        traced(
          {
            method: 'PATCH',
            url: `/api/v1/referrals/${referral.id}`,
            payload: { ...t.sender.institution, dob: 'not a date', patientName: CANARY.patientName },
          },
          REQUESTER,
        ),
      );
      expect(res.statusCode).toBe(400);
      expect(rows).toEqual([]);
    });

    it('a denied attempt writes one denied row and no success row', async () => {
      const referral = await referralIn(t, 'pending-acceptance', CANARY);
      const { res, rows } = await audited(
        t.otherSender,
        traced(routeNamed('POST notes').request(referral.id, t.otherSender), REQUESTER),
      );
      expect(res.statusCode).toBe(404);
      expect(rows).toEqual([
        {
          ...(await expectedRow(t.otherSender, res, 'referral.add-note', [referral.id], REQUESTER)),
          system: 'Epic',
          outcome: 'denied',
        },
      ]);
    });
  });

  describe('a request refused for the institution it claims', () => {
    /** The claim a row records, apart from the institution that acted. */
    async function claimOf(res: LightMyRequestResponse) {
      return t.ctx.db
        .selectFrom('audit_events')
        .select(['claimed_institution_id_type', 'claimed_institution_id'])
        .where('request_id', '=', String(res.headers['x-request-id']))
        .executeTakeFirstOrThrow();
    }

    /** The request IDs of the audit rows in the sender's access report of the canary patient. */
    async function senderReportRequests(): Promise<string[]> {
      const res = await t.request(t.sender, {
        method: 'GET',
        url: '/api/v1/patients/access-report',
        query: {
          ...t.sender.institution,
          requesterIdentifier: REQUESTER,
          patientUin: CANARY.patientUin,
          pageSize: '1000',
        },
      });
      expect(res.statusCode, res.body).toBe(200);
      const requests = res.json<{ data: { requestId: string }[] }>().data.map((e) => e.requestId);
      // The report itself is not empty: the referral's own writes are in it.
      expect(requests.length).toBeGreaterThan(0);
      return requests;
    }

    const claimsSender = () => ({
      claimed_institution_id_type: 'hci',
      claimed_institution_id: t.sender.institution.institutionId,
    });

    it('is audited under the key’s own institution, the claim apart, and stays out of the claimed one’s trail', async () => {
      const referral = await referralIn(t, 'pending-acceptance', CANARY);
      // The other clinic's key says it acts for the sender, to read the sender's referral.
      const { res, rows } = await audited(
        t.otherSender,
        traced(routeNamed('GET /referrals/:id').request(referral.id, t.sender), REQUESTER),
      );
      expect(res.statusCode).toBe(403);
      expect(res.json<{ code: string }>().code).toBe('institution_not_permitted');
      expect(rows).toEqual([
        {
          ...(await expectedRow(t.otherSender, res, 'referral.read', [referral.id], REQUESTER)),
          outcome: 'denied',
        },
      ]);
      expect(await claimOf(res)).toEqual(claimsSender());
      // Its chain is the other clinic's (the chain follows the institution that acted), and the
      // sender's report of its patient does not list it.
      expect(await senderReportRequests()).not.toContain(String(res.headers['x-request-id']));
    });

    it('names no institution for an ops key, and none for a key of several institutions', async () => {
      const referral = await referralIn(t, 'pending-acceptance', CANARY);
      const { key } = await t.ctx.apiKeys.create({
        system: 'Epic',
        role: 'sender',
        institutions: [
          { idType: 'hci', id: t.otherSender.institution.institutionId },
          { idType: 'hci', id: t.otherProvider.institution.institutionId },
        ],
        environment: 'test',
      });
      const several: TestParty = { key, institution: t.otherSender.institution };
      for (const who of [t.ops, several]) {
        const { res, rows } = await audited(
          who,
          traced(routeNamed('GET /referrals/:id').request(referral.id, t.sender), REQUESTER),
        );
        expect(res.statusCode).toBe(403);
        expect(rows).toEqual([
          {
            request_id: String(res.headers['x-request-id']),
            api_key_id: await apiKeyIdOf(t, who),
            system: who === t.ops ? 'HAS' : 'Epic',
            institution_id_type: null,
            institution_id: null,
            requester_identifier: REQUESTER,
            action: 'referral.read',
            outcome: 'denied',
            referral_ids: [referral.id],
          },
        ]);
        expect(await claimOf(res)).toEqual(claimsSender());
        expect(await senderReportRequests()).not.toContain(String(res.headers['x-request-id']));
      }
    });
  });

  describe('one transaction with the work', () => {
    const POISON = 'audit-refused@example.org';

    // A real constraint makes the audit insert fail for one requester: if the audit row were written
    // outside the work's transaction, the work would stay done without its audit row.
    beforeAll(async () => {
      await sql`alter table audit_events add constraint audit_test_refuses check (requester_identifier is distinct from ${sql.lit(POISON)})`.execute(
        t.ctx.db,
      );
    });
    afterAll(async () => {
      await sql`alter table audit_events drop constraint audit_test_refuses`.execute(t.ctx.db);
    });

    async function footprint(id: string) {
      const count = async (table: 'timeline_events' | 'outbox' | 'link_tokens' | 'notes') =>
        (await t.ctx.db.selectFrom(table).select('referral_id').where('referral_id', '=', id).execute())
          .length;
      const row = await t.ctx.db
        .selectFrom('referrals')
        .select(['version', 'status', 'clinical_info'])
        .where('id', '=', id)
        .executeTakeFirstOrThrow();
      return {
        ...row,
        timeline: await count('timeline_events'),
        outbox: await count('outbox'),
        links: await count('link_tokens'),
        notes: await count('notes'),
      };
    }

    it.each([
      ['GET /referrals/:id', 'pending-acceptance'],
      ['POST cancel', 'pending-acceptance'],
      ['POST notes', 'pending-acceptance'],
      ['PATCH /referrals/:id', 'draft'],
      ['POST /links/upsert with referralId', 'draft'],
      ['PUT appointments/:appointmentId', 'accepted'],
    ] as const)('when its audit row cannot be written, %s is undone', async (name, status) => {
      const referral = await referralIn(t, status, CANARY);
      const before = await footprint(referral.id);
      const route = routeNamed(name);
      const who = route.owner === 'sender' ? t.sender : t.provider;
      const request = route.request(referral.id, who);
      const res = await t.request(
        who,
        name.startsWith('GET')
          ? {
              ...request,
              url: request.url.replace(encodeURIComponent(REQUESTER), encodeURIComponent(POISON)),
            }
          : traced(request, POISON),
      );
      expect(res.statusCode, res.body).toBe(500);
      expect(res.json()).toMatchObject({ code: 'internal_error' });
      expect(leakedMarkers(res.body)).toEqual([]);
      expect(await footprint(referral.id)).toEqual(before);
      expect(await auditRowsOf(t, res)).toEqual([]);
    });

    it('a create whose audit row cannot be written leaves no referral', async () => {
      const before = await countRows(t, 'referrals');
      const res = await t.request(
        t.sender,
        traced(
          { method: 'POST', url: '/api/v1/links/upsert', payload: { ...t.sender.institution, ...CANARY } },
          POISON,
        ),
      );
      expect(res.statusCode, res.body).toBe(500);
      expect(await countRows(t, 'referrals')).toBe(before);
    });
  });

  it('no audit row holds patient data', async () => {
    const referral = await referralIn(t, 'scheduled', CANARY);
    await t.request(t.sender, routeNamed('GET /referrals/:id').request(referral.id, t.sender));
    const rows = await t.ctx.db.selectFrom('audit_events').selectAll().execute();
    expect(rows.length).toBeGreaterThan(50);
    const serialized = JSON.stringify(rows);
    for (const marker of CANARY_MARKERS) expect(serialized).not.toContain(marker);
  });
});
