// The data keys in the store, on both engines: made once however many processes start together,
// opened by a process that has not seen a newer key yet, looked up through the transaction that needs
// them (never through another connection, which on PGlite's one would wait for the transaction
// itself), wrapped again by a rotation of the key ring, and refused with a reason when the ring lacks
// the key that wraps them.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Store } from '../../src/db/database.ts';
import { dataKeyRepository } from '../../src/db/data-keys/data-keys.repository.ts';
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
    const ciphers = await Promise.all(Array.from({ length: 6 }, () => testDataKeys([kek]).cipher(store.db)));
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
    const before = testDataKeys([kek]);
    const older = await before.cipher(store.db);
    const other = testDataKeys([kek]);
    await other.cipher(store.db);
    const newer = await dataKeyRepository(store.db).makeFieldsKey(other.ring);
    const sealed = (await other.reload(store.db)).seal('after the rotation', place);
    expect((await other.cipher(store.db)).activeKeyId).toBe(newer);
    // `before` still seals with its key until it looks again; it opens the newer value all the same.
    expect((await before.cipher(store.db)).activeKeyId).toBe(older.activeKeyId);
    expect(() => older.open(sealed, place)).toThrow(UnknownDataKeyError);
    expect(await before.reading(store.db, (c) => c.open(sealed, place))).toBe('after the rotation');
    expect((await before.cipher(store.db)).activeKeyId).toBe(newer);
  });

  it('looks for a newer key once its refresh interval has passed', async () => {
    const kek = testKeyEncryptionKey();
    let now = 0;
    const keys = testDataKeys([kek], { refreshMs: 1000, now: () => now });
    const first = (await keys.cipher(store.db)).activeKeyId;
    const newer = await dataKeyRepository(store.db).makeFieldsKey(keys.ring);
    now = 999;
    expect((await keys.cipher(store.db)).activeKeyId).toBe(first);
    now = 1000;
    expect((await keys.cipher(store.db)).activeKeyId).toBe(newer);
  });

  it('looks the keys up through the transaction that is the first to need them after they lapse', async () => {
    const kek = testKeyEncryptionKey();
    let now = 0;
    const keys = testDataKeys([kek], { refreshMs: 1000, now: () => now });
    const first = (await keys.cipher(store.db)).activeKeyId;
    const newer = await dataKeyRepository(store.db).makeFieldsKey(keys.ring);
    now = 1000;
    const inside = await store.db.transaction().execute(async (trx) => {
      const cipher = await keys.cipher(trx);
      return { cipher, rows: await trx.selectFrom('data_keys').select('id').execute() };
    });
    expect(inside.cipher.activeKeyId).toBe(newer);
    expect(inside.cipher.activeKeyId).not.toBe(first);
    expect(inside.rows).toHaveLength(3);
  });

  it('makes the first keys inside the transaction that is the first to need them', async () => {
    const keys = testDataKeys();
    const made = await store.db.transaction().execute((trx) => keys.cipher(trx));
    const rows = await dataKeyRepository(store.db).all();
    expect(made.activeKeyId).toBe(rows.find((r) => r.purpose === 'fields')?.id);
  });

  it('never has a transaction wait for a load begun through the store while the transaction holds its connection', async () => {
    const kek = testKeyEncryptionKey();
    let now = 0;
    const keys = testDataKeys([kek], { refreshMs: 1000, now: () => now });
    await keys.cipher(store.db);
    now = 1000;
    let began!: () => void;
    const begun = new Promise<void>((resolve) => (began = resolve));
    let go!: () => void;
    const going = new Promise<void>((resolve) => (go = resolve));
    const transaction = store.db.transaction().execute(async (trx) => {
      // The transaction holds its connection (PGlite's only one) from here on.
      await trx.selectFrom('data_keys').select('id').execute();
      began();
      await going;
      return keys.cipher(trx);
    });
    await begun;
    // Another request needs the lapsed keys now, through the store: on PGlite its load waits for the
    // connection until the transaction ends. The transaction must not wait for that load.
    const outside = keys.cipher(store.db);
    go();
    const [inside, other] = await Promise.all([transaction, outside]);
    expect(inside.activeKeyId).toBe(other.activeKeyId);
  });

  it('wraps every data key again with the first key of the ring, so the old one can leave it', async () => {
    const old = testKeyEncryptionKey('kek-old');
    const sealed = (await testDataKeys([old]).cipher(store.db)).seal('kept', place);
    const next = testKeyEncryptionKey('kek-new');
    expect(await dataKeyRepository(store.db).rewrap(localKeyRing([next, old]))).toBe(2);
    expect(new Set((await dataKeyRepository(store.db).all()).map((r) => r.kek_id))).toEqual(
      new Set(['kek-new']),
    );
    expect(await testDataKeys([next]).reading(store.db, (c) => c.open(sealed, place))).toBe('kept');
    // Nothing left to wrap again.
    expect(await dataKeyRepository(store.db).rewrap(localKeyRing([next]))).toBe(0);
  });

  it('refuses, naming the missing key-encryption key, when the ring cannot unwrap a data key', async () => {
    await testDataKeys([testKeyEncryptionKey('kek-2025')]).cipher(store.db);
    const [first] = await dataKeyRepository(store.db).all();
    await expect(testDataKeys([testKeyEncryptionKey('kek-2026')]).cipher(store.db)).rejects.toThrow(
      `DATA_KEYS: does not hold key-encryption key kek-2025, which wraps data key ${first?.id}`,
    );
    // The same ID with other bytes is not the key: the wrapped key does not open.
    await expect(testDataKeys([testKeyEncryptionKey('kek-2025')]).cipher(store.db)).rejects.toThrow(
      `key-encryption key kek-2025 does not open data key ${first?.id}`,
    );
  });
});
