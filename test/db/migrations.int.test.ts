// The one set of migrations builds the same schema on both engines, is idempotent, and can be
// rolled all the way back; and what a migration does to rows already there.
import { randomUUID } from 'node:crypto';
import { sql, type Kysely } from 'kysely';
import { NO_MIGRATIONS } from 'kysely/migration';
import { CompactSign, importJWK } from 'jose';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { auditChainRepository } from '../../src/db/audit/audit-chain.repository.ts';
import { auditEventOf, systemActor } from '../../src/domain/audit.ts';
import { auditRepository } from '../../src/db/audit/audit.repository.ts';
import { createMigrator, isMigrated, migrateToLatest, type Store } from '../../src/db/database.ts';
import { migrations } from '../../src/db/migrations/index.ts';
import type { Database } from '../../src/db/schema.ts';
import { createStores } from '../../src/db/stores.ts';
import { chainOf, GENESIS_HASH, rowHashOf } from '../../src/domain/audit-chain.ts';
import { checkpointBytes, checkpointHashOf } from '../../src/services/audit/audit-chain-check.ts';
import { createAuditChain } from '../../src/services/audit/audit-chain.service.ts';
import { testAuditSigningKey } from '../support/audit-signing-key.ts';
import { testDataKeys } from '../support/data-keys.ts';
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

  it('takes the free text out of the sentences already in the feed, and has the timeline sealed', async () => {
    expect((await createMigrator(store.db).migrateTo('0018-personal-data-together')).error).toBeUndefined();
    // Rows as a refhub before 0019 wrote them: the feed's sentences quote what people typed.
    const referralId = randomUUID();
    await sql`insert into institutions (id_type, id, name) values ('hci', 'S1234A', 'Bukit Timah Family Clinic')`.execute(
      store.db,
    );
    await sql`
      insert into referrals (id, status, sender_id_type, sender_id, sender_system, created_at, updated_at)
      values (${referralId}, 'cancelled', 'hci', 'S1234A', 'Manual', now(), now())`.execute(store.db);
    const when = 'Thu 3 Dec 2026, 09:30 SGT';
    const sentences: [type: string, stored: string, becomes: string][] = [
      [
        'referral.cancelled',
        'Dr Tan (Bukit Timah Family Clinic) cancelled the referral: Patient Tan Ah Kow recovered, NRIC S1234567D',
        'Dr Tan (Bukit Timah Family Clinic) cancelled the referral.',
      ],
      [
        'referral.rejected',
        'Central General Hospital rejected the referral: Tan Ah Kow: not ours: see the letter',
        'Central General Hospital rejected the referral.',
      ],
      [
        'referral.sender-action-required',
        'Central General Hospital asked the sender to act on the referral: Attach Tan Ah Kow’s ECG',
        'Central General Hospital asked the sender to act on the referral.',
      ],
      // A name may hold " at "; the time never does.
      [
        'appt.scheduled',
        `Dr Lim at Ward 5 (Central General Hospital) scheduled an appointment for ${when} at Home of Tan Ah Kow, at 5 Jalan Besar.`,
        `Dr Lim at Ward 5 (Central General Hospital) scheduled an appointment for ${when}.`,
      ],
      [
        'appt.actualized',
        `The appointment on ${when} at Home of Tan Ah Kow took place.`,
        `The appointment on ${when} took place.`,
      ],
      [
        'appt.no-show',
        `The patient missed the appointment on ${when} at Home of Tan Ah Kow, who took place.`,
        `The patient missed the appointment on ${when}.`,
      ],
      [
        'appt.cancelled',
        `The appointment on ${when} at Home of Tan Ah Kow was cancelled.`,
        `The appointment on ${when} was cancelled.`,
      ],
      // What quotes nothing stays as it is, also a sentence written without its quote already.
      [
        'referral.accepted',
        'Central General Hospital accepted the referral.',
        'Central General Hospital accepted the referral.',
      ],
      [
        'referral.cancelled',
        'Bukit Timah Family Clinic cancelled the referral.',
        'Bukit Timah Family Clinic cancelled the referral.',
      ],
      [
        'appt.cancelled',
        `The appointment on ${when} was cancelled.`,
        `The appointment on ${when} was cancelled.`,
      ],
    ];
    const ids = sentences.map(() => randomUUID());
    for (const [i, [type, stored]] of sentences.entries()) {
      await sql`
        insert into referral_events (id, referral_id, referral_version, type, system, description, occurred_at,
          sender_id_type, sender_id)
        values (${ids[i]}, ${referralId}, ${i + 1}, ${type}, 'Manual', ${stored}, now(), 'hci', 'S1234A')`.execute(
        store.db,
      );
      await sql`
        insert into timeline_events (id, referral_id, type, system, description, produced_at)
        values (${ids[i]}, ${referralId}, ${type}, 'Manual', ${stored}, now())`.execute(store.db);
    }
    // Keys a start after 0017 made and swept to: the newest fields key is the active one.
    const keys = [
      ['fields-old', 'fields', '2026-01-01T00:00:00Z'],
      ['blind', 'blind-index', '2026-01-01T00:00:00Z'],
      ['fields-new', 'fields', '2026-06-01T00:00:00Z'],
    ];
    for (const [id, purpose, at] of keys) {
      await sql`insert into data_keys (id, purpose, kek_id, wrapped, created_at, swept_at)
        values (${id}, ${purpose}, 'kek', 'wrapped', ${at}::timestamptz, ${at}::timestamptz)`.execute(
        store.db,
      );
    }

    const result = await migrateToLatest(store.db);
    expect(result.error).toBeUndefined();
    const { rows } = await sql<{ id: string; description: string }>`
      select id, description from referral_events`.execute(store.db);
    const now = new Map(rows.map((r) => [r.id, r.description]));
    expect(ids.map((id) => now.get(id))).toEqual(sentences.map(([, , becomes]) => becomes));
    // The timeline keeps its quotes: the sweep seals them, which the active key's mark asks for.
    const { rows: timeline } = await sql<{ description: string }>`
      select description from timeline_events order by seq`.execute(store.db);
    expect(timeline.map((r) => r.description)).toEqual(sentences.map(([, stored]) => stored));
    const { rows: swept } = await sql<{ id: string; swept: boolean }>`
      select id, swept_at is not null as swept from data_keys order by id`.execute(store.db);
    expect(swept).toEqual([
      { id: 'blind', swept: true },
      { id: 'fields-new', swept: false },
      { id: 'fields-old', swept: true },
    ]);
  });

  it('keeps the audit trail sealed before 0020 verifying, and goes on with it in the second forms', async () => {
    expect((await createMigrator(store.db).migrateTo('0019-events-without-free-text')).error).toBeUndefined();
    const key = await testAuditSigningKey('audit-before-0020');
    const clock = { now: () => new Date() };
    // Three rows sealed as a refhub before 0020 sealed them: the first hash form, which covers neither
    // sealed_at nor the chain, and a checkpoint of the first form, signed.
    const occurredAt = new Date(Date.now() - 10_000);
    const sealedAt = new Date(occurredAt.getTime() + 3_000);
    const name = chainOf({ institution: { idType: 'hci', id: 'S1234A' }, occurredAt });
    let prevHash = GENESIS_HASH;
    for (const index of [1, 2, 3]) {
      const content = {
        id: randomUUID(),
        occurredAt: new Date(occurredAt.getTime() + index),
        requestId: `before-0020-${index}`,
        apiKeyId: null,
        system: 'HAS',
        institution: { idType: 'hci', id: 'S1234A' },
        claimedInstitution: null,
        requesterIdentifier: null,
        action: 'referral.read',
        outcome: 'success',
        referralIds: [randomUUID()],
      };
      const rowHash = rowHashOf(prevHash, { ...content, chain: name, chainIndex: index, sealedAt }, 1);
      await sql`insert into audit_events (id, occurred_at, request_id, api_key_id, system, institution_id_type,
          institution_id, requester_identifier, action, outcome, referral_ids, chain, chain_index, prev_hash,
          row_hash, sealed_at)
        values (${content.id}, ${content.occurredAt}, ${content.requestId}, null, 'HAS', 'hci', 'S1234A', null,
          'referral.read', 'success', ${content.referralIds}::uuid[], ${name}, ${index}, ${prevHash},
          ${rowHash}, ${sealedAt})`.execute(store.db);
      prevHash = rowHash;
    }
    const checkpoint = {
      createdAt: new Date(sealedAt.getTime() + 5),
      heads: { [name]: { index: 3, hash: prevHash } },
    };
    const signature = await new CompactSign(checkpointBytes({ ...checkpoint, form: 1, prevHash: null }))
      .setProtectedHeader({ alg: 'EdDSA', kid: key.kid })
      .sign(await importJWK(key, 'EdDSA'));
    await sql`insert into audit_chain_heads (chain, chain_index, row_hash) values (${name}, 3, ${prevHash})`.execute(
      store.db,
    );
    await sql`insert into audit_checkpoints (created_at, heads, signature, key_id)
      values (${checkpoint.createdAt}, ${JSON.stringify(checkpoint.heads)}::jsonb, ${signature}, ${key.kid})`.execute(
      store.db,
    );

    expect((await migrateToLatest(store.db)).error).toBeUndefined();
    const auditChain = createAuditChain({
      stores: createStores(store.db, testDataKeys()),
      clock,
      signingKey: key,
    });
    expect((await auditChain.verify()).broken).toBeUndefined();
    const forms = await store.db.selectFrom('audit_events').select('hash_form').distinct().execute();
    expect(forms).toEqual([{ hash_form: 1 }]);

    // A sealer of the version before, still running during a rolling restart, cannot seal a row or
    // write a checkpoint without its form: the schema refuses both, and the row waits for a new one.
    await auditRepository(store.db).record(
      auditEventOf(
        systemActor('old-sealer'),
        'referral.reminder-sent',
        [],
        new Date(occurredAt.getTime() + 5),
      ),
    );
    await expect(
      sql`update audit_events set chain = 'refhub/x', chain_index = 1, prev_hash = ${GENESIS_HASH},
            row_hash = ${GENESIS_HASH}, sealed_at = now() where request_id = 'old-sealer'`.execute(store.db),
    ).rejects.toThrow(/audit_events_hash_form/);
    await expect(
      sql`insert into audit_checkpoints (created_at, heads, signature, key_id)
          values (now(), '{}'::jsonb, null, null)`.execute(store.db),
    ).rejects.toThrow(/form/);
    await store.db.deleteFrom('audit_events').where('request_id', '=', 'old-sealer').execute();

    // A row written after the upgrade continues the chain in the second form, and the checkpoint
    // that records it links to the one before.
    await auditRepository(store.db).record(
      auditEventOf(
        {
          requestId: 'after-0020',
          apiKeyId: null,
          system: 'HAS',
          institution: { idType: 'hci', id: 'S1234A' },
          requesterIdentifier: null,
        },
        'referral.read',
        [],
        new Date(occurredAt.getTime() + 10),
      ),
    );
    expect(await auditChain.seal()).toBe(1);
    const verified = await auditChain.verify();
    expect(verified.broken).toBeUndefined();
    expect(verified).toMatchObject({ chains: 1, rows: 4, checkpoints: 2, unsignedCheckpoints: 0 });
    const after = await store.db
      .selectFrom('audit_events')
      .select(['chain_index', 'hash_form'])
      .where('chain', '=', name)
      .orderBy('chain_index')
      .execute();
    expect(after.map((r) => r.hash_form)).toEqual([1, 1, 1, 2]);
    const checkpoints = await store.db
      .selectFrom('audit_checkpoints')
      .select(['form', 'prev_hash'])
      .orderBy('seq')
      .execute();
    expect(checkpoints).toEqual([
      { form: 1, prev_hash: null },
      { form: 2, prev_hash: checkpointHashOf({ ...checkpoint, form: 1, prevHash: null }) },
    ]);

    // The newest row rewritten in the first form, its hash recomputed (which leaves sealed_at
    // uncovered), is a break: its hash is not the one the checkpoint signed.
    const [newest] = await auditChainRepository(store.db)
      .chainRows(name)
      .then((rows) => rows.slice(-1));
    await store.db
      .updateTable('audit_events')
      .set({
        hash_form: 1,
        row_hash: rowHashOf(
          newest!.prevHash!,
          { ...newest!, chain: name, chainIndex: 4, sealedAt: newest!.sealedAt! },
          1,
        ),
      })
      .where('id', '=', newest!.id)
      .execute();
    expect((await auditChain.verify()).broken).toMatchObject({ chain: name, index: 4 });
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
