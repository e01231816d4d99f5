// A patient's access report (docs/api.md, "A patient's access report"): a referral of the canary
// patient is created with an attachment, read, its form read, its attachment downloaded and read by
// the provider (with an API key, with signed client credentials and in the web form behind a link),
// and probed by an institution that may not see it. Each party's report lists what was done to the
// referrals it may see and nothing else, the report is audited naming the referrals it covered, bad
// input is a 400 naming the field, and the UIN is never in a log line, an audit row or an error.
import { randomUUID } from 'node:crypto';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { auditEventOf, systemActor } from '../../../src/domain/audit.ts';
import { auditRepository } from '../../../src/db/audit/audit.repository.ts';
import { APP_ENGINES } from '../../support/engines.ts';
import { TEXT } from '../../support/fixtures/attachment-files.ts';
import { CANARY, CANARY_MARKERS } from '../../support/fixtures/patients.ts';
import { call, createDraft, referralIn } from '../../support/scenarios.ts';
import { apiKeyIdOf, auditRowsOf } from '../../support/store-inspection.ts';
import { createTestApp, type TestApp, type TestParty } from '../../support/test-app.ts';
import { linksOf, redeem, WEB_REQUESTER } from '../../support/web.ts';

const REPORT = '/api/v1/patients/access-report';
const REQUESTER = 'dr.tan@example.org';
const PROVIDER_PERSON = 'dr.wong@centralgeneral.example';
const CLIENT_LABEL = 'Central General Hospital EHR';

interface AccessJson {
  occurredAt: string;
  action: string;
  outcome: 'success' | 'denied';
  referralId: string;
  channel: 'api' | 'web-form' | 'ops' | 'refhub';
  institution: { idType: string; id: string; name: string | null } | null;
  system: string | null;
  requesterIdentifier: string | null;
  client: { kind: 'api-key' | 'client'; prefix: string; clientId?: string; label: string | null } | null;
  requestId: string;
}

interface ReportJson {
  data: AccessJson[];
  metadata: { offset: number; pageSize: number; hasNext: boolean; total: number; asOf: string };
}

interface ProblemJson {
  status: number;
  code: string;
  errors?: { path: string; message: string }[];
}

function leakedMarkers(text: string): string[] {
  return CANARY_MARKERS.filter((marker) => text.includes(marker));
}

