// Property: whatever a client sends to the token endpoint, a request that is wrong in at least one
// way is refused 400 or 401 in RFC 6749's shape, never 500, and leaves the database as it was but
// for one audit row when its assertion names a client refhub knows. Requests are built from a model
// of a token request: each part (the form's fields, the body's type and encoding, the assertion's
// header, claims, signature and serialization) is either right or wrong in one of many ways, and at
// least one part is wrong; beside them, bodies of random bytes. Wrong values are of every type,
// text with NULs, unpaired surrogates and control characters, huge and infinite numbers, strings
// longer than anything refhub keeps, unsigned tokens (`alg: none`), HMAC tokens keyed with the
// public key, tokens signed by a key the client never registered, bad base64url.
//
// Each request comes from an address of its own, so the failure throttle never answers for the
// requests before it: a 429 here would be a failure (its own tests are in
// client-credentials-refusals.int.test.ts).
import { randomUUID, webcrypto } from 'node:crypto';
import { sql } from 'kysely';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { APP_ENGINES } from '../support/engines.ts';
import {
  ASSERTION_TYPE,
  keyPair,
  postToken,
  signed,
  tokenForm,
  TOKEN_URL,
  type KeyPair,
} from '../support/client-assertions.ts';
import { createTestApp, type TestApp } from '../support/test-app.ts';

const RUNS_PER_ENGINE = 250;
/** The token endpoint's body limit (TOKEN_BODY_LIMIT). */
const BODY_LIMIT = 16 * 1024;
/** A jti accepted before the runs: its replay, and its number, are refused. */
const USED_JTI = '4242';

// --- Values ------------------------------------------------------------------------------------

/** Characters that have broken services before. */
const nastyChar = fc.oneof(
  fc.constantFrom(
    '\u0000',
    '\u0007',
    '\n',
    '\u007f',
    '\u0085',
    '\ud800',
    '\udc00',
    '\ufeff',
    '"',
    '\\',
    '%',
    '+',
    '&',
    '=',
    '.',
    ' ',
    '😷',
    'é',
  ),
  fc.integer({ min: 0, max: 0x10ffff }).map((c) => String.fromCodePoint(c)),
  fc.string({ minLength: 1, maxLength: 1 }),
);
const nastyText = fc.oneof(
  { weight: 5, arbitrary: fc.string({ unit: nastyChar, maxLength: 24 }) },
  { weight: 1, arbitrary: fc.integer({ min: 257, max: 6000 }).map((n) => 'x'.repeat(n)) },
);

/** A number JSON may carry, as its text: the raw marker keeps 1e400 (Infinity to JSON.parse) as written. */
const RAW = '\u0001raw:';
const raw = (text: string) => `${RAW}${text}`;
const extremeNumber = fc.oneof(
  fc.double(),
  fc.integer(),
  fc.constantFrom(0, -1, 1.5, 1e-300, 1e308, -1e308, 2 ** 53 + 2, raw('1e400'), raw('-1e400')),
);

/** Any JSON value: of every type, deep or not. */
const anyValue = fc.oneof(
  fc.jsonValue({ maxDepth: 2 }),
  nastyText,
  extremeNumber,
  fc.constantFrom(null, true, false, [], {}, [42], ['a', 1]),
);

const encode = (text: string | Uint8Array) => Buffer.from(text).toString('base64url');

/** JSON text of `value`, with each raw marker written as the number text it holds. */
function jsonText(value: unknown): string {
  return JSON.stringify(value).replace(/"\\u0001raw:([^"]*)"/g, '$1');
}

// --- The model ---------------------------------------------------------------------------------

/** What goes into one claim: the right value, none, or another value. */
type Part = { readonly right: true } | { readonly right: false; readonly value: unknown };
const ABSENT = Symbol('absent');

type Signer = 'key' | 'stranger' | 'hs256' | 'none' | 'garbage';
type Mangling =
  'none' | 'segment-dropped' | 'segment-added' | 'header-garbled' | 'payload-garbled' | 'random';
