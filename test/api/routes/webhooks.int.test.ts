// Webhook subscriptions over HTTP: managed by a key of their institution only, the secret shown once,
// rotation, the test event (signed, verified here with the `standardwebhooks` package), and the
// refusals: bad input, other institutions (404), ops keys, URLs production must not reach.
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { auditSigningKeySetting, testAuditSigningKey } from '../../support/audit-signing-key.ts';
import { APP_ENGINES } from '../../support/engines.ts';
import { createTestApp, type TestApp, type TestParty } from '../../support/test-app.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../../support/webhook-receiver.ts';

const base = (p: TestParty) =>
  `/api/v1/institutions/${p.institution.institutionIdType}/${p.institution.institutionId}/webhook-subscriptions`;

describe.each(APP_ENGINES)('webhook subscriptions on %s', (engine) => {
  let t: TestApp;
  let receiver: WebhookReceiver;
  beforeAll(async () => {
    t = await createTestApp(engine);
    receiver = await startWebhookReceiver();
  });
  afterAll(async () => {
    await t.close();
    await receiver.close();
  });

  const create = async (who: TestParty, body: Record<string, unknown>, expected = 201) => {
    const res = await t.request(who, { method: 'POST', url: base(who), payload: body });
    expect(res.statusCode, res.body).toBe(expected);
    return res.json<Record<string, unknown> & { id: string; secret: string }>();
  };

  it('creates, lists, reads, updates and deletes, and shows the secret only at creation', async () => {
    const created = await create(t.provider, {
      url: `${receiver.url}/hooks`,
      eventTypes: ['referral.pending-acceptance', 'note.created'],
      description: 'Epic inbox',
    });
    expect(created).toMatchObject({
      url: `${receiver.url}/hooks`,
      eventTypes: ['note.created', 'referral.pending-acceptance'],
      description: 'Epic inbox',
      enabled: true,
    });
    expect(created.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);

    const list = await t.request(t.provider, { method: 'GET', url: base(t.provider) });
    expect(list.statusCode).toBe(200);
    const listed = list.json<{ data: Record<string, unknown>[] }>().data;
    expect(listed.map((s) => s.id)).toContain(created.id);
    expect(JSON.stringify(listed)).not.toContain(created.secret);

    const read = await t.request(t.provider, { method: 'GET', url: `${base(t.provider)}/${created.id}` });
    expect(read.statusCode).toBe(200);
    expect(read.json()).not.toHaveProperty('secret');

    const patched = await t.request(t.provider, {
      method: 'PATCH',
      url: `${base(t.provider)}/${created.id}`,
      payload: { eventTypes: [], enabled: false },
    });
    expect(patched.statusCode, patched.body).toBe(200);
    expect(patched.json()).toMatchObject({ enabled: false, disabledReason: 'by-institution' });
    expect(patched.json()).not.toHaveProperty('eventTypes');
    const enabled = await t.request(t.provider, {
      method: 'PATCH',
      url: `${base(t.provider)}/${created.id}`,
      payload: { enabled: true },
    });
    expect(enabled.json()).toMatchObject({ enabled: true });
    expect(enabled.json()).not.toHaveProperty('disabledReason');

    const deleted = await t.request(t.provider, {
      method: 'DELETE',
      url: `${base(t.provider)}/${created.id}`,
    });
    expect(deleted.statusCode).toBe(200);
    const gone = await t.request(t.provider, { method: 'GET', url: `${base(t.provider)}/${created.id}` });
    expect(gone.statusCode).toBe(404);

    const audit = await t.ctx.db
      .selectFrom('audit_events')
      .select('action')
      .where('action', 'like', 'webhooks.subscription.%')
      .execute();
    expect(audit.map((a) => a.action)).toEqual(
      expect.arrayContaining([
        'webhooks.subscription.create',
        'webhooks.subscription.update',
        'webhooks.subscription.delete',
      ]),
    );
    expect(t.logs.join('')).not.toContain(created.secret);
  });

  it('sends a signed test event that standardwebhooks verifies, old and new secret during a rotation', async () => {
    const created = await create(t.sender, { url: `${receiver.url}/test` });
    const test = await t.request(t.sender, { method: 'POST', url: `${base(t.sender)}/${created.id}/test` });
    expect(test.statusCode, test.body).toBe(200);
    expect(test.json()).toMatchObject({ eventType: 'webhook.test', outcome: 'delivered', httpStatus: 204 });
    const first = receiver.deliveries().at(-1);
    if (first === undefined) throw new Error('nothing was delivered');
    const payload = new Webhook(created.secret).verify(first.body, first.headers) as Record<string, unknown>;
    expect(payload).toMatchObject({
      type: 'webhook.test',
      data: { institution: { idType: 'hci', id: 'S1234A' } },
    });
    expect(first.headers['webhook-id']).toBe(test.json<{ eventId: string }>().eventId);

    const rotated = await t.request(t.sender, {
      method: 'POST',
      url: `${base(t.sender)}/${created.id}/rotate-secret`,
    });
    expect(rotated.statusCode, rotated.body).toBe(200);
    const next = rotated.json<{ secret: string; previousSecretExpiresAt: string }>();
    expect(next.secret).not.toBe(created.secret);
    expect(Date.parse(next.previousSecretExpiresAt)).toBeGreaterThan(Date.now() + 23 * 3600_000);
    await t.request(t.sender, { method: 'POST', url: `${base(t.sender)}/${created.id}/test` });
    const second = receiver.deliveries().at(-1);
    if (second === undefined) throw new Error('nothing was delivered');
    expect(second.headers['webhook-signature']?.split(' ')).toHaveLength(2);
    expect(new Webhook(next.secret).verify(second.body, second.headers)).toBeTruthy();
    expect(new Webhook(created.secret).verify(second.body, second.headers)).toBeTruthy();
    expect(() =>
      new Webhook(`whsec_${Buffer.alloc(32, 7).toString('base64')}`).verify(second.body, second.headers),
    ).toThrow();

    const attempts = await t.request(t.sender, {
      method: 'GET',
      url: `${base(t.sender)}/${created.id}/attempts`,
    });
    expect(attempts.json<{ data: { eventType: string; outcome: string }[] }>().data).toEqual([
      expect.objectContaining({ eventType: 'webhook.test', outcome: 'delivered' }),
      expect.objectContaining({ eventType: 'webhook.test', outcome: 'delivered' }),
    ]);
  });

  it('answers a test to an unreachable receiver with the attempt’s error code', async () => {
    const created = await create(t.sender, { url: 'http://127.0.0.1:1/nothing-here' });
    const test = await t.request(t.sender, { method: 'POST', url: `${base(t.sender)}/${created.id}/test` });
    expect(test.statusCode).toBe(200);
    expect(test.json()).toMatchObject({ outcome: 'failed', errorCode: 'ECONNREFUSED' });
  });

  it('keeps each institution to its own subscriptions: 404 for another’s, 403 for keys that may not act', async () => {
    const mine = await create(t.otherSender, { url: `${receiver.url}/other` });
    for (const [method, suffix] of [
      ['GET', ''],
      ['PATCH', ''],
      ['DELETE', ''],
      ['POST', '/rotate-secret'],
      ['POST', '/test'],
      ['GET', '/attempts'],
    ] as const) {
      // The sender's key asks about the other sender's subscription under its own institution.
      const res = await t.request(t.sender, {
        method,
        url: `${base(t.sender)}/${mine.id}${suffix}`,
        ...(method === 'PATCH' ? { payload: { enabled: false } } : {}),
      });
      expect(res.statusCode, `${method} ${suffix}`).toBe(404);
    }
    const list = await t.request(t.sender, { method: 'GET', url: base(t.sender) });
    expect(list.json<{ data: { id: string }[] }>().data.map((s) => s.id)).not.toContain(mine.id);
    const foreign = await t.request(t.sender, { method: 'GET', url: base(t.otherSender) });
    expect(foreign.statusCode).toBe(403);
    expect(foreign.json()).toMatchObject({ code: 'institution_not_permitted' });
    const ops = await t.request(t.ops, { method: 'GET', url: base(t.sender) });
    expect(ops.json()).toMatchObject({ code: 'forbidden_role' });
  });

  it.each([
    ['a URL that is not one', { url: 'not a url' }, 'body.url'],
    ['an ftp URL', { url: 'ftp://example.org/x' }, 'body.url'],
    ['credentials in the URL', { url: 'https://user:pw@example.org/x' }, 'body.url'],
    [
      'an unknown event type',
      { url: 'https://example.org/x', eventTypes: ['referral.exploded'] },
      'body.eventTypes.0',
    ],
    ['an unknown field', { url: 'https://example.org/x', secret: 'mine' }, 'body.secret'],
    ['no URL', {}, 'body.url'],
  ])('refuses %s with 400 naming the field', async (_what, body, path) => {
    const res = await t.request(t.sender, { method: 'POST', url: base(t.sender), payload: body });
    expect(res.statusCode, res.body).toBe(400);
    expect(res.json<{ errors: { path: string }[] }>().errors.map((e) => e.path)).toContain(path);
  });

  it('refuses an empty change with 400', async () => {
    const created = await create(t.sender, { url: `${receiver.url}/x` });
    const res = await t.request(t.sender, {
      method: 'PATCH',
      url: `${base(t.sender)}/${created.id}`,
      payload: {},
    });
    expect(res.statusCode).toBe(400);
  });
});

