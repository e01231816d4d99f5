// Data keys for tests that use a store without the composition root: a key ring of the test's own,
// so that repositories seal and open patient data as they do in production.
import { randomBytes } from 'node:crypto';
import type { Kysely } from 'kysely';
import { openDataKeys, type DataKeys, type DataKeysOptions } from '../../src/db/data-keys.repository.ts';
import type { Database } from '../../src/db/schema.ts';
import { localKeyRing, type LocalKeyEncryptionKey } from '../../src/domain/data-keys.ts';

/** A key-encryption key made for one test run. */
export function testKeyEncryptionKey(id = 'test'): LocalKeyEncryptionKey {
  return { id, key: randomBytes(32) };
}

/** DATA_KEYS for `keys`, as a process started by a test is given them. */
export function dataKeysSetting(...keys: LocalKeyEncryptionKey[]): string {
  return keys.map((k) => `${k.id}:${k.key.toString('base64')}`).join(',');
}

/** The data keys of `db`, under `keys` (by default one key made for the call). */
export function testDataKeys(
  db: Kysely<Database>,
  keys: readonly LocalKeyEncryptionKey[] = [testKeyEncryptionKey()],
  options: DataKeysOptions = {},
): DataKeys {
  return openDataKeys(db, localKeyRing(keys), options);
}
