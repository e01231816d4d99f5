// Data keys for tests that use a store without the composition root: a key ring of the test's own,
// so that repositories seal and open patient data as they do in production.
import { randomBytes } from 'node:crypto';
import {
  openDataKeys,
  type DataKeys,
  type DataKeysOptions,
} from '../../src/db/data-keys/data-keys.repository.ts';
import { localKeyRing, type LocalKeyEncryptionKey } from '../../src/domain/data-keys.ts';

/** A key-encryption key made for one test run. */
export function testKeyEncryptionKey(id = 'test'): LocalKeyEncryptionKey {
  return { id, key: randomBytes(32) };
}

/** DATA_KEYS for `keys`, as a process started by a test is given them. */
export function dataKeysSetting(...keys: LocalKeyEncryptionKey[]): string {
  return keys.map((k) => `${k.id}:${k.key.toString('base64')}`).join(',');
}

/** Data keys under `keys` (by default one key made for the call), for whichever store a call names. */
export function testDataKeys(
  keys: readonly LocalKeyEncryptionKey[] = [testKeyEncryptionKey()],
  options: DataKeysOptions = {},
): DataKeys {
  return openDataKeys(localKeyRing(keys), options);
}
