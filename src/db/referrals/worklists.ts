// The worklists (domain/worklists.ts): a page of one named list, in its order, with its total and its
// audit row in the same statement, and every list's count in one statement. Each list reads one side
// of the institution's referrals along that side's worklist index (migration 0024).
import { sql, type ExpressionBuilder } from 'kysely';
import type { InstitutionRef } from '../../domain/access.ts';
import { WORKLIST_NAMES, WORKLISTS, type WorklistName } from '../../domain/worklists.ts';
import { auditInsertFromJson, auditRow, type AuditEvent } from '../audit/audit.repository.ts';
import { compiledOnce, type CompiledOnce } from '../compiled-once.ts';
import type { DataKeys } from '../data-keys/data-keys.repository.ts';
import type { Executor } from '../executor.ts';
import type { Database, ReferralsTable } from '../schema.ts';
import { baseQuery, sideOf } from './reads.ts';
import { opened, READ_COLUMNS, toRecord, type ReferralRecord, type Row } from './rows.ts';

export interface WorklistFilter {
  readonly institution: InstitutionRef;
  readonly name: WorklistName;
  /** The time `overdue` is judged at. */
  readonly now: Date;
  readonly offset: number;
  readonly pageSize: number;
}

/**
 * The values a list's conditions take, in the order of their placeholders: the institution, and the
 * time for a list of overdue referrals (a statement's every placeholder must be one of its parameters).
 */
function conditionArgs(name: WorklistName, institution: InstitutionRef, now: Date): string[] {
  return [institution.idType, institution.id, ...(WORKLISTS[name].overdueOnly ? [now.toISOString()] : [])];
}

/** The referrals of the list `name`, on placeholders for `conditionArgs`. */
function inWorklist(name: WorklistName, [idType = '', id = '', now = '']: readonly string[]) {
  const list = WORKLISTS[name];
  return (eb: ExpressionBuilder<Database & { r: ReferralsTable }, 'r'>) =>
    eb.and([
      eb('r.deleted_at', 'is', null),
      sideOf(eb, list.side, { idType, id }),
      // Literals: each list's statuses are part of its statement's text, as the partial indexes need.
      eb(
        'r.status',
        'in',
        list.statuses.map((status) => sql.lit(status)),
      ),
      ...(list.overdueOnly ? [eb('r.triage_due_at', '<=', sql<Date>`${now}::timestamptz`)] : []),
    ]);
}

/** ORDER BY the list's order, on the table or CTE `from`. */
function listOrder(name: WorklistName, from: string) {
  const column = (c: string) => sql.ref(`${from}.${c}`);
  return WORKLISTS[name].order === 'due'
    ? sql`${column('triage_due_at')} asc nulls last, ${column('submitted_at')} asc, ${column('id')} asc`
    : sql`${column('updated_at')} desc, ${column('id')} desc`;
}

type PageRow = Row & { total: number | string };

const arityOf = (name: WorklistName) => (WORKLISTS[name].overdueOnly ? 3 : 2);

function pageQuery(db: Executor, name: WorklistName, placeholders: readonly string[]) {
  const arity = arityOf(name);
  const where = inWorklist(name, placeholders.slice(0, arity));
  const [limit, offset] = placeholders.slice(arity);
  const pageIds = db
    .selectFrom('referrals as r')
    .select('r.id')
    .where(where)
    .orderBy(listOrder(name, 'r'))
    .limit(sql<number>`${limit}::bigint`)
    .offset(sql<number>`${offset}::bigint`);
  const total = db
    .selectFrom('referrals as r')
    .select(sql<number>`count(*)::int`.as('n'))
    .where(where);
  return baseQuery(db)
    .select(sql<number>`(${total})`.as('total'))
    .where('r.id', 'in', pageIds)
    .orderBy(listOrder(name, 'r'));
}

/**
 * Arguments: `conditionArgs`, the limit and the offset; then the audit row as JSON and the page size
 * (the audit names the page's referrals, not the one past it that tells whether there is a next page).
 */
const PAGE_STATEMENTS = Object.fromEntries(
  WORKLIST_NAMES.map((name) => [
    name,
    compiledOnce(arityOf(name) + 4, (db, ...placeholders: string[]) => ({
      compile: () => {
        const [audit, pageSize] = placeholders.slice(-2);
        return sql<PageRow>`with page as (${pageQuery(db, name, placeholders.slice(0, -2))}),
          audit as (${auditInsertFromJson(
            audit ?? '',
            sql`array(select p.id from page p order by ${listOrder(name, 'p')} limit ${pageSize}::bigint)`,
          )})
          select ${sql.join([...READ_COLUMNS, 'total'].map((c) => sql.ref(`page.${c}`)))}
          from page
          order by ${listOrder(name, 'page')}`.compile(db);
      },
    })),
  ]),
) as Record<WorklistName, CompiledOnce<string[], PageRow>>;

