// The ledger search answers from its indexes: on PostgreSQL only (the one test that needs a million
// rows), 1,000,000 forward attempts and 200,000 webhook deliveries over the same days are seeded in
// SQL (one INSERT … SELECT generate_series each, then one ANALYZE), and the plan of a page of each
// search, with and without its filters and after a cursor, reads the ledger's partition by an index
// scan: no Seq Scan on the ledger.
import { CompiledQuery, sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { forwardsPageQuery, webhooksPageQuery } from '../../src/db/ledger-search.repository.ts';
import type { LedgerFilter } from '../../src/domain/ledger-search.ts';
import { createTestApp, type TestApp } from '../support/test-app.ts';
import { createDraft } from '../support/scenarios.ts';

const FORWARDS = 1_000_000;
const DELIVERIES = 200_000;

describe('the ledger search plan on postgres', () => {
  let t: TestApp;
  let referralId: string;
  beforeAll(async () => {
    t = await createTestApp('postgres');
    referralId = (await createDraft(t)).id;
    const sub = await t.ctx.db
      .insertInto('webhook_subscriptions')
      .values({
        id: '01900000-0000-7000-8000-000000000001',
        institution_id_type: 'hci',
        institution_id: 'S1234A',
        url: 'https://receiver.example.org/hook',
        event_types: null,
        description: null,
        secret: 'whsec_x',
        created_at: new Date(),
        updated_at: new Date(),
      })
      .returning('id')
      .executeTakeFirstOrThrow();
    // One session seeds in SQL: without waiting for each commit's flush, with room to build the
    // indexes' entries, and without the per-row foreign key checks (the one referral exists). Ids rise
    // with time, as the service's UUIDv7 do, so each index is appended to rather than split at random.
    await t.ctx.db.connection().execute(async (db) => {
      await sql`set synchronous_commit = off`.execute(db);
      await sql`set maintenance_work_mem = '256MB'`.execute(db);
      await sql`set session_replication_role = replica`.execute(db);
      // A forward a second from 2026-01-01, about 11.5 days of them; a third of them failed.
      await sql`
        insert into ehr_submissions (id, referral_id, message_id, version, attempt, attempted_at,
          outcome, http_status, duration_ms, request_id)
        select lpad(to_hex(g), 32, '0')::uuid, ${referralId}::uuid, 'm', 2, 1,
          timestamptz '2026-01-01T00:00:00Z' + make_interval(secs => g),
          (array['delivered', 'retrying', 'failed'])[g % 3 + 1], 201, 5, 'seed'
        from generate_series(1, ${FORWARDS}::int) g
      `.execute(db);
      // A delivery every five seconds over the same days: enough rows that an index beats a scan.
      await sql`
        insert into webhook_attempts (id, subscription_id, event_id, event_type, attempt, attempted_at,
          outcome, http_status, duration_ms)
        select lpad(to_hex(g), 32, '0')::uuid, ${sub.id}::uuid, lpad(to_hex(g), 32, '0')::uuid,
          'referral.submitted', 1, timestamptz '2026-01-01T00:00:00Z' + make_interval(secs => g * 5),
          (array['delivered', 'retrying', 'failed'])[g % 3 + 1], 204, 3
        from generate_series(1, ${DELIVERIES}::int) g
      `.execute(db);
      await sql`set session_replication_role = origin`.execute(db);
      await sql`analyze ehr_submissions, webhook_attempts`.execute(db);
    });
  }, 600_000);
  afterAll(async () => {
    await t.close();
  });

  const plan = async (query: { compile(): { sql: string; parameters: readonly unknown[] } }) => {
    const compiled = query.compile();
    const { rows } = await t.ctx.db.executeQuery<{ 'QUERY PLAN': string }>(
      CompiledQuery.raw(`explain ${compiled.sql}`, [...compiled.parameters]),
    );
    return rows.map((r) => r['QUERY PLAN']).join('\n');
  };

  const day: LedgerFilter = {
    from: new Date('2026-01-05T00:00:00Z'),
    to: new Date('2026-01-06T00:00:00Z'),
  };
  const cursor = { at: '2026-01-05T06:00:00.000000Z', id: '01900000-0000-7000-8000-000000000000' };

  it.each([
    ['a day', day],
    ['a day of failures', { ...day, outcome: 'failed' }],
    ['a day of one status', { ...day, httpStatus: 201 }],
    ['a day of one referral', { ...day, referralId: '' }],
  ] as const)('reads %s of forwards from an index', async (_name, filter) => {
    const f = 'referralId' in filter ? { ...filter, referralId } : filter;
    for (const after of [undefined, cursor]) {
      const text = await plan(forwardsPageQuery(t.ctx.db, f, after, 50));
      expect(text).toMatch(/Index (Only )?Scan using ehr_submissions_\w+/);
      expect(text).not.toMatch(/Seq Scan on ehr_submissions/);
    }
  });

  it.each([
    ['a day', day],
    ['a day of failures', { ...day, outcome: 'failed' }],
    ['a day of one subscriber', { ...day, institution: { idType: 'hci', id: 'S1234A' } }],
  ] as const)('reads %s of webhook deliveries from an index', async (_name, filter) => {
    for (const after of [undefined, cursor]) {
      const text = await plan(webhooksPageQuery(t.ctx.db, filter, after, 50));
      expect(text).toMatch(/Index (Only )?Scan using webhook_attempts_\w+/);
      expect(text).not.toMatch(/Seq Scan on webhook_attempts/);
    }
  });
});
