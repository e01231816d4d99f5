// The webhook signing secret is shown once. A create or a rotation replayed with its Idempotency-Key
// answers the same subscription without the secret (`secretShown: false`), valid against the OpenAPI
// document, and mints no new one. Afterwards no table of the database holds a secret, or any part of
// one, except the subscription's own row (`webhook_subscriptions.secret` and `.previous_secret`),
// which must keep it to sign.
import { Ajv } from 'ajv';
import formats from 'ajv-formats';
import { sql } from 'kysely';
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { APP_ENGINES } from '../../support/engines.ts';
import { createTestApp, type TestApp, type TestParty } from '../../support/test-app.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../../support/webhook-receiver.ts';

const base = (p: TestParty) =>
  `/api/v1/institutions/${p.institution.institutionIdType}/${p.institution.institutionId}/webhook-subscriptions`;

type WithSecret = Record<string, unknown> & { id: string; secret?: string; secretShown?: boolean };

interface Located {
  readonly where: string;
  readonly needle: string;
}

/**
 * Every base table of every schema but PostgreSQL's own, and every column of it: where `needle`
 * occurs, as `schema.table.column` (each value cast to text; bytea searched as bytes) and as
 * `schema.table` (the whole row cast to text).
 */
async function locate(
  t: TestApp,
  needles: readonly string[],
): Promise<{ tables: string[]; found: Located[] }> {
  const columns = await sql<{
    table_schema: string;
    table_name: string;
    column_name: string;
    data_type: string;
  }>`
    select c.table_schema, c.table_name, c.column_name, c.data_type
    from information_schema.columns c
    join information_schema.tables tb
      on tb.table_schema = c.table_schema and tb.table_name = c.table_name
    where tb.table_type = 'BASE TABLE'
      and c.table_schema not in ('pg_catalog', 'information_schema')
      and c.table_schema not like 'pg\\_%'
    order by c.table_schema, c.table_name, c.ordinal_position`.execute(t.ctx.db);
  const tables = [...new Set(columns.rows.map((c) => `${c.table_schema}.${c.table_name}`))];
  const found: Located[] = [];
  for (const needle of needles) {
    for (const table of tables) {
      const row = await sql<{ n: number }>`
        select count(*)::int as n from ${sql.table(table)} as r
        where strpos(r::text, ${needle}) > 0`.execute(t.ctx.db);
      if (row.rows[0]!.n > 0) found.push({ where: table, needle });
    }
    for (const c of columns.rows) {
      const table = sql.table(`${c.table_schema}.${c.table_name}`);
      const column = sql.ref(c.column_name);
      const matches =
        c.data_type === 'bytea'
          ? sql<boolean>`position(convert_to(${needle}, 'UTF8') in ${column}) > 0`
          : sql<boolean>`strpos(${column}::text, ${needle}) > 0`;
      const row = await sql<{ n: number }>`
        select count(*)::int as n from ${table} where ${matches}`.execute(t.ctx.db);
      if (row.rows[0]!.n > 0)
        found.push({ where: `${c.table_schema}.${c.table_name}.${c.column_name}`, needle });
    }
  }
  return { tables, found };
}