describe.each(APP_ENGINES)('patient access report on %s', (engine) => {
  let t: TestApp;
  /** The canary's referral, from t.sender to t.provider, submitted. */
  let referral: string;
  /** Another patient's referral between the same two institutions. */
  let otherPatients: string;
  /** The canary's draft at another clinic, to a provider that cannot see it yet. */
  let elsewhere: string;
  let providerClient: string;
  let providerToken: string;
  const responses: LightMyRequestResponse[] = [];

  async function send(who: TestParty | string, options: Parameters<TestApp['request']>[1]) {
    const res =
      typeof who === 'string'
        ? await t.app.inject({ ...options, headers: { authorization: `Bearer ${who}`, ...options.headers } })
        : await t.request(who, options);
    responses.push(res);
    return res;
  }

  function report(who: TestParty, query: Record<string, string | number> = {}) {
    return send(who, {
      method: 'GET',
      url: REPORT,
      query: {
        ...who.institution,
        requesterIdentifier: REQUESTER,
        patientUin: CANARY.patientUin,
        pageSize: '1000',
        ...Object.fromEntries(Object.entries(query).map(([name, value]) => [name, String(value)])),
      },
    });
  }

  async function reportOf(who: TestParty, query: Record<string, string | number> = {}): Promise<ReportJson> {
    const res = await report(who, query);
    expect(res.statusCode, res.body).toBe(200);
    return res.json<ReportJson>();
  }

  function read(who: TestParty | string, url: string, institution: TestParty['institution'], person: string) {
    return send(who, { method: 'GET', url, query: { ...institution, requesterIdentifier: person } });
  }

  async function prefixOf(party: TestParty): Promise<string> {
    const row = await t.ctx.db
      .selectFrom('api_keys')
      .select('prefix')
      .where('id', '=', await apiKeyIdOf(t, party))
      .executeTakeFirstOrThrow();
    return row.prefix;
  }

  beforeAll(async () => {
    t = await createTestApp(engine);
    // The provider's EHR holds signed client credentials too, and reads with an access token.
    const { privateKey, publicKey } = await generateKeyPair('ES384', { extractable: true });
    const publicJwk = { ...(await exportJWK(publicKey)), kid: 'cgh-1', alg: 'ES384', use: 'sig' };
    providerClient = (
      await t.ctx.clientCredentials.register({
        system: 'Epic',
        role: 'provider',
        institution: { idType: 'hci', id: t.provider.institution.institutionId },
        label: CLIENT_LABEL,
        keys: { kind: 'inline', jwks: { keys: [publicJwk] } },
      })
    ).id;
    const now = Math.floor(Date.now() / 1000);
    const assertion = await new SignJWT({ jti: randomUUID() })
      .setProtectedHeader({ alg: 'ES384', kid: 'cgh-1' })
      .setIssuer(providerClient)
      .setSubject(providerClient)
      .setAudience('http://refhub.test/oauth2/token')
      .setIssuedAt(now)
      .setExpirationTime(now + 60)
      .sign(privateKey);
    const granted = await t.app.inject({
      method: 'POST',
      url: '/oauth2/token',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams({
        grant_type: 'client_credentials',
        client_assertion_type: 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer',
        client_assertion: assertion,
      }).toString(),
    });
    expect(granted.statusCode, granted.body).toBe(200);
    providerToken = granted.json<{ access_token: string }>().access_token;

    // The canary's referral: created with a file, submitted, then read by everybody who may.
    referral = (await createDraft(t, CANARY)).id;
    const attached = await send(t.sender, {
      method: 'POST',
      url: `/api/v1/referrals/${referral}/attachments`,
      query: { ...t.sender.institution, requesterIdentifier: REQUESTER },
      headers: {
        'content-type': 'application/octet-stream',
        'content-disposition': "attachment; filename*=UTF-8''ecg.txt",
      },
      payload: TEXT,
    });
    expect(attached.statusCode, attached.body).toBe(201);
    const attachment = attached.json<{ id: string }>().id;
    await call(t, t.sender, 'POST', `/api/v1/referrals/${referral}/submit`, {});
    const byId = `/api/v1/referrals/${referral}`;
    for (const res of [
      await read(t.sender, byId, t.sender.institution, REQUESTER),
      await send(t.sender, {
        method: 'GET',
        url: byId,
        query: { ...t.sender.institution, requesterIdentifier: REQUESTER, additionalField: 'ehrForm' },
      }),
      await read(t.provider, byId, t.provider.institution, PROVIDER_PERSON),
      await read(
        t.provider,
        `${byId}/attachments/${attachment}/content`,
        t.provider.institution,
        PROVIDER_PERSON,
      ),
      await read(providerToken, byId, t.provider.institution, PROVIDER_PERSON),
    ]) {
      expect(res.statusCode, res.body).toBe(200);
    }
    // A clinic that has no part in it tries to read it: 404, audited as denied.
    expect((await read(t.otherSender, byId, t.otherSender.institution, REQUESTER)).statusCode).toBe(404);
    // A person at the hospital opens the referral in the web form, through a link its system was given.
    const [link] = Object.values(await linksOf(t, referral, t.provider));
    expect(link).toBeDefined();
    await redeem(t, link!);

    otherPatients = (await referralIn(t, 'pending-acceptance')).id;
    expect(
      (await read(t.provider, `/api/v1/referrals/${otherPatients}`, t.provider.institution, PROVIDER_PERSON))
        .statusCode,
    ).toBe(200);
    elsewhere = String(
      (
        await call(
          t,
          t.otherSender,
          'POST',
          '/api/v1/referrals',
          { offeringId: 'erh-gpfirst', ...CANARY },
          201,
        )
      ).id,
    );
  });
  afterAll(async () => {
    await t.close();
  });

  it('lists every access to the sender’s referral of the patient, newest first, naming who acted and how', async () => {
    const { data, metadata } = await reportOf(t.sender);
    expect(metadata).toEqual({
      offset: 0,
      pageSize: 1000,
      hasNext: false,
      total: data.length,
      asOf: expect.stringMatching(/^[1-9][0-9]*$/) as unknown,
    });
    // Another patient's referral, and the canary's at a clinic the sender has nothing to do with, are absent.
    expect(new Set(data.map((e) => e.referralId))).toEqual(new Set([referral]));
    const occurred = data.map((e) => Date.parse(e.occurredAt));
    expect(occurred).toEqual([...occurred].sort((a, b) => b - a));
    for (const entry of data)
      expect(entry.occurredAt).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);

    const sender: Actor = {
      institution: { idType: 'hci', id: 'S1234A', name: 'Bukit Timah Family Clinic' },
      system: 'HAS',
      client: { kind: 'api-key', prefix: await prefixOf(t.sender), label: null },
    };
    const provider: Actor = {
      institution: { idType: 'hci', id: 'S9001Z', name: 'Central General Hospital' },
      system: 'Epic',
      client: { kind: 'api-key', prefix: await prefixOf(t.provider), label: null },
    };
    const clientRow = await t.ctx.db
      .selectFrom('api_keys')
      .select('prefix')
      .where('id', '=', providerClient)
      .executeTakeFirstOrThrow();
    const viaClient: Actor = {
      ...provider,
      client: { kind: 'client', prefix: clientRow.prefix, clientId: providerClient, label: CLIENT_LABEL },
    };
    const other: Actor = {
      institution: { idType: 'hci', id: 'S2345B', name: 'Tampines Medical Centre' },
      system: 'Epic',
      client: { kind: 'api-key', prefix: await prefixOf(t.otherSender), label: null },
    };
    type Actor = Pick<AccessJson, 'institution' | 'system' | 'client'>;
    const entry = (
      action: string,
      who: Actor,
      requesterIdentifier: string | null,
      more: Partial<AccessJson> = {},
    ) => ({
      action,
      outcome: 'success',
      referralId: referral,
      channel: 'api',
      ...who,
      requesterIdentifier,
      auditEventId: expect.stringMatching(/^[0-9a-f]{8}-[0-9a-f]{4}-7/) as unknown,
      occurredAt: expect.any(String) as unknown,
      requestId: expect.any(String) as unknown,
      ...more,
    });
    expect(data).toEqual(
      [
        entry('referral.create', sender, null),
        entry('referral.add-attachment', sender, REQUESTER),
        entry('referral.submit', sender, null),
        entry('referral.read', sender, REQUESTER),
        entry('referral.read-ehr-form', sender, REQUESTER),
        entry('referral.read', provider, PROVIDER_PERSON),
        entry('referral.read-attachment-content', provider, PROVIDER_PERSON),
        entry('referral.read', viaClient, PROVIDER_PERSON),
        entry('referral.read', other, REQUESTER, { outcome: 'denied' }),
        entry('referral.read', provider, WEB_REQUESTER),
        entry('link.redeem', { ...provider, system: 'Manual' }, WEB_REQUESTER, { channel: 'web-form' }),
      ].reverse(),
    );
  });

  it('names refhub’s own work and its operators’ views, acting for no institution', async () => {
    // The rows the forwarder and the ops pages write (forwarding.service.ts, admin-audit.ts).
    const audit = auditRepository(t.ctx.db);
    await audit.record(
      auditEventOf(systemActor('forward-1'), 'ehr.forward.delivered', [referral], t.ctx.clock.now()),
    );
    const opsKey = await apiKeyIdOf(t, t.ops);
    const operator = {
      requestId: 'ops-1',
      apiKeyId: opsKey,
      system: 'HAS',
      institution: null,
      requesterIdentifier: 'alice',
    };
    await audit.record(
      auditEventOf(operator, 'admin.overview.read', [referral, otherPatients], t.ctx.clock.now()),
    );
    const [viewed, forwarded] = (await reportOf(t.sender)).data;
    expect(forwarded).toMatchObject({
      action: 'ehr.forward.delivered',
      channel: 'refhub',
      system: 'refhub',
      institution: null,
      client: null,
      requestId: 'forward-1',
    });
    expect(viewed).toMatchObject({
      action: 'admin.overview.read',
      referralId: referral,
      channel: 'ops',
      institution: null,
      requesterIdentifier: 'alice',
      client: { kind: 'api-key', prefix: await prefixOf(t.ops) },
    });
  });

  it('gives the provider the same referral, read with its own client', async () => {
    const { data } = await reportOf(t.provider);
    expect(new Set(data.map((e) => e.referralId))).toEqual(new Set([referral]));
    expect(data.map((e) => e.action)).toContain('referral.read-attachment-content');
    // A token reads the report too (a read needs `system/Referral.read` only).
    const viaToken = await send(providerToken, {
      method: 'GET',
      url: REPORT,
      query: {
        ...t.provider.institution,
        requesterIdentifier: PROVIDER_PERSON,
        patientUin: CANARY.patientUin,
      },
    });
    expect(viaToken.statusCode, viaToken.body).toBe(200);
    expect(new Set(viaToken.json<ReportJson>().data.map((e) => e.referralId))).toEqual(new Set([referral]));
  });

  it('shows another clinic only its own referral of the patient, not the one it was refused', async () => {
    const { data } = await reportOf(t.otherSender);
    expect(data.map((e) => [e.action, e.referralId, e.institution?.id])).toEqual([
      ['referral.create', elsewhere, 'S2345B'],
    ]);
  });

  it('gives an institution with no referral of the patient it may see an empty report', async () => {
    // The draft at the other clinic names this provider, which sees it only once it is submitted.
    const res = await report(t.otherProvider);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toEqual({
      data: [],
      metadata: { offset: 0, pageSize: 1000, hasNext: false, total: 0, asOf: '0' },
    });
    const [row] = await auditRowsOf(t, res);
    expect(row).toMatchObject({
      action: 'patient.access-report',
      institution_id: 'S9002Y',
      referral_ids: [],
    });
  });

  it('pages like the referral list, as the first page saw it when asked with its asOf', async () => {
    const full = await reportOf(t.sender);
    const { asOf, total } = full.metadata;
    // Each report adds itself at the top: without asOf, the next page has moved down by an entry.
    const moved = await reportOf(t.sender, { offset: 1, pageSize: 3 });
    expect(moved.data).toEqual(full.data.slice(0, 3));
    expect(moved.metadata).toMatchObject({ hasNext: true, total: total + 1 });
    const page = await reportOf(t.sender, { offset: 1, pageSize: 3, asOf });
    expect(page).toEqual({
      data: full.data.slice(1, 4),
      metadata: { offset: 1, pageSize: 3, hasNext: true, total, asOf },
    });
    const last = await reportOf(t.sender, { offset: total - 2, pageSize: 3, asOf });
    expect(last).toEqual({
      data: full.data.slice(-2),
      metadata: { offset: total - 2, pageSize: 3, hasNext: false, total, asOf },
    });
    const past = await reportOf(t.sender, { offset: 10_000, pageSize: 3, asOf });
    expect(past).toEqual({
      data: [],
      metadata: { offset: 10_000, pageSize: 3, hasNext: false, total, asOf },
    });
    // An asOf past every row leaves nothing out.
    expect((await reportOf(t.sender, { asOf: '99999999999999999999'.slice(0, 19) })).metadata.total).toBe(
      total + 5,
    );
  });

  it('audits the report, naming the referrals it covered and never the UIN, and lists it in the next one', async () => {
    const res = await report(t.sender);
    expect(res.statusCode).toBe(200);
    const rows = await auditRowsOf(t, res);
    expect(rows).toEqual([
      {
        request_id: String(res.headers['x-request-id']),
        api_key_id: await apiKeyIdOf(t, t.sender),
        system: 'HAS',
        institution_id_type: 'hci',
        institution_id: 'S1234A',
        requester_identifier: REQUESTER,
        action: 'patient.access-report',
        outcome: 'success',
        referral_ids: [referral],
      },
    ]);
    expect(leakedMarkers(JSON.stringify(rows))).toEqual([]);
    const [latest] = (await reportOf(t.sender)).data;
    expect(latest).toMatchObject({
      action: 'patient.access-report',
      referralId: referral,
      requestId: res.headers['x-request-id'],
      requesterIdentifier: REQUESTER,
    });
  });

  it('takes the UIN in the body too, and audits a replay naming the same referrals', async () => {
    const search = (key: string) =>
      send(t.sender, {
        method: 'POST',
        url: `${REPORT}/search`,
        headers: { 'idempotency-key': key },
        payload: { ...t.sender.institution, requesterIdentifier: REQUESTER, patientUin: CANARY.patientUin },
      });
    const key = `access-report-${randomUUID()}`;
    const first = await search(key);
    expect(first.statusCode, first.body).toBe(200);
    const body = first.json<ReportJson>();
    expect(body.metadata).toMatchObject({ offset: 0, pageSize: 10 });
    expect(new Set(body.data.map((e) => e.referralId))).toEqual(new Set([referral]));
    expect(await auditRowsOf(t, first)).toMatchObject([
      { action: 'patient.access-report', referral_ids: [referral] },
    ]);
    const again = await search(key);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.json()).toEqual(body);
    expect(await auditRowsOf(t, again)).toMatchObject([
      { action: 'patient.access-report.replay', referral_ids: [referral] },
    ]);
  });

  it.each([
    ['a missing UIN', 'GET', {}, 'query.patientUin', 'is required'],
    ['a malformed UIN', 'GET', { patientUin: 'S7777777' }, 'query.patientUin', undefined],
    ['a UIN in lower case', 'GET', { patientUin: 's7777777q' }, 'query.patientUin', undefined],
    ['a UIN that is a name', 'POST', { patientUin: CANARY.patientName }, 'body.patientUin', undefined],
    ['no UIN in the body', 'POST', {}, 'body.patientUin', 'is required'],
    [
      'an asOf that is not one',
      'GET',
      { patientUin: CANARY.patientUin, asOf: 'yesterday' },
      'query.asOf',
      undefined,
    ],
  ] as const)(
    'refuses %s with a 400 naming the field, never its value',
    async (_label, method, sent, path, message) => {
      const fields = { ...t.sender.institution, requesterIdentifier: REQUESTER, ...sent };
      const res = await send(
        t.sender,
        method === 'GET'
          ? { method, url: REPORT, query: fields }
          : { method, url: `${REPORT}/search`, payload: fields },
      );
      expect(res.statusCode).toBe(400);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      const problem = res.json<ProblemJson>();
      expect(problem.code).toBe('validation_failed');
      expect(problem.errors).toEqual([{ path, message: message ?? (expect.any(String) as unknown) }]);
      expect(res.body).not.toContain(CANARY.patientUin);
      for (const value of Object.values(sent)) expect(res.body).not.toContain(value);
      expect(leakedMarkers(res.body)).toEqual([]);
    },
  );

  it('refuses ops keys and institutions the key does not hold, audited as denied without the UIN', async () => {
    const ops = await report(t.ops, {});
    expect(ops.statusCode).toBe(403);
    expect(ops.json<ProblemJson>().code).toBe('forbidden_role');
    const foreign = await send(t.sender, {
      method: 'GET',
      url: REPORT,
      query: { ...t.provider.institution, requesterIdentifier: REQUESTER, patientUin: CANARY.patientUin },
    });
    expect(foreign.statusCode).toBe(403);
    expect(foreign.json<ProblemJson>().code).toBe('institution_not_permitted');
    for (const res of [ops, foreign]) {
      const rows = await auditRowsOf(t, res);
      expect(rows).toMatchObject([{ action: 'patient.access-report', outcome: 'denied', referral_ids: [] }]);
      expect(leakedMarkers(JSON.stringify(rows) + res.body)).toEqual([]);
    }
  });

  it('keeps the UIN out of every log line', () => {
    const reports = t.logs.filter((line) => line.includes(`"route":"${REPORT}`));
    expect(reports.length).toBeGreaterThanOrEqual(10);
    expect(t.logs.filter((line) => leakedMarkers(line).length > 0)).toEqual([]);
    expect(responses.length).toBeGreaterThan(20);
  });
});
