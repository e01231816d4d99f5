import { exportJWK, generateKeyPair } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LINK_TOKEN_RETENTION_MS, housekeepingRepository } from '../../src/db/housekeeping.repository.ts';
import { createHousekeeping } from '../../src/services/housekeeping.service.ts';
import { ENGINES } from '../support/engines.ts';
import { createDraft } from '../support/scenarios.ts';
import { createTestApp, type TestApp } from '../support/test-app.ts';
import { startWebhookReceiver } from '../support/webhook-receiver.ts';

describe.each(ENGINES)('housekeeping on %s', (engine) => {
  let t: TestApp;
  let now = new Date('2030-01-01T00:00:00.000Z');
  beforeAll(async () => {
    t = await createTestApp(engine, { clock: { now: () => now } });
  });
  afterAll(async () => {
    await t.close();
  });

  it('purges expired idempotency records, link tokens and events past their retention, and nothing else', async () => {
    const repo = housekeepingRepository(t.ctx.db);
    // Two idempotent requests and a link upsert at "now".
    for (const key of ['k-1', 'k-2']) {
      const res = await t.request(t.sender, {
        method: 'POST',
        url: '/api/v1/referrals',
        headers: { 'idempotency-key': key },
        payload: { ...t.sender.institution },
      });
      expect(res.statusCode).toBe(201);
    }
    const draft = await createDraft(t);
    const link = await t.request(t.sender, {
      method: 'POST',
      url: '/api/v1/links/upsert',
      payload: { ...t.sender.institution, requesterIdentifier: 'dr@example.org', referralId: draft.id },
    });
    expect(link.statusCode).toBe(200);
    const tokensBefore = await repo.count('link_tokens');
    expect(tokensBefore).toBeGreaterThan(0);
    expect(await repo.count('idempotency_keys')).toBe(2);

    const housekeeping = createHousekeeping({
      stores: t.ctx.stores,
      clock: t.ctx.clock,
      logger: t.ctx.logger,
      eventRetentionDays: 10,
    });
    const purged = (counts: Record<string, number>) => ({
      idempotencyKeys: 0,
      linkTokens: 0,
      events: 0,
      webhookSecrets: 0,
      clientCredentials: 0,
      ...counts,
    });
    const events = await repo.count('referral_events');
    expect(events).toBeGreaterThan(0);
    expect(await housekeeping.purgeExpired()).toEqual(purged({}));

    // A day later the idempotency records have expired; the link tokens are still within retention.
    now = new Date(now.getTime() + 24 * 3600_000 + 1000);
    expect(await housekeeping.purgeExpired()).toEqual(purged({ idempotencyKeys: 2 }));
    expect(await repo.count('link_tokens')).toBe(tokensBefore);

    // Past the retention window the tokens go too.
    now = new Date(now.getTime() + LINK_TOKEN_RETENTION_MS);
    expect(await housekeeping.purgeExpired()).toEqual(purged({ linkTokens: tokensBefore }));
    expect(await repo.count('link_tokens')).toBe(0);
    expect(await repo.count('referral_events')).toBe(events);
    // Past EVENT_RETENTION_DAYS the events leave the feed; the timeline keeps them.
    now = new Date(now.getTime() + 10 * 24 * 3600_000);
    expect(await housekeeping.purgeExpired()).toEqual(purged({ events }));
    expect(await repo.count('referral_events')).toBe(0);
    // The referral itself is untouched.
    const get = await t.request(t.sender, {
      method: 'GET',
      url: `/api/v1/referrals/${draft.id}?requesterIdentifier=dr%40example.org&institutionIdType=hci&institutionId=S1234A`,
    });
    expect(get.statusCode).toBe(200);
  });
  it('forgets a rotated-out webhook secret once its 24 hours of overlap have ended, and only then', async () => {
    const receiver = await startWebhookReceiver();
    try {
      const base = `/api/v1/institutions/${t.sender.institution.institutionIdType}/${t.sender.institution.institutionId}/webhook-subscriptions`;
      const created = await t.request(t.sender, {
        method: 'POST',
        url: base,
        payload: { url: `${receiver.url}/hooks` },
      });
      expect(created.statusCode).toBe(201);
      const { id } = created.json<{ id: string }>();
      const rotated = await t.request(t.sender, { method: 'POST', url: `${base}/${id}/rotate-secret` });
      expect(rotated.statusCode).toBe(200);
      const previous = () =>
        t.ctx.db
          .selectFrom('webhook_subscriptions')
          .select(['previous_secret', 'previous_secret_expires_at'])
          .where('id', '=', id)
          .executeTakeFirstOrThrow();
      const overlapEnds = (await previous()).previous_secret_expires_at;
      expect(overlapEnds).not.toBeNull();
      const housekeeping = createHousekeeping({
        stores: t.ctx.stores,
        clock: t.ctx.clock,
        logger: t.ctx.logger,
      });

      // During the overlap both secrets sign, and the old one is kept.
      now = new Date(overlapEnds!.getTime() - 1000);
      expect((await housekeeping.purgeExpired()).webhookSecrets).toBe(0);
      expect((await previous()).previous_secret).not.toBeNull();

      now = new Date(overlapEnds!.getTime());
      expect((await housekeeping.purgeExpired()).webhookSecrets).toBe(1);
      expect(await previous()).toEqual({ previous_secret: null, previous_secret_expires_at: null });
      expect((await housekeeping.purgeExpired()).webhookSecrets).toBe(0);
      // The subscription and its current secret stay.
      const listed = await t.request(t.sender, { method: 'GET', url: `${base}/${id}` });
      expect(listed.statusCode).toBe(200);
    } finally {
      await receiver.close();
    }
  });

  it('forgets access tokens and assertion jtis once they have expired, and only then', async () => {
    const { publicKey } = await generateKeyPair('ES384', { extractable: true });
    const client = await t.ctx.clientCredentials.register({
      system: 'HAS',
      role: 'sender',
      institution: { idType: 'hci', id: t.sender.institution.institutionId },
      keys: { kind: 'inline', jwks: { keys: [{ ...(await exportJWK(publicKey)), kid: 'k1' }] } },
    });
    const expiresAt = new Date(now.getTime() + 300_000);
    await t.ctx.db
      .insertInto('access_tokens')
      .values({
        token_hash: 'a'.repeat(64),
        api_key_id: client.id,
        institution_id_type: 'hci',
        institution_id: t.sender.institution.institutionId,
        scopes: ['system/Referral.read'],
        issued_at: now,
        expires_at: expiresAt,
      })
      .execute();
    await t.ctx.db
      .insertInto('client_assertions')
      .values({ api_key_id: client.id, jti: 'jti-1', expires_at: expiresAt })
      .execute();
    const housekeeping = createHousekeeping({
      stores: t.ctx.stores,
      clock: t.ctx.clock,
      logger: t.ctx.logger,
    });
    expect((await housekeeping.purgeExpired()).clientCredentials).toBe(0);
    now = new Date(expiresAt.getTime() + 1);
    expect((await housekeeping.purgeExpired()).clientCredentials).toBe(2);
    expect(await t.ctx.db.selectFrom('client_assertions').select('jti').execute()).toEqual([]);
  });
});
