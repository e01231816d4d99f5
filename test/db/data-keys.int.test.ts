// The data keys in the store, on both engines: made once however many processes start together,
// opened by a process that has not seen a newer key yet, wrapped again by a rotation of the key ring,
// and refused with a reason when the ring lacks the key that wraps them.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Store } from '../../src/db/database.ts';
import { dataKeyRepository } from '../../src/db/data-keys.repository.ts';
import { localKeyRing, UnknownDataKeyError, type FieldPlace } from '../../src/domain/data-keys.ts';
import { ENGINES, openTestStore } from '../support/engines.ts';
import { testDataKeys, testKeyEncryptionKey } from '../support/data-keys.ts';

const place: FieldPlace = { table: 'notes', column: 'content', row: 'n1' };

describe.each(ENGINES)('data keys on %s', (engine) => {
  let store: Store;
  beforeEach(async () => {
    store = await openTestStore(engine);
  });
  afterEach(async () => {
    await store.close();
  });

  it('makes one fields key and one blind-index key, however many processes load at once', async () => {
    const kek = testKeyEncryptionKey();
    const ciphers = await Promise.all(
      Array.from({ length: 6 }, () => testDataKeys(store.db, [kek]).cipher()),
    );
    const rows = await dataKeyRepository(store.db).all();
    expect(rows.map((r) => r.purpose).sort()).toEqual(['blind-index', 'fields']);
    expect(new Set(ciphers.map((c) => c.activeKeyId))).toEqual(
      new Set([rows.find((r) => r.purpose === 'fields')?.id]),
    );
    // Every process computes the same blind index.
    expect(new Set(ciphers.map((c) => c.blindIndex('patient-uin', 'S7777777Q'))).size).toBe(1);
  });

  it('opens a value sealed under a key another process made since, by loading the keys again', async () => {
    const kek = testKeyEncryptionKey();
    const before = testDataKeys(store.db, [kek]);
    const older = await before.cipher();
    const other = testDataKeys(store.db, [kek]);
    await other.cipher();
    const newer = await dataKeyRepository(store.db).makeFieldsKey(other.ring);
    const sealed = (await other.reload()).seal('after the rotation', place);
    expect((await other.cipher()).activeKeyId).toBe(newer);
    // `before` still seals with its key until it looks again; it opens the newer value all the same.
    expect((await before.cipher()).activeKeyId).toBe(older.activeKeyId);
    expect(() => older.open(sealed, place)).toThrow(UnknownDataKeyError);
    expect(await before.reading((c) => c.open(sealed, place))).toBe('after the rotation');
    expect((await before.cipher()).activeKeyId).toBe(newer);
  });

  it('looks for a newer key once its refresh interval has passed', async () => {
    const kek = testKeyEncryptionKey();
    let now = 0;
    const keys = testDataKeys(store.db, [kek], { refreshMs: 1000, now: () => now });
    const first = (await keys.cipher()).activeKeyId;
    const newer = await dataKeyRepository(store.db).makeFieldsKey(keys.ring);
    now = 999;
    expect((await keys.cipher()).activeKeyId).toBe(first);
    now = 1000;
    expect((await keys.cipher()).activeKeyId).toBe(newer);
  });

  it('wraps every data key again with the first key of the ring, so the old one can leave it', async () => {
    const old = testKeyEncryptionKey('kek-old');
    const sealed = (await testDataKeys(store.db, [old]).cipher()).seal('kept', place);
    const next = testKeyEncryptionKey('kek-new');
    expect(await dataKeyRepository(store.db).rewrap(localKeyRing([next, old]))).toBe(2);
    expect(new Set((await dataKeyRepository(store.db).all()).map((r) => r.kek_id))).toEqual(
      new Set(['kek-new']),
    );
    expect(await testDataKeys(store.db, [next]).reading((c) => c.open(sealed, place))).toBe('kept');
    // Nothing left to wrap again.
    expect(await dataKeyRepository(store.db).rewrap(localKeyRing([next]))).toBe(0);
  });

  it('refuses, naming the missing key-encryption key, when the ring cannot unwrap a data key', async () => {
    await testDataKeys(store.db, [testKeyEncryptionKey('kek-2025')]).cipher();
    const [first] = await dataKeyRepository(store.db).all();
    await expect(testDataKeys(store.db, [testKeyEncryptionKey('kek-2026')]).cipher()).rejects.toThrow(
      `DATA_KEYS: does not hold key-encryption key kek-2025, which wraps data key ${first?.id}`,
    );
    // The same ID with other bytes is not the key: the wrapped key does not open.
    await expect(testDataKeys(store.db, [testKeyEncryptionKey('kek-2025')]).cipher()).rejects.toThrow(
      `key-encryption key kek-2025 does not open data key ${first?.id}`,
    );
  });
});
