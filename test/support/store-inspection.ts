// Looks behind the API of a test app: a referral's state as its sender sees it, audit rows, the row
// of an API key, and a dump of every stored value, so tests can prove what a request did (or did not)
// leave in the store.
import { expect } from 'vitest';
import { sql } from 'kysely';
import type { LightMyRequestResponse } from 'fastify';
import { hashApiKey } from '../../src/services/api-key.service.ts';
import { REQUESTER } from './referral-routes.ts';
import type { TestApp, TestParty } from './test-app.ts';

/** The database ID of a party's API key, found the way the server finds it: by the key's hash. */
export async function apiKeyIdOf(t: TestApp, party: TestParty): Promise<string> {
  const row = await t.ctx.db
    .selectFrom('api_keys')
    .select('id')
    .where('secret_hash', '=', hashApiKey(party.key))
    .executeTakeFirstOrThrow();
  return row.id;
}

export interface ReferralState {
  readonly version: number;
  readonly status: string;
  readonly clinicalInfo: unknown;
  readonly notes: number;
  readonly timeline: number;
  readonly appointments: number;
}

/** The referral as its sender reads it through the API (each read adds one audit row). */
export async function senderView(t: TestApp, id: string): Promise<Record<string, unknown>> {
  const query = new URLSearchParams({ ...t.sender.institution, requesterIdentifier: REQUESTER });
  const res = await t.request(t.sender, {
    method: 'GET',
    url: `/api/v1/referrals/${id}?${query.toString()}`,
  });
  expect(res.statusCode, res.body).toBe(200);
  return res.json();
}

/** What a change to the referral would alter: version, status, content and child counts. */
export async function stateOf(t: TestApp, id: string): Promise<ReferralState> {
  const view = await senderView(t, id);
  return {
    version: view.version as number,
    status: view.status as string,
    clinicalInfo: view.clinicalInfo,
    notes: (view.notes as unknown[]).length,
    timeline: (view.timelineEvents as unknown[]).length,
    appointments: (view.appointments as unknown[]).length,
  };
}

/** Whether the row exists at all, including soft-deleted ones (a DELETE that must not have happened). */
export async function isSoftDeleted(t: TestApp, id: string): Promise<boolean> {
  const row = await t.ctx.db
    .selectFrom('referrals')
    .select('deleted_at')
    .where('id', '=', id)
    .executeTakeFirstOrThrow();
  return row.deleted_at !== null;
}

export interface AuditRow {
  readonly request_id: string;
  readonly api_key_id: string | null;
  readonly system: string | null;
  readonly institution_id_type: string | null;
  readonly institution_id: string | null;
  readonly requester_identifier: string | null;
  readonly action: string;
  readonly outcome: 'success' | 'denied';
  readonly referral_ids: string[];
}

/** The audit rows a request wrote, oldest first. */
export async function auditRowsOf(t: TestApp, res: LightMyRequestResponse): Promise<AuditRow[]> {
  const requestId = res.headers['x-request-id'];
  expect(typeof requestId).toBe('string');
  const rows = await t.ctx.db
    .selectFrom('audit_events')
    .select([
      'request_id',
      'api_key_id',
      'system',
      'institution_id_type',
      'institution_id',
      'requester_identifier',
      'action',
      'outcome',
      'referral_ids',
    ])
    .where('request_id', '=', String(requestId))
    .orderBy('seq')
    .execute();
  return rows.map((r) => ({ ...r, referral_ids: [...r.referral_ids] }));
}

export async function countRows(
  t: TestApp,
  table: 'referrals' | 'notes' | 'audit_events' | 'attachments' | 'attachment_contents',
): Promise<number> {
  const row = await t.ctx.db
    .selectFrom(table)
    .select(sql<number>`count(*)::int`.as('n'))
    .executeTakeFirstOrThrow();
  return row.n;
}

/**
 * Every value of every column of every table in the public schema, cast to text: one entry per
 * non-null cell, labelled with where it came from.
 */
export async function dumpStore(t: TestApp): Promise<string[]> {
  const columns = await sql<{ table_name: string; column_name: string }>`
    select c.table_name, c.column_name
    from information_schema.columns c
    join information_schema.tables tb
      on tb.table_schema = c.table_schema and tb.table_name = c.table_name
    where c.table_schema = 'public' and tb.table_type = 'BASE TABLE'
    order by c.table_name, c.ordinal_position`.execute(t.ctx.db);
  const byTable = new Map<string, string[]>();
  for (const { table_name, column_name } of columns.rows) {
    byTable.set(table_name, [...(byTable.get(table_name) ?? []), column_name]);
  }
  const cells: string[] = [];
  for (const [table, names] of byTable) {
    const rows = await sql<Record<string, string | null>>`
      select ${sql.join(names.map((n) => sql`${sql.ref(n)}::text as ${sql.ref(n)}`))}
      from ${sql.table(table)}`.execute(t.ctx.db);
    for (const row of rows.rows) {
      for (const [column, value] of Object.entries(row)) {
        if (value !== null) cells.push(`${table}.${column}=${value}`);
      }
    }
  }
  return cells;
}

/** The one-time token at the end of a link URL. */
export function tokenOf(url: string): string {
  const match = /\/l\/([A-Za-z0-9_-]{43})$/.exec(url);
  expect(match, `a one-time link URL: ${url}`).not.toBeNull();
  return match![1]!;
}
