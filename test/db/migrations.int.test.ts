// The one set of migrations builds the same schema on both engines, is idempotent, and can be
// rolled all the way back.
import { sql, type Kysely } from 'kysely';
import { NO_MIGRATIONS } from 'kysely/migration';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createMigrator, isMigrated, migrateToLatest, type Store } from '../../src/db/database.ts';
import { migrations } from '../../src/db/migrations/index.ts';
import type { Database } from '../../src/db/schema.ts';
import { ENGINES, openTestStore } from '../support/engines.ts';

const TABLES = [
  'institutions',
  'systems',
  'offerings',
  'api_keys',
  'referrals',
  'appointments',
  'notes',
  'timeline_events',
  'audit_events',
  'idempotency_keys',
  'outbox',
  'link_tokens',
];

/** The indexes the referral list query (contract §5.1) relies on: each side × each sort key. */
const LIST_INDEXES = {
  referrals_sender_updated: ['sender_id_type', 'sender_id', 'updated_at DESC'],
  referrals_sender_submitted: ['sender_id_type', 'sender_id', 'submitted_at DESC NULLS LAST'],
  referrals_sender_created: ['sender_id_type', 'sender_id', 'created_at DESC'],
  referrals_provider_updated: ['provider_id_type', 'provider_id', 'updated_at DESC'],
  referrals_provider_submitted: ['provider_id_type', 'provider_id', 'submitted_at DESC NULLS LAST'],
  referrals_provider_created: ['provider_id_type', 'provider_id', 'created_at DESC'],
  // The patient filter looks up the blind index of the UIN: the UIN itself is sealed.
  referrals_patient_uin_index: ['patient_uin_index'],
  // The list's total: one narrow index per side.
  referrals_sender_count: ['sender_id_type', 'sender_id'],
  referrals_provider_count: ['provider_id_type', 'provider_id'],
} as const;

async function tablesIn(db: Kysely<Database>): Promise<string[]> {
  const result = await sql<{ tablename: string }>`
    select tablename from pg_tables where schemaname = current_schema() order by tablename
  `.execute(db);
  return result.rows.map((r) => r.tablename);
}

describe.each(ENGINES)('migrations on %s', (engine) => {
  let store: Store;
  beforeAll(async () => {
    store = await openTestStore(engine, { migrate: false });
  });
  afterAll(async () => {
    await store.close();
  });
  // Each test starts from an empty schema: a fresh store, or one rolled all the way back.
  beforeEach(async () => {
    const reset = await createMigrator(store.db).migrateTo(NO_MIGRATIONS);
    expect(reset.error).toBeUndefined();
  });

  it('creates every table of the schema and reports itself migrated', async () => {
    expect(await isMigrated(store.db)).toBe(false);
    const result = await migrateToLatest(store.db);
    expect(result.results?.map((r) => [r.migrationName, r.status])).toEqual(
      Object.keys(migrations).map((name) => [name, 'Success']),
    );
    const tables = await tablesIn(store.db);
    for (const table of TABLES) expect(tables, table).toContain(table);
    expect(await isMigrated(store.db)).toBe(true);
  });

  it('seeds the Manual system, and refhub’s own for the steps refhub takes by itself', async () => {
    await migrateToLatest(store.db);
    const rows = await store.db.selectFrom('systems').select('name').orderBy('name').execute();
    expect(rows.map((r) => r.name)).toEqual(['Manual', 'refhub']);
  });

  it('does nothing when migrated again', async () => {
    await migrateToLatest(store.db);
    const before = await tablesIn(store.db);
    const again = await migrateToLatest(store.db);
    expect(again.error).toBeUndefined();
    expect(again.results).toEqual([]);
    expect(await tablesIn(store.db)).toEqual(before);
    expect(await isMigrated(store.db)).toBe(true);
  });

  it('rolls every migration back, leaving only the migrator’s own bookkeeping, and up again', async () => {
    await migrateToLatest(store.db);
    const down = await createMigrator(store.db).migrateTo(NO_MIGRATIONS);
    expect(down.error).toBeUndefined();
    expect(down.results?.map((r) => [r.migrationName, r.direction, r.status])).toEqual(
      Object.keys(migrations)
        .reverse()
        .map((name) => [name, 'Down', 'Success']),
    );
    const left = await tablesIn(store.db);
    expect(left.filter((t) => !t.startsWith('kysely_'))).toEqual([]);
    expect(await isMigrated(store.db)).toBe(false);

    await migrateToLatest(store.db);
    expect(await tablesIn(store.db)).toEqual(expect.arrayContaining(TABLES));
    expect(await isMigrated(store.db)).toBe(true);
  });

  it('has the indexes the referral list query needs, skipping soft-deleted rows', async () => {
    await migrateToLatest(store.db);
    const result = await sql<{ indexname: string; indexdef: string }>`
      select indexname, indexdef from pg_indexes
      where schemaname = current_schema() and tablename = 'referrals'
    `.execute(store.db);
    const defs = new Map(result.rows.map((r) => [r.indexname, r.indexdef]));
    for (const [name, columns] of Object.entries(LIST_INDEXES)) {
      const def = defs.get(name);
      expect(def, name).toBeDefined();
      expect(def).toContain(`(${columns.join(', ')}`);
      expect(def).toContain('deleted_at IS NULL');
      // Drafts are never listed for the provider, so its indexes leave them out.
      if (name.startsWith('referrals_provider_')) expect(def).toMatch(/status <> 'draft'/);
    }
  });
});