type BodyFault = 'none' | 'content-type' | 'not-utf8' | 'bad-escape' | 'too-large' | 'duplicate';

interface Model {
  readonly claims: Record<'iss' | 'sub' | 'aud' | 'exp' | 'iat' | 'nbf' | 'jti', Part>;
  readonly extraClaims: Record<string, unknown>;
  readonly alg: Part;
  readonly kid: Part;
  readonly crit: boolean;
  /** Header or claims that are not a JSON object at all. */
  readonly headerText: string | undefined;
  readonly payloadText: string | undefined;
  readonly signer: Signer;
  readonly mangling: Mangling;
  readonly form: Record<
    'grant_type' | 'client_assertion_type' | 'client_assertion' | 'scope' | 'client_id',
    Part
  >;
  readonly extraFields: Record<string, string>;
  readonly body: BodyFault;
  readonly contentType: string | undefined;
  readonly seed: number;
}

/** The ways each part can be wrong, each of them enough for a refusal on its own. */
function wrongOnes(now: number, ids: { client: string; revoked: string }) {
  const claim: Record<keyof Model['claims'], fc.Arbitrary<unknown>> = {
    iss: fc.oneof(
      fc.constantFrom(
        '-'.repeat(36),
        'g'.repeat(36),
        'zzzzzzzz-zzzz-zzzz-zzzz-zzzzzzzzzzzz',
        ids.client.toUpperCase(),
        ids.revoked,
        '',
        ABSENT,
      ),
      fc.uuid(),
      nastyText,
      anyValue,
    ),
    sub: fc.oneof(fc.constantFrom(ABSENT, ids.revoked), fc.uuid(), anyValue),
    aud: fc.oneof(
      fc.constantFrom(
        ABSENT,
        'https://elsewhere.example/oauth2/token',
        `${TOKEN_URL}/`,
        [],
        [42, TOKEN_URL],
        { aud: TOKEN_URL },
      ),
      nastyText,
      extremeNumber,
    ),
    exp: fc.oneof(
      fc.constantFrom(
        ABSENT,
        now - 120,
        now + 900,
        String(now + 60),
        null,
        true,
        raw('1e400'),
        1e308,
        -1e308,
      ),
      fc.integer({ min: now + 400, max: 2 ** 40 }),
      anyValue.filter((value) => typeof value !== 'number'),
    ),
    iat: fc.oneof(
      fc.constantFrom(now + 600, 'now', {}, raw('1e400'), raw('-1e400'), null),
      anyValue.filter((value) => typeof value !== 'number'),
    ),
    nbf: fc.oneof(
      fc.constantFrom(now + 600, '0', [], raw('-1e400')),
      anyValue.filter((value) => typeof value !== 'number'),
    ),
    jti: fc.oneof(
      fc.constantFrom(
        ABSENT,
        '',
        '\u0000',
        'a\u0000b',
        'ring\u0007',
        '\u007f',
        'next\u0085',
        'half\ud800',
        USED_JTI,
        Number(USED_JTI),
        0,
        null,
        true,
        [],
        {},
      ),
      fc.integer({ min: 257, max: 3000 }).map((n) => 'j'.repeat(n)),
      fc
        .tuple(fc.string({ maxLength: 8 }), fc.constantFrom('\u0000', '\u001f', '\u009f', '\udfff'))
        .map(([text, bad]) => text + bad),
      anyValue.filter((value) => typeof value !== 'string'),
    ),
  };
  const form: Record<keyof Model['form'], fc.Arbitrary<unknown>> = {
    grant_type: fc.oneof(
      fc.constantFrom(
        ABSENT,
        'password',
        'authorization_code',
        'client_credentials\u0000',
        'CLIENT_CREDENTIALS',
      ),
      nastyText.filter((text) => text !== '' && text !== 'client_credentials'),
    ),
    client_assertion_type: fc.oneof(
      fc.constantFrom(
        ABSENT,
        'urn:ietf:params:oauth:client-assertion-type:saml2-bearer',
        `${ASSERTION_TYPE} `,
      ),
      nastyText.filter((text) => text !== '' && text !== ASSERTION_TYPE),
    ),
    client_assertion: fc.constant(ABSENT),
    scope: fc.oneof(
      fc.constantFrom(
        'system/*.*',
        'system/Patient.read',
        'system/Referral.read\u0007',
        '"system/Referral.read"',
        'x'.repeat(65),
      ),
      fc.string({ maxLength: 16 }).map((text) => `${text}\u0000`),
    ),
    client_id: fc.oneof(fc.uuid(), fc.constantFrom('-'.repeat(36), ids.client.toUpperCase(), ids.revoked)),
  };
  return { claim, form };
}

