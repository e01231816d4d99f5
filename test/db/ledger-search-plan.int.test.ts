// The ledger search answers from its indexes: on PostgreSQL only (the one test that needs a million
// rows), 1,000,000 ledger rows and as many webhook attempts are seeded in SQL (INSERT … SELECT
// generate_series, then ANALYZE), and the plan of a page of each search, with and without its filters
// and after a cursor, reads the ledger by an index scan: no Seq Scan on the ledger.
import { CompiledQuery, sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { forwardsPageQuery, webhooksPageQuery } from '../../src/db/ledger-search.repository.ts';
import type { LedgerFilter } from '../../src/domain/ledger-search.ts';
import { createTestApp, type TestApp } from '../support/test-app.ts';
import { createDraft } from '../support/scenarios.ts';

const ROWS = 1_000_000;

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
    // A row a second from 2026-01-01, about 11.5 days of them; a third of them failed.
    await sql`
      insert into ehr_submissions (id, referral_id, message_id, version, attempt, attempted_at, outcome,
        http_status, error_code, duration_ms, request_id)
      select gen_random_uuid(), ${referralId}::uuid, 'm', 2, 1,
        timestamptz '2026-01-01T00:00:00Z' + make_interval(secs => g),
        (array['delivered', 'retrying', 'failed'])[g % 3 + 1], 201, null, 5, 'seed'
      from generate_series(1, ${ROWS}::int) g
    `.execute(t.ctx.db);
    await sql`
      insert into webhook_attempts (id, subscription_id, event_id, event_type, attempt, attempted_at, outcome,
        http_status, duration_ms, error_code)
      select gen_random_uuid(), ${sub.id}::uuid, gen_random_uuid(), 'referral.submitted', 1,
        timestamptz '2026-01-01T00:00:00Z' + make_interval(secs => g),
        (array['delivered', 'retrying', 'failed'])[g % 3 + 1], 204, 3, null
      from generate_series(1, ${ROWS}::int) g
    `.execute(t.ctx.db);
    await sql`analyze ehr_submissions`.execute(t.ctx.db);
    await sql`analyze webhook_attempts`.execute(t.ctx.db);
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