describe.each(APP_ENGINES)('webhook URLs in production on %s', (engine) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp(engine, {
      env: {
        NODE_ENV: 'production',
        EHR_URL: 'https://ehr.example.org/referrals',
        SESSION_SECRET: 's'.repeat(40),
        DATA_KEYS: `kek-1:${Buffer.alloc(32, 1).toString('base64')}`,
        AUDIT_SIGNING_KEY: auditSigningKeySetting(await testAuditSigningKey()),
        ATTACHMENT_SCANNING: 'elsewhere',
        WEBHOOK_ALLOWED_ADDRESSES: '10.1.2.3,hooks.internal.test',
      },
    });
  });
  afterAll(async () => {
    await t.close();
  });

  it.each([
    ['plain http', 'http://93.184.215.14/hooks', 'must use https'],
    ['a loopback address', 'https://127.0.0.1/hooks', '127.0.0.1 is a loopback address'],
    ['a private address', 'https://192.168.1.20/hooks', 'a private address'],
    ['a link-local address', 'https://169.254.169.254/latest', 'a link-local address'],
    ['an IPv6 loopback', 'https://[::1]/hooks', 'a loopback address'],
    ['localhost', 'https://localhost/hooks', 'a loopback address'],
  ])('refuses %s with 400 naming body.url', async (_what, url, reason) => {
    const res = await t.request(t.sender, { method: 'POST', url: base(t.sender), payload: { url } });
    expect(res.statusCode, res.body).toBe(400);
    const error = res.json<{ errors: { path: string; message: string }[] }>().errors[0];
    expect(error?.path).toBe('body.url');
    expect(error?.message).toContain(reason);
  });

  it('takes a public address, and a private one an operator allowed', async () => {
    for (const url of [
      'https://93.184.215.14/hooks',
      'https://10.1.2.3/hooks',
      'https://hooks.internal.test/x',
    ]) {
      const res = await t.request(t.sender, { method: 'POST', url: base(t.sender), payload: { url } });
      expect(res.statusCode, `${url}: ${res.body}`).toBe(201);
    }
  });

  it('refuses at delivery time an address that is not public, even when the URL was taken', async () => {
    // Stored directly: as if the host had resolved to a public address when the subscription was made.
    const created = await t.request(t.sender, {
      method: 'POST',
      url: base(t.sender),
      payload: { url: 'https://93.184.215.14/hooks' },
    });
    const id = created.json<{ id: string }>().id;
    await t.ctx.db
      .updateTable('webhook_subscriptions')
      .set({ url: 'https://127.0.0.1:1/hooks' })
      .where('id', '=', id)
      .execute();
    const test = await t.request(t.sender, { method: 'POST', url: `${base(t.sender)}/${id}/test` });
    expect(test.json()).toMatchObject({ outcome: 'failed', errorCode: 'WEBHOOK_ADDRESS_NOT_PUBLIC' });
  });
});