describe.each(APP_ENGINES)('webhook signing secrets on %s', (engine) => {
  let t: TestApp;
  let receiver: WebhookReceiver;
  let ajv: Ajv;
  let doc: {
    paths: Record<
      string,
      Record<string, { responses: Record<string, { content: Record<string, { schema: unknown }> }> }>
    >;
    components: unknown;
  };
  beforeAll(async () => {
    t = await createTestApp(engine);
    receiver = await startWebhookReceiver();
    doc = (await t.app.inject({ method: 'GET', url: '/openapi.json' })).json();
    ajv = new Ajv({ strict: false, allErrors: true });
    formats.default(ajv);
    ajv.addSchema({ components: doc.components }, 'openapi.json');
  });
  afterAll(async () => {
    await t.close();
    await receiver.close();
  });

  /** The documented body of `status` for the operation at `path`, as a validator. */
  function documented(method: string, path: string, status: number) {
    const schema = doc.paths[path]?.[method]?.responses[String(status)]?.content['application/json']?.schema;
    expect(schema, `${method} ${path} ${status} is documented`).toBeDefined();
    const anchored = JSON.stringify(schema).replaceAll('"#/components/', '"openapi.json#/components/');
    return ajv.compile(JSON.parse(anchored) as object);
  }

  const keyed = (options: InjectOptions, key: string | undefined): InjectOptions =>
    key === undefined ? options : { ...options, headers: { ...options.headers, 'idempotency-key': key } };

  const createReq = (who: TestParty, path: string, key?: string) =>
    t.request(
      who,
      keyed({ method: 'POST', url: base(who), payload: { url: `${receiver.url}/${path}` } }, key),
    );

  const rotateReq = (who: TestParty, id: string, key?: string) =>
    t.request(who, keyed({ method: 'POST', url: `${base(who)}/${id}/rotate-secret` }, key));

  function firstAnswer(res: LightMyRequestResponse, status: number): WithSecret & { secret: string } {
    expect(res.statusCode, res.body).toBe(status);
    expect(res.headers['idempotent-replayed']).toBeUndefined();
    const body = res.json<WithSecret>();
    expect(body.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(body.secretShown).toBe(true);
    return body as WithSecret & { secret: string };
  }

  function expectReplayWithoutSecret(replay: LightMyRequestResponse, first: WithSecret, status: number) {
    expect(replay.statusCode, replay.body).toBe(status);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.body).not.toContain('whsec_');
    expect(replay.body).not.toContain(first.secret!.slice('whsec_'.length));
    const body = replay.json<WithSecret>();
    expect(body).not.toHaveProperty('secret');
    expect(body.secretShown).toBe(false);
    const rest = Object.entries(first).filter(([name]) => name !== 'secret' && name !== 'secretShown');
    expect(body).toEqual({ ...Object.fromEntries(rest), secretShown: false });
  }

  it('replays a keyed create and a keyed rotation without the secret, and mints no new one', async () => {
    const createPath = '/api/v1/institutions/{institutionIdType}/{institutionId}/webhook-subscriptions';
    const rotatePath = `${createPath}/{subscriptionId}/rotate-secret`;

    const first = await createReq(t.sender, 'replayed', 'secrets-create');
    const created = firstAnswer(first, 201);
    expect(documented('post', createPath, 201)(first.json())).toBe(true);
    const replay = await createReq(t.sender, 'replayed', 'secrets-create');
    expectReplayWithoutSecret(replay, created, 201);
    const validateCreate = documented('post', createPath, 201);
    expect(validateCreate(replay.json()), JSON.stringify(validateCreate.errors)).toBe(true);

    const rotation = await rotateReq(t.sender, created.id, 'secrets-rotate');
    const rotated = firstAnswer(rotation, 200);
    expect(rotated.secret).not.toBe(created.secret);
    const rotationReplay = await rotateReq(t.sender, created.id, 'secrets-rotate');
    expectReplayWithoutSecret(rotationReplay, rotated, 200);
    const validateRotate = documented('post', rotatePath, 200);
    expect(validateRotate(rotationReplay.json()), JSON.stringify(validateRotate.errors)).toBe(true);

    // The replays changed nothing: the secrets of the first answers still sign, and only they do.
    const row = await t.ctx.db
      .selectFrom('webhook_subscriptions')
      .select(['secret', 'previous_secret'])
      .where('id', '=', created.id)
      .executeTakeFirstOrThrow();
    expect(row).toEqual({ secret: rotated.secret, previous_secret: created.secret });
    const test = await t.request(t.sender, { method: 'POST', url: `${base(t.sender)}/${created.id}/test` });
    expect(test.json()).toMatchObject({ outcome: 'delivered' });
    const delivery = receiver.deliveries().at(-1)!;
    expect(new Webhook(rotated.secret).verify(delivery.body, delivery.headers)).toBeTruthy();
    expect(new Webhook(created.secret).verify(delivery.body, delivery.headers)).toBeTruthy();
  });

  it('keeps secrets, keyed or not, only in the subscription’s own row, and none a later rotation replaced', async () => {
    const shown: string[] = [];
    const show = (res: LightMyRequestResponse, status: number) => {
      const body = firstAnswer(res, status);
      shown.push(body.secret);
      return body;
    };
    const keyedOne = show(await createReq(t.provider, 'keyed', 'scan-create'), 201);
    await createReq(t.provider, 'keyed', 'scan-create');
    const plain = show(await createReq(t.provider, 'plain'), 201);
    const firstRotation = show(await rotateReq(t.provider, keyedOne.id, 'scan-rotate-1'), 200);
    await rotateReq(t.provider, keyedOne.id, 'scan-rotate-1');
    const secondRotation = show(await rotateReq(t.provider, keyedOne.id, 'scan-rotate-2'), 200);
    await rotateReq(t.provider, keyedOne.id, 'scan-rotate-2');
    const plainRotation = show(await rotateReq(t.provider, plain.id), 200);
    const test = await t.request(t.provider, {
      method: 'POST',
      url: `${base(t.provider)}/${keyedOne.id}/test`,
      headers: { 'idempotency-key': 'scan-test' },
    });
    expect(test.statusCode, test.body).toBe(200);
    const refused = await t.request(t.provider, {
      method: 'POST',
      url: base(t.provider),
      headers: { 'idempotency-key': 'scan-refused' },
      payload: { url: 'ftp://example.org/x' },
    });
    expect(refused.statusCode).toBe(400);
    const stored = await t.ctx.db.selectFrom('idempotency_keys').select('key').execute();
    expect(stored.map((s) => s.key)).toEqual(
      expect.arrayContaining(['scan-create', 'scan-rotate-1', 'scan-rotate-2', 'scan-test', 'scan-refused']),
    );

    // The secret itself without its prefix too: no other encoding of it may hide anywhere.
    const bodies = shown.map((s) => s.slice('whsec_'.length));
    const { tables, found } = await locate(t, ['whsec_', ...bodies]);
    // The scan sees the tables where a secret could hide.
    expect(tables).toEqual(
      expect.arrayContaining([
        'public.webhook_subscriptions',
        'public.idempotency_keys',
        'public.audit_events',
        'public.webhook_attempts',
      ]),
    );
    const where = (needle: string) => found.filter((f) => f.needle === needle).map((f) => f.where);
    const own = (column: string) => [
      'public.webhook_subscriptions',
      `public.webhook_subscriptions.${column}`,
    ];
    expect(where('whsec_').sort()).toEqual(
      [
        'public.webhook_subscriptions',
        'public.webhook_subscriptions.previous_secret',
        'public.webhook_subscriptions.secret',
      ].sort(),
    );
    const [keyedBody, plainBody, firstRotationBody, secondRotationBody, plainRotationBody] = bodies;
    // After two rotations the first secret signs nothing and is nowhere.
    expect(where(keyedBody!)).toEqual([]);
    expect(where(firstRotationBody!).sort()).toEqual(own('previous_secret').sort());
    expect(where(secondRotationBody!).sort()).toEqual(own('secret').sort());
    expect(where(plainBody!).sort()).toEqual(own('previous_secret').sort());
    expect(where(plainRotationBody!).sort()).toEqual(own('secret').sort());
    expect([firstRotation.id, secondRotation.id, plainRotation.id]).toEqual([
      keyedOne.id,
      keyedOne.id,
      plain.id,
    ]);

    for (const secret of shown) expect(t.logs.filter((line) => line.includes(secret))).toEqual([]);
  });
});