/** A part: right, or one of its wrong values; `wrong` says which parts must be wrong. */
const partOf = (wrong: boolean, values: fc.Arbitrary<unknown>): fc.Arbitrary<Part> =>
  wrong
    ? values.map((value) => ({ right: false as const, value }))
    : fc.oneof(
        { weight: 19, arbitrary: fc.constant({ right: true as const }) },
        { weight: 1, arbitrary: values.map((value) => ({ right: false as const, value })) },
      );

const FAULTS = [
  'iss',
  'sub',
  'aud',
  'exp',
  'iat',
  'nbf',
  'jti',
  'grant_type',
  'client_assertion_type',
  'client_assertion',
  'scope',
  'client_id',
  'alg',
  'kid',
  'crit',
  'header-text',
  'payload-text',
  'signer',
  'mangling',
  'body',
] as const;
type Fault = (typeof FAULTS)[number];

function modelOf(now: number, ids: { client: string; revoked: string }): fc.Arbitrary<Model> {
  const wrong = wrongOnes(now, ids);
  return fc.subarray([...FAULTS], { minLength: 1, maxLength: 2 }).chain((faults) => {
    const has = (fault: Fault) => faults.includes(fault);
    const claimPart = (name: keyof Model['claims']) => partOf(has(name), wrong.claim[name]);
    const formPart = (name: keyof Model['form']) =>
      // A client_assertion left out is wrong on its own; otherwise it is the assertion built below.
      name === 'client_assertion' && !has(name)
        ? fc.constant<Part>({ right: true })
        : partOf(has(name), wrong.form[name]);
    return fc.record<Model>({
      claims: fc.record({
        iss: claimPart('iss'),
        sub: claimPart('sub'),
        aud: claimPart('aud'),
        exp: claimPart('exp'),
        iat: claimPart('iat'),
        nbf: claimPart('nbf'),
        jti: claimPart('jti'),
      }),
      extraClaims: fc.dictionary(nastyText, anyValue, { maxKeys: 3 }),
      alg: partOf(
        has('alg'),
        fc.oneof(
          fc.constantFrom('none', 'HS256', 'RS384', 'PS384', 'ES256', 'ES512', 'EdDSA', ABSENT, 'es384'),
          anyValue.filter((value) => value !== 'ES384'),
        ),
      ),
      // A kid left out is no fault: the client's one key is the one to try.
      kid: partOf(
        has('kid'),
        fc.oneof(
          fc.constantFrom('not-registered', 'clinic-2026-1 ', ''),
          anyValue.filter((value) => value !== 'clinic-2026-1'),
        ),
      ),
      crit: has('crit') ? fc.constant(true) : fc.constant(false),
      // Never a JSON object: a header that decodes would make the request one refhub can read.
      headerText: has('header-text')
        ? fc.oneof(
            fc.constantFrom('[]', 'null', '"ES384"', '{'),
            nastyText.map((text) => `~${text}`),
          )
        : fc.constant(undefined),
      payloadText: has('payload-text')
        ? fc.oneof(fc.constantFrom('[]', 'null', '42', '{', ''), nastyText)
        : fc.constant(undefined),
      signer: has('signer')
        ? fc.constantFrom<Signer>('stranger', 'hs256', 'none', 'garbage')
        : fc.constant<Signer>('key'),
      mangling: has('mangling')
        ? fc.constantFrom<Mangling>(
            'segment-dropped',
            'segment-added',
            'header-garbled',
            'payload-garbled',
            'random',
          )
        : fc.constant<Mangling>('none'),
      form: fc.record({
        grant_type: formPart('grant_type'),
        client_assertion_type: formPart('client_assertion_type'),
        client_assertion: formPart('client_assertion'),
        scope: has('scope')
          ? partOf(true, wrong.form.scope)
          : fc.constantFrom<Part>(
              { right: true },
              { right: false, value: 'system/Referral.read' },
              { right: false, value: 'system/Referral.write system/Referral.read' },
            ),
        client_id: has('client_id')
          ? partOf(true, wrong.form.client_id)
          : fc.constantFrom<Part>({ right: true }, { right: false, value: ABSENT }),
      }),
      extraFields: fc.dictionary(
        nastyText.filter(
          (name) =>
            !['grant_type', 'client_assertion_type', 'client_assertion', 'scope', 'client_id'].includes(
              name,
            ) && name !== '',
        ),
        nastyText,
        { maxKeys: 3 },
      ),
      body: has('body')
        ? fc.constantFrom<BodyFault>('content-type', 'not-utf8', 'bad-escape', 'too-large', 'duplicate')
        : fc.constant<BodyFault>('none'),
      contentType: has('body')
        ? fc.constantFrom(
            undefined,
            'application/json',
            'text/plain',
            'multipart/form-data; boundary=x',
            'application/x-what',
          )
        : fc.constantFrom(
            'application/x-www-form-urlencoded',
            'application/x-www-form-urlencoded; charset=utf-8',
          ),
      seed: fc.integer(),
    });
  });
}

