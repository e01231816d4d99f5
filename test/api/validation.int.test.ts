// Request validation on every endpoint (spec §4, contract §5 and §9): each required field, unknown
// fields, bad formats, bad bodies. Every answer is problem+json that names the field and never
// quotes the value that was sent.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { errorPaths, expectProblem, type ProblemJson } from '../support/api-assertions.ts';
import { APP_ENGINES } from '../support/engines.ts';
import { PATIENT } from '../support/fixtures/patients.ts';
import { createDraft, referralIn, type ReferralJson } from '../support/scenarios.ts';
import { stateOf } from '../support/store-inspection.ts';
import { createTestApp, type TestApp } from '../support/test-app.ts';

const SENDER = { institutionIdType: 'hci', institutionId: 'S1234A' } as const;
const PROVIDER = { institutionIdType: 'hci', institutionId: 'S9001Z' } as const;
const REQUESTER = 'dr.tan@example.org';

interface Endpoint {
  readonly name: string;
  readonly party: 'sender' | 'provider';
  readonly method: 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE';
  readonly url: (id: string) => string;
  /** A complete, valid query (GET and DELETE) or body (the others). */
  readonly query?: Record<string, string>;
  readonly body?: Record<string, unknown>;
  /** The fields spec §4 / contract §5 require, where they go. */
  readonly required: readonly string[];
}

const ref = (id: string) => `/api/v1/referrals/${id}`;

const ENDPOINTS: readonly Endpoint[] = [
  {
    name: 'list',
    party: 'sender',
    method: 'GET',
    url: () => '/api/v1/institutions/hci/S1234A/referrals',
    query: {},
    required: [],
  },
  {
    name: 'search',
    party: 'sender',
    method: 'POST',
    url: () => '/api/v1/institutions/hci/S1234A/referrals/search',
    body: { patientUin: PATIENT.patientUin },
    required: [],
  },
  {
    name: 'get',
    party: 'sender',
    method: 'GET',
    url: ref,
    query: { requesterIdentifier: REQUESTER, ...SENDER },
    required: ['requesterIdentifier', 'institutionIdType', 'institutionId'],
  },
  {
    name: 'create',
    party: 'sender',
    method: 'POST',
    url: () => '/api/v1/referrals',
    body: { ...SENDER, offeringId: 'cgh-gastro', ...PATIENT },
    required: ['institutionIdType', 'institutionId'],
  },
  {
    name: 'update',
    party: 'sender',
    method: 'PATCH',
    url: ref,
    body: { ...SENDER, clinicalInfo: 'Worse since Monday.' },
    required: ['institutionIdType', 'institutionId'],
  },
  {
    name: 'delete',
    party: 'sender',
    method: 'DELETE',
    url: ref,
    query: { ...SENDER },
    required: ['institutionIdType', 'institutionId'],
  },
  {
    name: 'submit',
    party: 'sender',
    method: 'POST',
    url: (id) => `${ref(id)}/submit`,
    body: { ...SENDER },
    required: ['institutionIdType', 'institutionId'],
  },
  {
    name: 'cancel',
    party: 'sender',
    method: 'POST',
    url: (id) => `${ref(id)}/cancel`,
    body: { ...SENDER, cancelNote: 'Patient recovered' },
    required: ['institutionIdType', 'institutionId', 'cancelNote'],
  },
  {
    name: 'back-to-draft',
    party: 'sender',
    method: 'POST',
    url: (id) => `${ref(id)}/back-to-draft`,
    body: { ...SENDER },
    required: ['institutionIdType', 'institutionId'],
  },
  {
    name: 'notes',
    party: 'sender',
    method: 'POST',
    url: (id) => `${ref(id)}/notes`,
    body: { ...SENDER, content: 'Please call the family.' },
    required: ['institutionIdType', 'institutionId', 'content'],
  },
  {
    name: 'links/upsert',
    party: 'sender',
    method: 'POST',
    url: () => '/api/v1/links/upsert',
    body: { requesterIdentifier: REQUESTER, ...SENDER, ...PATIENT },
    required: ['requesterIdentifier', 'institutionIdType', 'institutionId'],
  },
  {
    name: 'accept',
    party: 'provider',
    method: 'POST',
    url: (id) => `${ref(id)}/accept`,
    body: { ...PROVIDER },
    required: ['institutionIdType', 'institutionId'],
  },
  {
    name: 'reject',
    party: 'provider',
    method: 'POST',
    url: (id) => `${ref(id)}/reject`,
    body: { ...PROVIDER, reason: 'Out of scope' },
    required: ['institutionIdType', 'institutionId', 'reason'],
  },
  {
    name: 'request-action',
    party: 'provider',
    method: 'POST',
    url: (id) => `${ref(id)}/request-action`,
    body: { ...PROVIDER, reason: 'Attach the ECG' },
    required: ['institutionIdType', 'institutionId', 'reason'],
  },
  {
    name: 'appointment PUT',
    party: 'provider',
    method: 'PUT',
    url: (id) => `${ref(id)}/appointments/appt-1`,
    body: {
      ...PROVIDER,
      status: 'scheduled',
      startAt: '2030-01-15T01:30:00.000Z',
      location: 'Clinic 3B',
    },
    required: ['institutionIdType', 'institutionId', 'status', 'startAt', 'location'],
  },
];

