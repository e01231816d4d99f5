// The key ring of a benchmark run: every refhub process of the run is given it as DATA_KEYS, and the
// seeding seals the drafts it writes with the same keys, so refhub opens them as its own.
import { randomBytes } from 'node:crypto';
import type { Kysely } from 'kysely';
import { openDataKeys } from '../src/db/data-keys/data-keys.repository.ts';
import type { Database } from '../src/db/schema.ts';
import { localKeyRing, type FieldCipher, type LocalKeyEncryptionKey } from '../src/domain/data-keys.ts';

const BENCH_KEY: LocalKeyEncryptionKey = { id: 'bench', key: randomBytes(32) };

/** DATA_KEYS for the run's refhub processes. */
export const BENCH_DATA_KEYS = `${BENCH_KEY.id}:${BENCH_KEY.key.toString('base64')}`;

/** The cipher refhub seals with in the run's database `db` (its first data keys are made here). */
export function benchCipher(db: Kysely<Database>): Promise<FieldCipher> {
  return openDataKeys(localKeyRing([BENCH_KEY])).cipher(db);
}
