// API keys (contract §2): shown once, stored only as a SHA-256 and an 8-character display prefix,
// bound to a system, a role and the institutions the key may act for.
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiKeyRepository } from '../../src/db/api-key.repository.ts';
import type { Store } from '../../src/db/database.ts';
import type { Clock } from '../../src/domain/clock.ts';
import { AppError, NotFoundError, ValidationError } from '../../src/errors.ts';
import { createApiKeyService, hashApiKey, type ApiKeyService } from '../../src/services/api-key.service.ts';
import { createCatalogService } from '../../src/services/catalog/catalog.service.ts';
import { DEMO_CATALOG_FILE } from '../../src/composition/demo-setup.ts';
import { ENGINES, openTestStore } from '../support/engines.ts';
import { storesOf } from '../support/stores.ts';

const KEY = /^rfh_(live|test)_[0-9A-Za-z]{43}$/;
const CLINIC = { idType: 'hci', id: 'S1234A' };
const OTHER_CLINIC = { idType: 'hci', id: 'S2345B' };
const HOSPITAL = { idType: 'hci', id: 'S9001Z' };

async function rejection(promise: Promise<unknown>): Promise<AppError> {
  const error: unknown = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(AppError);
  return error as AppError;
}

describe.each(ENGINES)('API keys on %s', (engine) => {
  let store: Store;
  let keys: ApiKeyService;
  const clock: Clock = { now: () => new Date('2026-06-04T03:15:00.000Z') };

  beforeAll(async () => {
    store = await openTestStore(engine);
    await createCatalogService({ stores: storesOf(store.db) }).loadFile(DEMO_CATALOG_FILE);
    keys = createApiKeyService({ stores: storesOf(store.db), clock });
  });
  afterAll(async () => {
    await store.close();
  });

  it('creates rfh_test_ and rfh_live_ keys of 43 base62 characters', async () => {
    const test = await keys.create({
      system: 'HAS',
      role: 'sender',
      institutions: [CLINIC],
      environment: 'test',
    });
    const live = await keys.create({
      system: 'HAS',
      role: 'sender',
      institutions: [CLINIC],
      environment: 'live',
    });
    expect(test.key).toMatch(KEY);
    expect(test.key.startsWith('rfh_test_')).toBe(true);
    expect(live.key).toMatch(KEY);
    expect(live.key.startsWith('rfh_live_')).toBe(true);
    expect(test.key).not.toBe(live.key);
    expect(test.record).toMatchObject({
      system: 'HAS',
      role: 'sender',
      label: null,
      institutions: [CLINIC],
      revokedAt: null,
    });
    // The display prefix is the key's first 8 secret characters after its environment marker.
    expect(test.record.prefix).toBe(test.key.slice(0, 'rfh_test_'.length + 8));
    expect(live.record.prefix).toBe(live.key.slice(0, 'rfh_live_'.length + 8));
  });

  it('draws the secret from the whole base62 alphabet', async () => {
    const seen = new Set<string>();
    for (let i = 0; i < 8; i++) {
      const { key } = await keys.create({
        system: 'Epic',
        role: 'ops',
        institutions: [],
        environment: 'test',
      });
      for (const c of key.slice('rfh_test_'.length)) seen.add(c);
    }
    // 344 random characters from 62 leave a given class empty with negligible probability.
    expect([...seen].some((c) => /[0-9]/.test(c))).toBe(true);
    expect([...seen].some((c) => /[A-Z]/.test(c))).toBe(true);
    expect([...seen].some((c) => /[a-z]/.test(c))).toBe(true);
    expect(seen.size).toBeGreaterThan(40);
  });

  it('stores only the SHA-256 and the display prefix, never the key', async () => {
    const { key, record } = await keys.create({
      system: 'Epic',
      role: 'provider',
      institutions: [HOSPITAL],
      label: 'ward 3 integration',
      environment: 'live',
    });
    const row = await store.db
      .selectFrom('api_keys')
      .selectAll()
      .where('id', '=', record.id)
      .executeTakeFirstOrThrow();
    expect(row.secret_hash).toBe(createHash('sha256').update(key).digest('hex'));
    expect(row.secret_hash).toBe(hashApiKey(key));
    expect(row.prefix).toHaveLength('rfh_live_'.length + 8);
    expect(row).toMatchObject({
      system: 'Epic',
      role: 'provider',
      label: 'ward 3 integration',
      revoked_at: null,
    });
    const secret = key.slice('rfh_live_'.length);
    for (const value of Object.values(row)) {
      const text = value instanceof Date ? value.toISOString() : String(value);
      expect(text).not.toContain(key);
      expect(text).not.toContain(secret);
    }
    const links = await store.db
      .selectFrom('api_key_institutions')
      .selectAll()
      .where('api_key_id', '=', record.id)
      .execute();
    expect(links).toEqual([{ api_key_id: record.id, institution_id_type: 'hci', institution_id: 'S9001Z' }]);
  });

  it('authenticates an active key with its institutions, and nothing else', async () => {
    const { key, record } = await keys.create({
      system: 'HAS',
      role: 'sender',
      institutions: [OTHER_CLINIC, CLINIC],
      environment: 'test',
    });
    const found = await keys.authenticate(key);
    expect(found).toEqual({ ...record, institutions: [CLINIC, OTHER_CLINIC] });
    expect(found?.role).toBe('sender');
    // A near miss, a malformed key and an empty string do not authenticate.
    const last = key.at(-1) === 'a' ? 'b' : 'a';
    expect(await keys.authenticate(key.slice(0, -1) + last)).toBeUndefined();
    expect(await keys.authenticate(key.replace('rfh_test_', 'rfh_live_'))).toBeUndefined();
    expect(await keys.authenticate(`${key}x`)).toBeUndefined();
    expect(await keys.authenticate('')).toBeUndefined();
    expect(await keys.authenticate(hashApiKey(key))).toBeUndefined();
  });

  it('rejects an unknown system and an unknown institution, and stores nothing', async () => {
    const before = await store.db.selectFrom('api_keys').select('id').execute();
    const system = await rejection(
      keys.create({ system: 'Cerner', role: 'sender', institutions: [CLINIC], environment: 'test' }),
    );
    expect(system).toBeInstanceOf(ValidationError);
    expect(system.errors).toEqual([{ path: 'system', message: expect.stringContaining('Cerner') as string }]);

    const institution = await rejection(
      keys.create({
        system: 'HAS',
        role: 'sender',
        institutions: [CLINIC, { idType: 'hci', id: 'S0000X' }],
        environment: 'test',
      }),
    );
    expect(institution).toBeInstanceOf(ValidationError);
    expect(institution.errors).toEqual([
      { path: 'institution', message: expect.stringContaining('hci:S0000X') as string },
    ]);
    expect(await store.db.selectFrom('api_keys').select('id').execute()).toEqual(before);
  });

  it('requires an institution for sender and provider keys, but not for ops keys', async () => {
    for (const role of ['sender', 'provider'] as const) {
      const error = await rejection(
        keys.create({ system: 'HAS', role, institutions: [], environment: 'test' }),
      );
      expect(error.errors?.[0]?.path).toBe('institution');
      expect(error.message).toContain(role);
    }
    const ops = await keys.create({ system: 'HAS', role: 'ops', institutions: [], environment: 'test' });
    expect(ops.record).toMatchObject({ role: 'ops', institutions: [] });
    expect(await keys.authenticate(ops.key)).toMatchObject({
      id: ops.record.id,
      role: 'ops',
      institutions: [],
    });
  });

  it('refuses a key for refhub’s own system: no client may act as refhub', async () => {
    const error = await rejection(
      keys.create({ system: 'refhub', role: 'sender', institutions: [CLINIC], environment: 'test' }),
    );
    expect(error).toBeInstanceOf(ValidationError);
    expect(error.errors).toEqual([{ path: 'system', message: expect.stringContaining('refhub') as string }]);
  });

  it('accepts the Manual system, which is always in the catalog', async () => {
    const { record } = await keys.create({
      system: 'Manual',
      role: 'sender',
      institutions: [CLINIC],
      environment: 'test',
    });
    expect(record.system).toBe('Manual');
  });

  it('revokes by ID: the key stops authenticating and shows as revoked', async () => {
    const { key, record } = await keys.create({
      system: 'HAS',
      role: 'sender',
      institutions: [CLINIC],
      environment: 'test',
    });
    const revoked = await keys.revoke(record.id);
    expect(revoked.id).toBe(record.id);
    expect(await keys.authenticate(key)).toBeUndefined();
    const listed = (await keys.list()).find((k) => k.id === record.id);
    expect(listed?.revokedAt).toEqual(clock.now());
    // Revoking twice finds no active key.
    const again = await rejection(keys.revoke(record.id));
    expect(again).toBeInstanceOf(NotFoundError);
    expect(again.message).toContain(record.id);
  });

  it('revokes by display prefix', async () => {
    const { key, record } = await keys.create({
      system: 'Epic',
      role: 'provider',
      institutions: [HOSPITAL],
      environment: 'live',
    });
    expect(await keys.authenticate(key)).toBeDefined();
    const revoked = await keys.revoke(record.prefix);
    expect(revoked).toMatchObject({ id: record.id, prefix: record.prefix });
    expect(await keys.authenticate(key)).toBeUndefined();
    const unknown = await rejection(keys.revoke('rfh_live_00000000'));
    expect(unknown).toBeInstanceOf(NotFoundError);
  });

  it('refuses to revoke by a prefix that several active keys share', async () => {
    const a = await keys.create({ system: 'HAS', role: 'ops', institutions: [], environment: 'test' });
    const b = await keys.create({ system: 'HAS', role: 'ops', institutions: [], environment: 'test' });
    // Force a prefix collision (1 in 62^8 by chance) to see that revoke does not guess.
    await store.db
      .updateTable('api_keys')
      .set({ prefix: b.record.prefix })
      .where('id', '=', a.record.id)
      .execute();
    const error = await rejection(keys.revoke(b.record.prefix));
    expect(error).toBeInstanceOf(ValidationError);
    expect(error.message).toMatch(/several keys/);
    expect(await keys.authenticate(a.key)).toBeDefined();
    expect(await keys.authenticate(b.key)).toBeDefined();
  });

  it('lists every key in creation order without any secret', async () => {
    const first = await keys.create({ system: 'HAS', role: 'ops', institutions: [], environment: 'test' });
    const second = await keys.create({ system: 'Epic', role: 'ops', institutions: [], environment: 'live' });
    await apiKeyRepository(store.db).revoke(second.record.id, clock.now());
    const listed = await keys.list();
    const ids = listed.map((k) => k.id);
    expect(ids.indexOf(first.record.id)).toBeGreaterThanOrEqual(0);
    expect(ids.indexOf(second.record.id)).toBeGreaterThan(ids.indexOf(first.record.id));
    expect(listed.find((k) => k.id === second.record.id)?.revokedAt).toEqual(clock.now());
    for (const k of listed) {
      expect(Object.keys(k).sort()).toEqual(
        [
          'createdAt',
          'id',
          'institutions',
          'kind',
          'label',
          'prefix',
          'rateLimit',
          'revokedAt',
          'role',
          'system',
        ].sort(),
      );
      expect(k.prefix).toMatch(/^rfh_(live|test)_[0-9A-Za-z]{8}$/);
    }
    const created = listed.map((k) => k.createdAt.getTime());
    expect([...created].sort((x, y) => x - y)).toEqual(created);
  });
});