const MISSING = ENDPOINTS.flatMap((e) => e.required.map((field) => ({ endpoint: e.name, field })));
const WITH_REFERRAL_ID = ENDPOINTS.filter((e) => e.url('ID').includes('ID'));
/** A value that must never come back in a response. */
const SNEAKY = 'Sneakyvalue-Q9X7';

function endpoint(name: string): Endpoint {
  const found = ENDPOINTS.find((e) => e.name === name);
  if (!found) throw new Error(`no endpoint ${name}`);
  return found;
}

describe.each(APP_ENGINES)('request validation on %s', (engine) => {
  let t: TestApp;
  let draftId: string;
  beforeAll(async () => {
    t = await createTestApp(engine);
    draftId = (await createDraft(t)).id;
  });
  afterAll(async () => {
    await t.close();
  });

  /** Sends `e` with its query or body replaced by `input`, and extra options. */
  function send(
    e: Endpoint,
    input: Record<string, unknown> | undefined,
    options: Partial<InjectOptions> & { id?: string } = {},
  ): Promise<LightMyRequestResponse> {
    const { id = draftId, ...rest } = options;
    const inQuery = e.method === 'GET' || e.method === 'DELETE';
    return t.request(e.party === 'sender' ? t.sender : t.provider, {
      method: e.method,
      url: e.url(id),
      ...(inQuery ? { query: input as Record<string, string> } : { payload: input }),
      ...rest,
    });
  }

  const validInput = (e: Endpoint) => ({ ...(e.query ?? e.body) });

  function expectValidationOf(res: LightMyRequestResponse, sent?: string): ProblemJson {
    const problem = expectProblem(res, 400, 'validation_failed');
    expect(problem.errors?.length).toBeGreaterThan(0);
    if (sent !== undefined) expect(res.body).not.toContain(sent);
    return problem;
  }

  it('covers every endpoint, with the required fields of spec §4', () => {
    expect(ENDPOINTS.map((e) => e.name)).toHaveLength(15);
    expect(MISSING).toHaveLength(35);
  });

  describe('a missing required field', () => {
    it.each(MISSING)('$endpoint without $field → 400 naming it', async ({ endpoint: name, field }) => {
      const e = endpoint(name);
      const input = Object.fromEntries(Object.entries(validInput(e)).filter(([key]) => key !== field));
      const res = await send(e, input);
      const problem = expectValidationOf(res);
      const where = e.query === undefined ? 'body' : 'query';
      // Only that field: the rest of the request is valid.
      expect(problem.errors).toEqual([{ path: `${where}.${field}`, message: 'is required' }]);
      expect(problem.detail).toContain(field);
    });

    it.each(ENDPOINTS.filter((e) => e.body !== undefined).map((e) => e.name))(
      '%s without any body → 400',
      async (name) => {
        const res = await send(endpoint(name), undefined);
        expect(errorPaths(expectValidationOf(res))).toEqual(['body']);
      },
    );
  });

  describe('unknown fields', () => {
    it.each(ENDPOINTS.filter((e) => e.body !== undefined).map((e) => e.name))(
      '%s: an unknown body field → 400 naming it, not its value',
      async (name) => {
        const e = endpoint(name);
        const res = await send(e, { ...validInput(e), isHsgEnrolled: SNEAKY });
        const problem = expectValidationOf(res, SNEAKY);
        expect(problem.errors).toEqual([{ path: 'body.isHsgEnrolled', message: 'is not a known field' }]);
      },
    );

    it.each(ENDPOINTS.map((e) => e.name))(
      '%s: an unknown query parameter → 400 naming it, not its value',
      async (name) => {
        const e = endpoint(name);
        const res =
          e.query === undefined
            ? await send(e, validInput(e), { query: { sneaky: SNEAKY } })
            : await send(e, { ...validInput(e), sneaky: SNEAKY });
        const problem = expectValidationOf(res, SNEAKY);
        expect(problem.errors).toEqual([{ path: 'query.sneaky', message: 'is not a known field' }]);
      },
    );
  });

  describe('bad formats of the referral fields (create and link upsert)', () => {
    const BAD: readonly { field: string; value: unknown; sent: string }[] = [
      { field: 'dob', value: '2999-01-01', sent: '2999-01-01' },
      { field: 'dob', value: '2023-02-30', sent: '2023-02-30' },
      { field: 'dob', value: '1990-13-01', sent: '1990-13-01' },
      { field: 'dob', value: '07/07/1971', sent: '07/07/1971' },
      { field: 'nationality', value: 'Zanzibarland', sent: 'Zanzibarland' },
      { field: 'nationality', value: 'SGP', sent: 'SGP' },
      { field: 'patientPhoneNumber', value: '71234567', sent: '71234567' },
      { field: 'patientPhoneNumber', value: '+6591234567', sent: '+6591234567' },
      { field: 'referrerContactNumber', value: '6123456', sent: '6123456' },
      { field: 'patientUin', value: 'A1234567Z', sent: 'A1234567Z' },
      { field: 'patientUin', value: 's1234567d', sent: 's1234567d' },
      { field: 'patientGender', value: 'Malez', sent: 'Malez' },
      { field: 'residentialStatus', value: 'Citizenz', sent: 'Citizenz' },
      { field: 'referrerIdType', value: 'passportz', sent: 'passportz' },
      { field: 'referrerEmail', value: 'not-an-email-zq', sent: 'not-an-email-zq' },
      { field: 'offeringId', value: 'unknown-offering-zq', sent: 'unknown-offering-zq' },
      // An offering ID that looks like a UIN (a client that mixed up fields) is not quoted either.
      { field: 'offeringId', value: 'S7654321Z', sent: 'S7654321Z' },
      { field: 'patientName', value: 'Z'.repeat(201), sent: 'Z'.repeat(201) },
    ];
    const cases = ['create', 'links/upsert'].flatMap((name) => BAD.map((b) => ({ name, ...b })));

    it.each(cases)('$name: $field = $value → 400 naming $field', async ({ name, field, value, sent }) => {
      const e = endpoint(name);
      const res = await send(e, { ...validInput(e), [field]: value });
      const problem = expectValidationOf(res, sent);
      expect(errorPaths(problem)).toEqual([`body.${field}`]);
    });

    it('PATCH checks the same formats', async () => {
      const e = endpoint('update');
      const res = await send(e, { ...validInput(e), dob: '2999-12-31', nationality: 'Zanzibarland' });
      const problem = expectValidationOf(res, 'Zanzibarland');
      expect(errorPaths(problem)).toEqual(['body.nationality']);
      const future = await send(e, { ...validInput(e), dob: '2999-12-31' });
      expect(errorPaths(expectValidationOf(future, '2999-12-31'))).toEqual(['body.dob']);
    });

    it('accepts a date of birth of today', async () => {
      const e = endpoint('create');
      const today = new Date().toISOString().slice(0, 10);
      const res = await send(e, { ...validInput(e), dob: today });
      expect(res.statusCode, res.body).toBe(201);
    });
  });

  describe('bad values of the other fields', () => {
    const cases: readonly {
      name: string;
      field: string;
      value: unknown;
      path?: string;
      sent?: string;
    }[] = [
      { name: 'cancel', field: 'cancelNote', value: '' },
      { name: 'cancel', field: 'cancelNote', value: 'Z'.repeat(2001), sent: 'Z'.repeat(2001) },
      { name: 'notes', field: 'content', value: '' },
      { name: 'notes', field: 'content', value: 'Z'.repeat(8001), sent: 'Z'.repeat(8001) },
      { name: 'reject', field: 'reason', value: '' },
      { name: 'request-action', field: 'reason', value: 'Z'.repeat(2001), sent: 'Z'.repeat(2001) },
      // The v0.0.66 renames: `booked` is now `scheduled`.
      { name: 'appointment PUT', field: 'status', value: 'booked', sent: 'booked' },
      { name: 'appointment PUT', field: 'status', value: 'noShow', sent: 'noShow' },
      { name: 'appointment PUT', field: 'startAt', value: 'tomorrow-zq', sent: 'tomorrow-zq' },
      { name: 'appointment PUT', field: 'location', value: '' },
      { name: 'submit', field: 'institutionIdType', value: 'uenzq', sent: 'uenzq' },
      { name: 'submit', field: 'institutionId', value: 'S1234A; drop', sent: 'S1234A; drop' },
      { name: 'search', field: 'patientUin', value: 'X7777777Q', sent: 'X7777777Q' },
      { name: 'search', field: 'pageSize', value: 1001 },
      { name: 'get', field: 'additionalField', value: 'ehrFormzq', sent: 'ehrFormzq' },
      { name: 'get', field: 'additionalField', value: 'ehrForm,patientSummaryzq', sent: 'patientSummaryzq' },
      { name: 'get', field: 'institutionIdType', value: 'uenzq', sent: 'uenzq' },
      {
        name: 'list',
        field: 'status',
        value: 'pending-acceptancezq',
        path: 'query.status.0',
        sent: 'pending-acceptancezq',
      },
      { name: 'list', field: 'role', value: 'opszq', sent: 'opszq' },
      { name: 'list', field: 'sort', value: 'namezq', sent: 'namezq' },
      { name: 'list', field: 'pageSize', value: '0' },
      { name: 'list', field: 'pageSize', value: '1001' },
      { name: 'list', field: 'offset', value: '-1' },
      { name: 'list', field: 'offset', value: 'firstzq', sent: 'firstzq' },
      // JSON bodies have real types: nothing is converted on the way in.
      { name: 'create', field: 'isUrgent', value: 'true' },
      { name: 'create', field: 'clinicalInfo', value: 12345 },
      { name: 'notes', field: 'content', value: 42 },
      { name: 'search', field: 'pageSize', value: '10' },
      { name: 'search', field: 'status', value: 'draft' },
    ];

    it.each(cases)('$name: $field = $value → 400', async ({ name, field, value, path, sent }) => {
      const e = endpoint(name);
      const res = await send(e, { ...validInput(e), [field]: value });
      const problem = expectValidationOf(res, sent);
      expect(errorPaths(problem)).toEqual([path ?? `${e.query === undefined ? 'body' : 'query'}.${field}`]);
    });

    it('query strings are text, so numbers and single values are read as such', async () => {
      const res = await t.request(t.sender, {
        method: 'GET',
        url: '/api/v1/institutions/hci/S1234A/referrals?pageSize=2&offset=0&status=draft',
      });
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json()).toMatchObject({ metadata: { pageSize: 2, offset: 0 } });
    });

    it('a list with a status that is not a coreStatus, among good ones → 400 on query.status', async () => {
      const res = await t.request(t.sender, {
        method: 'GET',
        url: '/api/v1/institutions/hci/S1234A/referrals?status=draft&status=bogus-zq',
      });
      expect(errorPaths(expectValidationOf(res, 'bogus-zq'))).toEqual(['query.status.1']);
    });

    it('a path institution type that is not known → 400 on path.institutionIdType', async () => {
      const res = await t.request(t.sender, {
        method: 'GET',
        url: '/api/v1/institutions/uenzq/S1234A/referrals',
      });
      expect(errorPaths(expectValidationOf(res, 'uenzq'))).toEqual(['path.institutionIdType']);
    });

    it('an appointment ID outside 1–64 of A-Za-z0-9._- → 400 on path.appointmentId', async () => {
      const e = endpoint('appointment PUT');
      for (const bad of ['appt%20zq', 'z'.repeat(65)]) {
        const res = await t.request(t.provider, {
          method: 'PUT',
          url: `${ref(draftId)}/appointments/${bad}`,
          payload: validInput(e),
        });
        expect(errorPaths(expectValidationOf(res, bad.replace('%20', ' ')))).toEqual(['path.appointmentId']);
      }
    });
  });

  describe('the referral ID in the path', () => {
    it.each(WITH_REFERRAL_ID.map((e) => e.name))('%s with a non-UUID referralId → 400', async (name) => {
      const e = endpoint(name);
      const res = await send(e, validInput(e), { id: 'not-a-uuid-zq' });
      const problem = expectValidationOf(res, 'not-a-uuid-zq');
      expect(errorPaths(problem)).toEqual(['path.referralId']);
    });
  });

  describe('bodies that are not a JSON object', () => {
    const POSTS = ENDPOINTS.filter((e) => e.body !== undefined).map((e) => e.name);

    it.each(POSTS)('%s: invalid JSON → 400 naming the body, not quoting it', async (name) => {
      const res = await send(endpoint(name), undefined, {
        headers: { 'content-type': 'application/json' },
        payload: '{"institutionIdType": "hci", "content": "Zorblaxq',
      });
      const problem = expectValidationOf(res, 'Zorblaxq');
      expect(problem.errors).toEqual([{ path: 'body', message: 'is not valid JSON' }]);
    });

    it.each(POSTS)('%s: a JSON array → 400', async (name) => {
      const res = await send(endpoint(name), undefined, {
        headers: { 'content-type': 'application/json' },
        payload: '["Zorblaxq"]',
      });
      expect(errorPaths(expectValidationOf(res, 'Zorblaxq'))).toEqual(['body']);
    });

    it.each(
      POSTS.flatMap((name) =>
        ['text/plain', 'application/xml', 'application/x-www-form-urlencoded'].map((type) => ({
          name,
          type,
        })),
      ),
    )('$name: content type $type → 415', async ({ name, type }) => {
      const res = await send(endpoint(name), undefined, {
        headers: { 'content-type': type },
        payload: 'institutionIdType=hci&note=Zorblaxq',
      });
      const problem = expectProblem(res, 415, 'unsupported_media_type');
      expect(res.body).not.toContain('Zorblaxq');
      expect(problem.detail).toMatch(/application\/json/);
    });

    it.each(POSTS)('%s: a body over 256 KiB → 413 payload_too_large', async (name) => {
      const e = endpoint(name);
      const res = await send(e, { ...validInput(e), filler: `Zorblaxq${'z'.repeat(256 * 1024)}` });
      expectProblem(res, 413, 'payload_too_large');
      expect(res.body).not.toContain('Zorblaxq');
    });

    it('a body just under 256 KiB is read (and then judged on its fields)', async () => {
      const e = endpoint('notes');
      // 200 KiB of content is within the body limit but over content's 8000 characters.
      const res = await send(e, { ...validInput(e), content: 'z'.repeat(200 * 1024) });
      expect(errorPaths(expectValidationOf(res))).toEqual(['body.content']);
    });
  });

  describe('submit of an incomplete referral', () => {
    it('→ 422 incomplete_referral listing the missing patient fields', async () => {
      const draft = await createDraft(t, { patientName: null, patientUin: null });
      const res = await send(endpoint('submit'), { ...SENDER }, { id: draft.id });
      const problem = expectProblem(res, 422, 'incomplete_referral');
      expect(problem.missing).toEqual(['patientName', 'patientUin']);
      expect(errorPaths(problem)).toEqual(['patientName', 'patientUin']);
      // Still a draft, unchanged.
      const after = await t.request(t.sender, {
        method: 'GET',
        url: ref(draft.id),
        query: { requesterIdentifier: REQUESTER, ...SENDER },
      });
      expect(after.json()).toMatchObject({ status: 'draft', version: draft.version });
    });

    it('→ 422 listing the offering too when it has none', async () => {
      const res = await t.request(t.sender, { method: 'POST', url: '/api/v1/referrals', payload: SENDER });
      expect(res.statusCode, res.body).toBe(201);
      const id = res.json<{ id: string }>().id;
      const problem = expectProblem(
        await send(endpoint('submit'), { ...SENDER }, { id }),
        422,
        'incomplete_referral',
      );
      expect(problem.missing).toEqual(['offeringId', 'patientName', 'patientUin']);
      expect(problem.detail).toContain('offeringId, patientName, patientUin');
    });
  });

  describe('bad input: text the store cannot hold, text that says nothing, dates out of range', () => {
    /** A distinctive word around the bad character, so a test can tell the value was not quoted. */
    const MARKER = 'Quokkamark';
    const NUL = `Dr ${MARKER}\u0000Tan`;
    const LONE_SURROGATE = `Dr ${MARKER}\ud800Tan`;
    const BLANKS = ['   ', ' \t\r\n ', '\u00a0\u2003'] as const;
    const YEARS = 365.25 * 24 * 3600_000;

    let pending: ReferralJson;
    let accepted: ReferralJson;
    beforeAll(async () => {
      pending = await referralIn(t, 'pending-acceptance');
      accepted = await referralIn(t, 'accepted');
    });

    /** Each free-text field, sent where the operation would otherwise succeed and write it. */
    interface TextField {
      readonly name: string;
      readonly field: string;
      /** Where the referral must be for the operation to go through. */
      readonly on: 'draft' | 'pending' | 'accepted';
    }
    const TEXT_FIELDS: readonly TextField[] = [
      ...['patientName', 'referrerName', 'referrerId', 'clinicalInfo', 'requesterIdentifier'].flatMap(
        (field) =>
          ['create', 'update', 'links/upsert'].map((name) => ({ name, field, on: 'draft' as const })),
      ),
      { name: 'search', field: 'requesterIdentifier', on: 'draft' },
      { name: 'notes', field: 'content', on: 'draft' },
      { name: 'notes', field: 'authorName', on: 'draft' },
      { name: 'cancel', field: 'cancelNote', on: 'pending' },
      { name: 'cancel', field: 'cancelledByName', on: 'pending' },
      { name: 'reject', field: 'reason', on: 'pending' },
      { name: 'reject', field: 'rejectedByName', on: 'pending' },
      { name: 'request-action', field: 'reason', on: 'pending' },
      { name: 'request-action', field: 'requestedByName', on: 'pending' },
      { name: 'accept', field: 'acceptedByName', on: 'pending' },
      { name: 'appointment PUT', field: 'location', on: 'accepted' },
      { name: 'get', field: 'requesterIdentifier', on: 'draft' },
      { name: 'list', field: 'requesterIdentifier', on: 'draft' },
      { name: 'delete', field: 'requesterIdentifier', on: 'draft' },
    ];
    const idFor = (on: TextField['on']) =>
      on === 'draft' ? draftId : on === 'pending' ? pending.id : accepted.id;

    async function expectRefused(
      e: Endpoint,
      field: string,
      value: unknown,
      on: TextField['on'],
    ): Promise<ProblemJson> {
      const id = idFor(on);
      const before = await stateOf(t, id);
      const res = await send(e, { ...validInput(e), [field]: value }, { id });
      const problem = expectValidationOf(res, MARKER);
      expect(errorPaths(problem)).toEqual([`${e.query === undefined ? 'body' : 'query'}.${field}`]);
      expect(await stateOf(t, id)).toEqual(before);
      return problem;
    }

    it.each(TEXT_FIELDS)('$name: a NUL character in $field → 400 naming it', async ({ name, field, on }) => {
      const problem = await expectRefused(endpoint(name), field, NUL, on);
      expect(problem.errors?.[0]?.message).toMatch(/NUL/);
    });

    it.each(TEXT_FIELDS.filter((f) => !['get', 'list', 'delete'].includes(f.name)))(
      '$name: an unpaired surrogate in $field → 400 naming it (it cannot be stored as sent)',
      async ({ name, field, on }) => {
        await expectRefused(endpoint(name), field, LONE_SURROGATE, on);
      },
    );

    it('a NUL character percent-encoded in a query string → 400 naming the parameter', async () => {
      const res = await t.request(t.sender, {
        method: 'GET',
        url: `${ref(draftId)}?requesterIdentifier=a%00${MARKER}&institutionIdType=hci&institutionId=S1234A`,
      });
      expect(errorPaths(expectValidationOf(res, MARKER))).toEqual(['query.requesterIdentifier']);
    });

    /** The text that must say something: notes, reasons and the names of people. */
    const MUST_SAY_SOMETHING: readonly TextField[] = [
      { name: 'cancel', field: 'cancelNote', on: 'pending' },
      { name: 'cancel', field: 'cancelledByName', on: 'pending' },
      { name: 'reject', field: 'reason', on: 'pending' },
      { name: 'request-action', field: 'reason', on: 'pending' },
      { name: 'accept', field: 'acceptedByName', on: 'pending' },
      { name: 'notes', field: 'content', on: 'draft' },
      { name: 'notes', field: 'authorName', on: 'draft' },
      { name: 'create', field: 'patientName', on: 'draft' },
      { name: 'update', field: 'patientName', on: 'draft' },
      { name: 'update', field: 'referrerName', on: 'draft' },
      { name: 'links/upsert', field: 'referrerName', on: 'draft' },
      { name: 'appointment PUT', field: 'location', on: 'accepted' },
      { name: 'get', field: 'requesterIdentifier', on: 'draft' },
    ];

    it.each(MUST_SAY_SOMETHING.flatMap((f) => BLANKS.map((blank) => ({ ...f, blank }))))(
      '$name: $field of whitespace only ($blank) → 400 naming it, and nothing changes',
      async ({ name, field, on, blank }) => {
        const problem = await expectRefused(endpoint(name), field, blank, on);
        expect(problem.errors?.[0]?.message).toMatch(/whitespace/);
      },
    );

    it('a cancel note of spaces does not cancel, and the timeline says nothing about it', async () => {
      const res = await send(endpoint('cancel'), { ...SENDER, cancelNote: '   ' }, { id: pending.id });
      expectValidationOf(res);
      const after = await t.request(t.sender, {
        method: 'GET',
        url: ref(pending.id),
        query: { requesterIdentifier: REQUESTER, ...SENDER },
      });
      const view = after.json<{ status: string; timelineEvents: { description: string }[] }>();
      expect(view.status).toBe('pending-acceptance');
      expect(view.timelineEvents.map((e) => e.description).join('\n')).not.toMatch(/cancelled/);
    });

    it('clinical information may still be blank: spaces alone clear it, as null does', async () => {
      const draft = await createDraft(t, { clinicalInfo: 'Fever.' });
      const res = await send(endpoint('update'), { ...SENDER, clinicalInfo: '  \n ' }, { id: draft.id });
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json()).toMatchObject({ clinicalInfo: null });
    });

    describe('dates of birth: a real date from 1900-01-01, not in the future', () => {
      it.each(
        ['0000-01-01', '0001-01-01', '1800-01-01', '1899-12-31'].flatMap((dob) =>
          ['create', 'update', 'links/upsert'].map((name) => ({ name, dob })),
        ),
      )('$name: dob $dob → 400 naming dob', async ({ name, dob }) => {
        const e = endpoint(name);
        const res = await send(e, { ...validInput(e), dob });
        const problem = expectValidationOf(res, dob);
        expect(problem.errors).toEqual([
          { path: 'body.dob', message: expect.stringContaining('1900-01-01') as unknown },
        ]);
      });

      it('accepts 1900-01-01', async () => {
        const e = endpoint('create');
        const res = await send(e, { ...validInput(e), dob: '1900-01-01' });
        expect(res.statusCode, res.body).toBe(201);
        expect(res.json()).toMatchObject({ patient: { dob: '1900-01-01' } });
      });
    });

    describe('appointments: a real instant within 5 years of now', () => {
      const at = (offsetYears: number) => new Date(Date.now() + offsetYears * YEARS).toISOString();
      const put = (startAt: string) =>
        send(
          endpoint('appointment PUT'),
          { ...PROVIDER, status: 'scheduled', startAt, location: 'Clinic 3B' },
          {
            id: accepted.id,
          },
        );

      it.each([
        ['year 0000', '0000-01-01T00:00:00.000Z'],
        ['year 0001', '0001-01-01T00:00:00.000Z'],
        ['year 9999', '9999-12-31T23:59:59.999Z'],
        ['a leap second, which Date cannot represent', '2026-12-31T23:59:60Z'],
        ['an offset without minutes', '2026-12-01T09:00:00+08'],
        ['an offset that pushes the instant past year 9999', '9999-12-31T23:59:59-23:59'],
        ['30 February', '2027-02-30T09:00:00Z'],
        ['more than 5 years ahead', at(5.1)],
        ['more than 5 years ago', at(-5.1)],
      ])('startAt of %s → 400 naming startAt, and nothing changes', async (_label, startAt) => {
        const before = await stateOf(t, accepted.id);
        const problem = expectValidationOf(await put(startAt));
        expect(errorPaths(problem)).toEqual(['body.startAt']);
        expect(await stateOf(t, accepted.id)).toEqual(before);
      });

      it('accepts instants up to 5 years either side of now, with an offset, and answers them in UTC', async () => {
        for (const startAt of [at(4.9), at(-4.9)]) {
          const res = await put(startAt);
          expect(res.statusCode, res.body).toBe(200);
        }
        const res = await put('2027-03-01T09:30:00+08:00');
        expect(res.statusCode, res.body).toBe(200);
        const view = res.json<{ appointments: { startAt: string }[] }>();
        expect(view.appointments.map((a) => a.startAt)).toEqual(['2027-03-01T01:30:00.000Z']);
      });
    });
  });
  describe('text that would mislead a reader, and bytes that are not text', () => {
    /** A distinctive word around the bad character, so a test can tell the value was not quoted. */
    const MARKER = 'Wallabymark';
    const RLO = '\u202e';
    const NEL = '\u0085';

    let pending: ReferralJson;
    beforeAll(async () => {
      pending = await referralIn(t, 'pending-acceptance');
    });

    it.each(
      [
        { name: 'create', field: 'patientName', char: RLO },
        { name: 'update', field: 'patientName', char: RLO },
        { name: 'links/upsert', field: 'patientName', char: RLO },
        { name: 'update', field: 'referrerName', char: '\u2066' },
        { name: 'update', field: 'clinicalInfo', char: RLO },
        { name: 'notes', field: 'content', char: '\u200f' },
        { name: 'create', field: 'patientName', char: NEL },
        { name: 'update', field: 'referrerName', char: NEL },
        { name: 'notes', field: 'authorName', char: NEL },
        { name: 'notes', field: 'content', char: NEL },
        { name: 'update', field: 'patientName', char: '\n' },
        { name: 'notes', field: 'authorName', char: '\t' },
        { name: 'update', field: 'clinicalInfo', char: '\u001b' },
      ].map((c) => ({ ...c, code: `U+${c.char.charCodeAt(0).toString(16).padStart(4, '0').toUpperCase()}` })),
    )('$name: $field holding $code → 400 naming it, and nothing changes', async ({ name, field, char }) => {
      const e = endpoint(name);
      const before = await stateOf(t, draftId);
      const res = await send(e, { ...validInput(e), [field]: `Tan ${MARKER}${char}Ah Kow` });
      const problem = expectValidationOf(res, MARKER);
      expect(errorPaths(problem)).toEqual([`body.${field}`]);
      expect(problem.errors?.[0]?.message).toMatch(/control characters/);
      expect(await stateOf(t, draftId)).toEqual(before);
    });

    it('a right-to-left override in a query parameter → 400 naming it', async () => {
      const res = await t.request(t.sender, {
        method: 'GET',
        url: `${ref(draftId)}?requesterIdentifier=dr.${MARKER}%E2%80%AE&institutionIdType=hci&institutionId=S1234A`,
      });
      expect(errorPaths(expectValidationOf(res, MARKER))).toEqual(['query.requesterIdentifier']);
    });

    it('text of several lines keeps its line breaks and tabs: notes, clinical information, reasons', async () => {
      const lines = 'Fever since Monday.\r\nCough:\tdry.\nPlease call the family.';
      const note = await send(endpoint('notes'), { ...SENDER, content: lines });
      expect(note.statusCode, note.body).toBe(201);
      expect(note.json()).toMatchObject({ content: lines });
      const update = await send(endpoint('update'), { ...SENDER, clinicalInfo: lines });
      expect(update.statusCode, update.body).toBe(200);
      expect(update.json()).toMatchObject({ clinicalInfo: lines });
      const reason = 'Please attach:\n- the ECG\n- the last letter';
      const asked = await send(endpoint('request-action'), { ...PROVIDER, reason }, { id: pending.id });
      expect(asked.statusCode, asked.body).toBe(200);
    });

    it.each([
      ['a byte that never starts a character', [0xff]],
      ['a character cut short', [0xe2, 0x82]],
      ['an overlong encoding', [0xc0, 0xaf]],
      ['an encoded surrogate', [0xed, 0xa0, 0x80]],
    ])('a JSON body holding %s → 400 naming the body, and nothing is stored', async (_label, bytes) => {
      const before = await stateOf(t, draftId);
      const payload = Buffer.concat([
        Buffer.from(`{"institutionIdType":"hci","institutionId":"S1234A","content":"${MARKER} `),
        Buffer.from(bytes),
        Buffer.from(' Tan"}'),
      ]);
      const res = await send(endpoint('notes'), undefined, {
        headers: { 'content-type': 'application/json' },
        payload,
      });
      const problem = expectValidationOf(res, MARKER);
      expect(problem.errors).toEqual([{ path: 'body', message: 'is not valid UTF-8' }]);
      expect(await stateOf(t, draftId)).toEqual(before);
    });

    it('a JSON body in well-formed UTF-8 is read as sent', async () => {
      const content = '陳大文 — café 😷';
      const res = await send(endpoint('notes'), undefined, {
        headers: { 'content-type': 'application/json; charset=utf-8' },
        payload: Buffer.from(JSON.stringify({ ...SENDER, content }), 'utf8'),
      });
      expect(res.statusCode, res.body).toBe(201);
      expect(res.json()).toMatchObject({ content });
    });

    it.each(['status=%ZZ', 'x=%ED%A0%80', 'role=sender&status=%', 'status=%E2%82', 'x=%C0%AF'])(
      'list with the query %s → 400 naming the query',
      async (query) => {
        const res = await t.request(t.sender, {
          method: 'GET',
          url: `/api/v1/institutions/hci/S1234A/referrals?${query}`,
        });
        const problem = expectValidationOf(res);
        expect(problem.errors).toEqual([{ path: 'query', message: 'is not valid percent-encoded UTF-8' }]);
      },
    );

    it('a query in well-formed percent-encoded UTF-8 is read as sent', async () => {
      const res = await t.request(t.sender, {
        method: 'GET',
        url: `${ref(draftId)}?requesterIdentifier=dr.%E9%99%B3%20tan&institutionIdType=hci&institutionId=S1234A`,
      });
      expect(res.statusCode, res.body).toBe(200);
    });
  });
});