// Outside production only loopback receivers need no allowance: private, link-local (the metadata
// service) and every other non-public address need WEBHOOK_ALLOWED_ADDRESSES in every mode, or any key
// could point a subscription into refhub's network and use the test event to probe it.
describe.each(APP_ENGINES)('webhook URLs outside production on %s', (engine) => {
  let t: TestApp;
  let receiver: WebhookReceiver;
  beforeAll(async () => {
    t = await createTestApp(engine, { env: { WEBHOOK_ALLOWED_ADDRESSES: '10.1.2.3' } });
    receiver = await startWebhookReceiver();
  });
  afterAll(async () => {
    await t.close();
    await receiver.close();
  });

  it.each([
    ['a private address', 'http://192.168.1.20/hooks', '192.168.1.20 is a private address'],
    ['the metadata service', 'http://169.254.169.254/latest', 'is a link-local address'],
    ['the metadata service through NAT64', 'https://[64:ff9b::a9fe:a9fe]/', 'a link-local address'],
    ['a loopback address through 6to4', 'https://[2002:7f00:1::]/', 'a loopback address'],
    ['a site-local address', 'https://[fec0::1]/', 'a private address'],
    ['a documentation address', 'http://192.0.2.7/', 'a reserved address'],
  ])('refuses %s with 400 naming body.url', async (_what, url, reason) => {
    const res = await t.request(t.sender, { method: 'POST', url: base(t.sender), payload: { url } });
    expect(res.statusCode, res.body).toBe(400);
    const error = res.json<{ errors: { path: string; message: string }[] }>().errors[0];
    expect(error?.path).toBe('body.url');
    expect(error?.message).toContain(reason);
  });

  it('takes a loopback receiver over plain http, and a private address an operator allowed', async () => {
    for (const url of [`${receiver.url}/hooks`, 'http://[::1]:1/hooks', 'http://10.1.2.3/hooks']) {
      const res = await t.request(t.sender, { method: 'POST', url: base(t.sender), payload: { url } });
      expect(res.statusCode, `${url}: ${res.body}`).toBe(201);
    }
  });

  it('refuses at connect time an address that is neither loopback nor allowed', async () => {
    const created = await t.request(t.sender, {
      method: 'POST',
      url: base(t.sender),
      payload: { url: `${receiver.url}/hooks` },
    });
    const id = created.json<{ id: string }>().id;
    await t.ctx.db
      .updateTable('webhook_subscriptions')
      .set({ url: 'http://169.254.169.254/latest' })
      .where('id', '=', id)
      .execute();
    const test = await t.request(t.sender, { method: 'POST', url: `${base(t.sender)}/${id}/test` });
    expect(test.json()).toMatchObject({ outcome: 'failed', errorCode: 'WEBHOOK_ADDRESS_NOT_PUBLIC' });
  });
});