/** Arguments: `conditionArgs`. */
const COUNT_STATEMENTS = Object.fromEntries(
  WORKLIST_NAMES.map((name) => [
    name,
    compiledOnce(arityOf(name), (db, ...placeholders: string[]) =>
      db
        .selectFrom('referrals as r')
        .select(sql<number>`count(*)::int`.as('total'))
        .where(inWorklist(name, placeholders)),
    ),
  ]),
) as Record<WorklistName, CompiledOnce<string[], { total: number | string }>>;

/**
 * A page of the worklist `filter.name`, and how many referrals it has, with the read's audit row
 * written by the same statement.
 */
export async function worklistPage(
  db: Executor,
  keys: DataKeys,
  filter: WorklistFilter,
  audit: AuditEvent,
): Promise<{ records: ReferralRecord[]; total: number; hasNext: boolean }> {
  const conditions = conditionArgs(filter.name, filter.institution, filter.now);
  const rows = await PAGE_STATEMENTS[filter.name](
    db,
    ...conditions,
    String(filter.pageSize + 1),
    String(filter.offset),
    JSON.stringify(auditRow(audit)),
    String(filter.pageSize),
  );
  let total = rows[0]?.total;
  if (total === undefined) {
    // An empty page: from the start there is nothing at all; further on, count what there is.
    total =
      filter.offset === 0 ? 0 : ((await COUNT_STATEMENTS[filter.name](db, ...conditions))[0]?.total ?? 0);
  }
  const page = rows.slice(0, filter.pageSize);
  return {
    records: await keys.reading(db, (c) => page.map((row) => toRecord(opened(row, c)))),
    total: Number(total),
    hasNext: rows.length > filter.pageSize,
  };
}

/**
 * Every worklist's count, in one statement with the read's audit row. Arguments: idType, id, now, the
 * audit row as JSON.
 */
const COUNTS = compiledOnce(4, (db, idType: string, id: string, now: string, audit: string) => ({
  compile: () =>
    sql<Record<string, number | string>>`with audit as (${auditInsertFromJson(audit, sql`array[]::uuid[]`)})
      select ${sql.join(
        WORKLIST_NAMES.map(
          (name) =>
            sql`(${db
              .selectFrom('referrals as r')
              .select(sql<number>`count(*)::int`.as('n'))
              .where(inWorklist(name, [idType, id, now]))}) as ${sql.id(name)}`,
        ),
      )}`.compile(db),
}));

/** How many referrals each worklist of the institution has at `now`, in the lists' order. */
export async function worklistCounts(
  db: Executor,
  institution: InstitutionRef,
  now: Date,
  audit: AuditEvent,
): Promise<{ name: WorklistName; total: number }[]> {
  const [row] = await COUNTS(
    db,
    institution.idType,
    institution.id,
    now.toISOString(),
    JSON.stringify(auditRow(audit)),
  );
  return WORKLIST_NAMES.map((name) => ({ name, total: Number(row?.[name] ?? 0) }));
}

/**
 * Referrals whose triage is past its due time at `now` and not yet said to be overdue, the earliest
 * due first, at most `limit`: the overdue sweep's work, read along its own index (migration 0024).
 */
export async function triageOverdueDue(db: Executor, now: Date, limit: number): Promise<string[]> {
  const rows = await db
    .selectFrom('referrals')
    .select('id')
    .where('status', '=', 'pending-acceptance')
    .where('triage_overdue_at', 'is', null)
    .where('deleted_at', 'is', null)
    .where('triage_due_at', '<=', now)
    .orderBy('triage_due_at')
    .limit(limit)
    .execute();
  return rows.map((r) => r.id);
}

/**
 * Records that the triage due at `dueAt` is overdue, once: false when it was recorded already, or
 * the referral has another due time now (it was submitted again).
 */
export async function markTriageOverdue(db: Executor, id: string, dueAt: Date, now: Date): Promise<boolean> {
  const result = await db
    .updateTable('referrals')
    .set({ triage_overdue_at: now })
    .where('id', '=', id)
    .where('triage_due_at', '=', dueAt)
    .where('triage_overdue_at', 'is', null)
    .executeTakeFirst();
  return result.numUpdatedRows === 1n;
}
