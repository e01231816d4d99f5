// The stores of a test's own database, sealing with the test data keys: what a service under test is
// built with when no whole context is.
import type { Kysely } from 'kysely';
import type { Database } from '../../src/db/schema.ts';
import { createStores, type Stores } from '../../src/db/stores.ts';
import { testDataKeys } from './data-keys.ts';

export function storesOf(db: Kysely<Database>): Stores {
  return createStores(db, testDataKeys());
}
