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

  it('owes a sweep after 0018 where referrals exist, to move their patient data into one value', async () => {
    const to0017 = await createMigrator(store.db).migrateTo('0017-field-encryption');
    expect(to0017.error).toBeUndefined();
    const swept = new Date('2026-11-20T00:00:00.000Z');
    await sql`insert into data_keys (id, purpose, kek_id, wrapped, created_at, swept_at) values
      ('aaaaaaaaaaaa', 'blind-index', 'kek', 'w', ${swept}, null),
      ('bbbbbbbbbbbb', 'fields', 'kek', 'w', ${swept}, ${swept}),
      ('cccccccccccc', 'fields', 'kek', 'w', ${new Date(swept.getTime() + 1000)}, ${swept})`.execute(
      store.db,
    );
    await sql`insert into institutions (id_type, id, name) values ('hci', 'S1234A', 'A clinic')`.execute(
      store.db,
    );
    await sql`insert into referrals (id, version, status, sender_id_type, sender_id, sender_system,
      created_at, updated_at) values
      ('0193a1d2-0000-7000-8000-000000000001', 1, 'draft', 'hci', 'S1234A', 'Manual', now(), now())`.execute(
      store.db,
    );
    expect((await migrateToLatest(store.db)).error).toBeUndefined();
    const keys = await store.db.selectFrom('data_keys').select(['id', 'swept_at']).orderBy('id').execute();
    // The newest fields key is swept to again; the others keep what they had.
    expect(keys).toEqual([
      { id: 'aaaaaaaaaaaa', swept_at: null },
      { id: 'bbbbbbbbbbbb', swept_at: swept },
      { id: 'cccccccccccc', swept_at: null },
    ]);
  });

  it('owes no sweep after 0018 where there is no referral', async () => {
    expect((await createMigrator(store.db).migrateTo('0017-field-encryption')).error).toBeUndefined();
    const swept = new Date('2026-11-20T00:00:00.000Z');
    await sql`insert into data_keys (id, purpose, kek_id, wrapped, created_at, swept_at) values
      ('bbbbbbbbbbbb', 'fields', 'kek', 'w', ${swept}, ${swept})`.execute(store.db);
    expect((await migrateToLatest(store.db)).error).toBeUndefined();
    const key = await store.db.selectFrom('data_keys').select('swept_at').executeTakeFirstOrThrow();
    expect(key.swept_at).toEqual(swept);
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