// --- From the model to bytes ---------------------------------------------------------------------

interface Keys {
  readonly key: KeyPair;
  readonly stranger: KeyPair;
  readonly client: string;
}

async function signature(signer: Signer, input: string, keys: Keys, seed: number): Promise<string> {
  const data = new TextEncoder().encode(input);
  const ecdsa = { name: 'ECDSA', hash: 'SHA-384' };
  switch (signer) {
    case 'key':
      return encode(new Uint8Array(await webcrypto.subtle.sign(ecdsa, keys.key.privateKey, data)));
    case 'stranger':
      return encode(new Uint8Array(await webcrypto.subtle.sign(ecdsa, keys.stranger.privateKey, data)));
    case 'hs256': {
      const secret = await webcrypto.subtle.importKey(
        'raw',
        new TextEncoder().encode(JSON.stringify(keys.key.publicJwk)),
        { name: 'HMAC', hash: 'SHA-256' },
        false,
        ['sign'],
      );
      return encode(new Uint8Array(await webcrypto.subtle.sign('HMAC', secret, data)));
    }
    case 'none':
      return '';
    case 'garbage':
      return encode(String(seed).repeat(12)).slice(0, 128);
  }
}

function mangled(compact: string, mangling: Mangling, seed: number): string {
  const [header = '', payload = '', sig = ''] = compact.split('.');
  const garble = (segment: string) =>
    `${segment.slice(0, Math.abs(seed) % (segment.length + 1))}*=/+${segment.slice(3)}`;
  switch (mangling) {
    case 'none':
      return compact;
    case 'segment-dropped':
      return `${header}.${payload}`;
    case 'segment-added':
      return `${compact}.${sig}`;
    case 'header-garbled':
      return `${garble(header)}.${payload}.${sig}`;
    case 'payload-garbled':
      return `${header}.${garble(payload)}.${sig}`;
    case 'random':
      return `${String(seed)}.${'é'.repeat(3)}..`;
  }
}

/** The value of a part: its right value, or the wrong one (undefined when it is left out). */
const valueOf = (part: Part, right: unknown): unknown =>
  part.right ? right : part.value === ABSENT ? undefined : part.value;

async function assertionOf(
  model: Model,
  keys: Keys,
  now: number,
): Promise<{ compact: string; intact: boolean; iss: unknown }> {
  const rights = {
    iss: keys.client,
    sub: keys.client,
    aud: TOKEN_URL,
    exp: now + 60,
    iat: now,
    nbf: undefined,
    jti: randomUUID(),
  };
  const modelled = Object.entries(model.claims).map(
    ([name, part]) => [name, valueOf(part, rights[name as keyof typeof rights])] as const,
  );
  // The model's claims over the extra ones, and those it leaves out left out.
  const claims: Record<string, unknown> = Object.fromEntries(
    Object.entries({ ...model.extraClaims, ...Object.fromEntries(modelled) }).filter(
      ([, value]) => value !== undefined,
    ),
  );
  const header: Record<string, unknown> = { typ: 'JWT' };
  for (const [name, part, right] of [
    ['alg', model.alg, 'ES384'],
    ['kid', model.kid, 'clinic-2026-1'],
  ] as const) {
    const value = valueOf(part, right);
    if (value !== undefined) header[name] = value;
  }
  if (model.crit) Object.assign(header, { crit: ['refhub'], refhub: true });
  const headerText = model.headerText ?? jsonText(header);
  const payloadText = model.payloadText ?? jsonText(claims);
  const input = `${encode(headerText)}.${encode(payloadText)}`;
  const compact = mangled(
    `${input}.${await signature(model.signer, input, keys, model.seed)}`,
    model.mangling,
    model.seed,
  );
  return {
    compact,
    // Decodable as a JWT with these claims: refhub can tell which client it names.
    intact: model.mangling === 'none' && model.headerText === undefined && model.payloadText === undefined,
    iss: claims.iss,
  };
}

interface Request {
  readonly body: string | Buffer;
  readonly contentType: string | undefined;
  /** Whether refhub can read the form and the assertion in it, and so the client it names. */
  readonly readable: boolean;
  readonly assertion: string | undefined;
  readonly iss: unknown;
}

async function requestOf(model: Model, keys: Keys, now: number): Promise<Request> {
  const assertion = await assertionOf(model, keys, now);
  const rights = {
    grant_type: 'client_credentials',
    client_assertion_type: ASSERTION_TYPE,
    client_assertion: assertion.compact,
    scope: undefined,
    client_id: typeof assertion.iss === 'string' ? assertion.iss : undefined,
  };
  const form = new URLSearchParams(model.extraFields);
  for (const [name, part] of Object.entries(model.form)) {
    const value = valueOf(part, rights[name as keyof typeof rights]);
    if (value !== undefined) form.append(name, typeof value === 'string' ? value : jsonText(value));
  }
  let body: string | Buffer = form.toString();
  switch (model.body) {
    case 'none':
    case 'content-type':
      break;
    case 'not-utf8':
      body = Buffer.concat([Buffer.from(body), Buffer.from('&x='), Buffer.from([0xc3, 0x28, 0xff])]);
      break;
    case 'bad-escape':
      body = `${body}&x=%zz%C3%28`;
      break;
    case 'too-large':
      body = `${body}&padding=${'p'.repeat(BODY_LIMIT)}`;
      break;
    case 'duplicate':
      body = `${body}&grant_type=client_credentials&grant_type=client_credentials`;
      break;
  }
  const formBody = model.body === 'none' || model.body === 'duplicate';
  const sentAssertion = model.form.client_assertion.right ? assertion.compact : undefined;
  return {
    body,
    contentType: model.body === 'content-type' ? model.contentType : 'application/x-www-form-urlencoded',
    readable:
      model.body === 'none' &&
      Buffer.byteLength(body) <= BODY_LIMIT &&
      sentAssertion !== undefined &&
      assertion.intact,
    assertion: formBody ? sentAssertion : undefined,
    iss: assertion.iss,
  };
}

/** Bodies of anything at all, with any type. */
const garbage = fc.record({
  body: fc.oneof(
    fc.string({ unit: nastyChar, maxLength: 200 }),
    fc.uint8Array({ maxLength: 200 }).map((bytes) => Buffer.from(bytes)),
    fc
      .dictionary(nastyText, nastyText, { maxKeys: 6 })
      .map((fields) => new URLSearchParams(fields).toString()),
    fc.constantFrom(
      'grant_type=client_credentials&client_assertion=a.b.c',
      '%',
      '&&&==',
      '{"grant_type":"client_credentials"}',
    ),
  ),
  contentType: fc.constantFrom(
    undefined,
    'application/x-www-form-urlencoded',
    'application/json',
    'text/plain',
    'application/octet-stream',
  ),
});

// --- The property --------------------------------------------------------------------------------

describe.each(APP_ENGINES)('arbitrary token requests on %s', (engine) => {
  let t: TestApp;
  let keys: Keys;
  let revoked: string;
  let digest: () => Promise<string>;
  let addresses = 0;

  beforeAll(async () => {
    t = await createTestApp(engine);
    const key = await keyPair('clinic-2026-1');
    const institution = { idType: 'hci', id: t.sender.institution.institutionId };
    const client = (
      await t.ctx.clientCredentials.register({
        system: 'HAS',
        role: 'sender',
        institution,
        keys: { kind: 'inline', jwks: { keys: [key.publicJwk] } },
      })
    ).id;
    const revokedKey = await keyPair('clinic-2026-1');
    revoked = (
      await t.ctx.clientCredentials.register({
        system: 'HAS',
        role: 'sender',
        institution,
        keys: { kind: 'inline', jwks: { keys: [revokedKey.publicJwk] } },
      })
    ).id;
    await t.ctx.clientCredentials.revoke(revoked);
    keys = { key, stranger: await keyPair('clinic-2026-1'), client };
    const now = Math.floor(Date.now() / 1000);
    const used = await postToken(
      t,
      '10.2.0.0',
      tokenForm(
        await signed(key, {
          iss: client,
          sub: client,
          aud: TOKEN_URL,
          jti: USED_JTI,
          iat: now,
          exp: now + 240,
        }),
      ),
    );
    expect(used.statusCode, used.body).toBe(200);
    // Every table but the audit trail, as one digest: a refusal may add audit rows and nothing else.
    // A partitioned table is read whole through its parent, so its months are left out here.
    const tables = await sql<{ table_name: string }>`
      select table_name from information_schema.tables
      where table_schema = 'public' and table_type = 'BASE TABLE' and table_name <> 'audit_events'
        and not exists (
          select 1 from pg_inherits i join pg_class c on c.oid = i.inhrelid
          where c.relname = table_name and c.relnamespace = 'public'::regnamespace)
      order by table_name`.execute(t.ctx.db);
    const query = sql.join(
      tables.rows.map(
        ({ table_name }) =>
          sql`select ${table_name} as name, md5(coalesce(string_agg(x::text, '|' order by x::text), '')) as digest from ${sql.table(table_name)} x`,
      ),
      sql` union all `,
    );
    digest = async () =>
      JSON.stringify((await sql<{ name: string; digest: string }>`${query}`.execute(t.ctx.db)).rows);
  });
  afterAll(async () => {
    await t.close();
  });

  const auditRows = (requestId: string) =>
    t.ctx.db
      .selectFrom('audit_events')
      .select([
        'api_key_id',
        'system',
        'institution_id_type',
        'institution_id',
        'requester_identifier',
        'action',
        'outcome',
        'referral_ids',
      ])
      .where('request_id', '=', requestId)
      .execute();
  const auditCount = async () =>
    (
      await t.ctx.db
        .selectFrom('audit_events')
        .select(sql<number>`count(*)::int`.as('n'))
        .executeTakeFirstOrThrow()
    ).n;

  function send(body: string | Buffer, contentType: string | undefined) {
    addresses++;
    return t.app.inject({
      method: 'POST',
      url: '/oauth2/token',
      remoteAddress: `10.3.${Math.floor(addresses / 250)}.${addresses % 250}`,
      headers: contentType === undefined ? {} : { 'content-type': contentType },
      payload: body,
    });
  }

  /** What every refusal is: 400 or 401 as RFC 6749 §5.2 writes it, quoting nothing it was sent. */
  function expectRefusal(res: Awaited<ReturnType<typeof send>>, assertion: string | undefined) {
    const said = `${res.statusCode}: ${res.body}`;
    expect([400, 401], said).toContain(res.statusCode);
    expect(res.headers['content-type'], said).toMatch(/^application\/json/);
    expect(res.headers['cache-control'], said).toBe('no-store');
    const body = res.json<Record<string, unknown>>();
    expect(Object.keys(body).sort(), said).toEqual(['error', 'error_description']);
    const expected =
      res.statusCode === 401
        ? ['invalid_client']
        : ['invalid_request', 'unsupported_grant_type', 'invalid_scope'];
    expect(expected, said).toContain(body.error);
    const description = String(body.error_description);
    expect(description.length, said).toBeLessThan(300);
    expect(/\p{Cc}/u.test(description), said).toBe(false);
    if (assertion !== undefined && assertion.length >= 16) expect(description, said).not.toContain(assertion);
  }

  it(`refuses ${RUNS_PER_ENGINE} requests that are each wrong in some way, 400 or 401, auditing those of known clients and changing nothing else`, async () => {
    const errors = new Map<string, number>();
    let audited = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          {
            weight: 6,
            arbitrary: modelOf(Math.floor(Date.now() / 1000), { client: keys.client, revoked }).map(
              (model) => ({ model }),
            ),
          },
          { weight: 1, arbitrary: garbage },
        ),
        async (drawn) => {
          const now = Math.floor(Date.now() / 1000);
          const request: Request =
            'model' in drawn
              ? await requestOf(drawn.model, keys, now)
              : { ...drawn, readable: false, assertion: undefined, iss: undefined };
          const before = await digest();
          const auditsBefore = await auditCount();
          const res = await send(request.body, request.contentType);
          expectRefusal(res, request.assertion);
          const error = `${res.statusCode} ${res.json<{ error: string }>().error}`;
          errors.set(error, (errors.get(error) ?? 0) + 1);

          expect(await digest(), `${res.statusCode}: ${res.body}`).toBe(before);
          const rows = await auditRows(String(res.headers['x-request-id']));
          expect(await auditCount()).toBe(auditsBefore + rows.length);
          const known = request.readable && (request.iss === keys.client || request.iss === revoked);
          expect(rows, `${res.statusCode}: ${res.body}`).toEqual(
            known
              ? [
                  {
                    api_key_id: request.iss,
                    system: 'HAS',
                    institution_id_type: 'hci',
                    institution_id: t.sender.institution.institutionId,
                    requester_identifier: null,
                    action: 'oauth.token',
                    outcome: 'denied',
                    referral_ids: [],
                  },
                ]
              : [],
          );
          if (known) audited++;
        },
      ),
      { numRuns: RUNS_PER_ENGINE, endOnFailure: true },
    );
    // The runs got past the form to the assertion's every check, and to the known client's audit.
    expect([...errors.keys()].sort(), JSON.stringify([...errors])).toEqual(
      expect.arrayContaining(['400 invalid_request', '401 invalid_client']),
    );
    expect(audited).toBeGreaterThan(RUNS_PER_ENGINE / 10);
    // About 10 seconds on a quiet machine: room for one that is busy.
  }, 180_000);
});
