// The list of an institution's referrals: each shape of filter compiled once, the two sides read
// separately in the order of their own indexes and merged, the total and (for an audited list) the
// audit row in the same statement.
import { sql, type ExpressionBuilder } from 'kysely';
import type { InstitutionRef } from '../../domain/access.ts';
import { ARCHIVED, SENDER_ACTS_IN } from '../../domain/lifecycle.ts';
import { statusesOf } from '../../domain/statuses.ts';
import { auditInsertFromJson, auditRow, type AuditEvent } from '../audit/audit.repository.ts';
import { compiledOnce, type CompiledOnce } from '../compiled-once.ts';
import type { DataKeys } from '../data-keys/data-keys.repository.ts';
import type { Executor } from '../executor.ts';
import type { Database, ReferralsTable } from '../schema.ts';
import { baseQuery, sideOf } from './reads.ts';
import {
  opened,
  READ_COLUMNS,
  toRecord,
  type ListFilter,
  type ListSort,
  type ReferralRecord,
  type Row,
} from './rows.ts';

/**
 * The list's orders, newest first, each matching its index. `updated_at` and `created_at` are never
 * null, so a plain DESC (which puts nulls first) is their index's order; `submitted_at` is null for
 * drafts, which go last, as its index has them. An ORDER BY that differs from the index in its nulls
 * (DESC NULLS LAST on a DESC index) cannot use it, and sorts every matching row instead.
 */
const SORTS = {
  updatedAt: { column: 'updated_at', nullsLast: false },
  submittedAt: { column: 'submitted_at', nullsLast: true },
  createdAt: { column: 'created_at', nullsLast: false },
} as const;

/** ORDER BY `column` (the sort's column, or a copy of it) newest first, in the sort's order. */
function newestFirst(sort: ListSort, column = `r.${SORTS[sort].column}`) {
  const ref = sql.ref(column);
  return SORTS[sort].nullsLast ? sql`${ref} desc nulls last` : sql`${ref} desc`;
}

/** What decides the text of a list statement; the institution, patient and paging are its values. */
function listShape(filter: ListFilter): string {
  return JSON.stringify([
    filter.side ?? 'both',
    [...filter.coreStatuses].sort(),
    [...(filter.priorities ?? [])].sort(),
    filter.patientUin !== undefined,
    filter.sort,
  ]);
}

/**
 * The conditions of one side of a list, on placeholders for the institution and the patient. The
 * statuses are literals: they are part of the shape, drawn from a fixed set.
 */
function sideMatches(
  filter: ListFilter,
  side: 'sender' | 'provider',
  inst: InstitutionRef,
  patientUin: string | undefined,
) {
  return (eb: ExpressionBuilder<Database & { r: ReferralsTable }, 'r'>) => {
    // An archived referral is listed nowhere: its clinical content is gone (docs/api.md, "Archived
    // referrals"), and no filter brings it back.
    const conditions = [sideOf(eb, side, inst), eb('r.status', '<>', sql.lit(ARCHIVED))];
    // When both sides are listed, the provider side leaves out what the sender side has.
    if (side === 'provider' && filter.side === undefined) conditions.push(eb.not(sideOf(eb, 'sender', inst)));
    if (filter.coreStatuses.length > 0) {
      conditions.push(
        eb.or(
          filter.coreStatuses.map((core) =>
            core === 'sender-action-required'
              ? // "Requires action from the user": only the sender is asked to act, to answer the
                // provider's request or to read its outcome.
                eb.and([
                  eb(
                    'r.status',
                    'in',
                    SENDER_ACTS_IN.map((status) => sql.lit(status)),
                  ),
                  sideOf(eb, 'sender', inst),
                ])
              : eb(
                  'r.status',
                  'in',
                  statusesOf(core).map((status) => sql.lit(status)),
                ),
          ),
        ),
      );
    }
    // Priority codes are literals like the statuses: part of the shape, each a code the API checked
    // against PRIORITY_CODE_PATTERN, and a catalog has few of them.
    const priorities = filter.priorities ?? [];
    if (priorities.length > 0)
      conditions.push(
        eb(
          'r.priority',
          'in',
          priorities.map((code) => sql.lit(code)),
        ),
      );
    // The patient is found by the blind index of the UIN: the UIN itself is sealed.
    if (patientUin !== undefined) conditions.push(eb('r.patient_uin_index', '=', patientUin));
    return eb.and(conditions);
  };
}

type ListStatements = {
  /** Arguments: idType, id, [the patient UIN's blind index], reach, limit, offset. Each row carries the total. */
  readonly page: CompiledOnce<string[], Row & { total: number | string }>;
  /**
   * `page` with the list's audit row written in the same statement. Arguments: those of `page`, then
   * the audit row as JSON and the page size (the audit names the page's referrals, not the one past
   * it that tells whether there is a next page).
   */
  readonly auditedPage: CompiledOnce<string[], Row & { total: number | string }>;
  /** Arguments: idType, id, [the patient UIN's blind index]. */
  readonly count: CompiledOnce<string[], { total: number | string }>;
};

const LIST_STATEMENTS = new Map<string, ListStatements>();

/** The page and count statements of a filter's shape, compiled the first time the shape is used. */
function listStatements(filter: ListFilter): ListStatements {
  const shape = listShape(filter);
  let statements = LIST_STATEMENTS.get(shape);
  if (statements !== undefined) return statements;
  const withUin = filter.patientUin !== undefined;
  const sides = filter.side === undefined ? (['sender', 'provider'] as const) : [filter.side];
  const { column } = SORTS[filter.sort];
  const counted = (db: Executor, inst: InstitutionRef, uin: string | undefined) =>
    sql<number>`(${sql.join(
      sides.map(
        (side) =>
          sql`(${db
            .selectFrom('referrals as r')
            .select(sql<number>`count(*)`.as('n'))
            .where('r.deleted_at', 'is', null)
            .where(sideMatches(filter, side, inst, uin))})`,
      ),
      sql` + `,
    )})::int`;
  const args = (placeholders: string[]) => {
    const [idType = '', id = '', ...rest] = placeholders;
    return {
      inst: { idType, id },
      uin: withUin ? rest[0] : undefined,
      paging: withUin ? rest.slice(1) : rest,
    };
  };
  const pageQuery = (db: Executor, ...placeholders: string[]) => {
    const { inst, uin, paging } = args(placeholders);
    const [reach = '', limit = '', offset = ''] = paging;
    const keys = sides
      .map((side) =>
        db
          .selectFrom(
            db
              .selectFrom('referrals as r')
              .select(['r.id', sql.ref<Date | null>(`r.${column}`).as('sort_key')])
              .where('r.deleted_at', 'is', null)
              .where(sideMatches(filter, side, inst, uin))
              .orderBy(newestFirst(filter.sort))
              .orderBy('r.id', 'desc')
              .limit(sql<number>`${reach}::bigint`)
              .as(side),
          )
          .select([`${side}.id`, `${side}.sort_key`]),
      )
      .reduce((all, next) => all.unionAll(next));
    const pageIds = db
      .selectFrom(keys.as('k'))
      .select('k.id')
      .orderBy(newestFirst(filter.sort, 'k.sort_key'))
      .orderBy('k.id', 'desc')
      .limit(sql<number>`${limit}::bigint`)
      .offset(sql<number>`${offset}::bigint`);
    return baseQuery(db)
      .select(counted(db, inst, uin).as('total'))
      .where('r.id', 'in', pageIds)
      .orderBy(newestFirst(filter.sort))
      .orderBy('r.id', 'desc');
  };
  const pageArity = withUin ? 6 : 5;
  statements = {
    page: compiledOnce(pageArity, pageQuery),
    auditedPage: compiledOnce(pageArity + 2, (db, ...placeholders: string[]) => ({
      compile: () => {
        const audit = placeholders[pageArity] ?? '';
        const pageSize = placeholders[pageArity + 1] ?? '';
        return sql<
          Row & { total: number | string }
        >`with page as (${pageQuery(db, ...placeholders.slice(0, pageArity))}),
          audit as (${auditInsertFromJson(
            audit,
            sql`array(select p.id from page p
                      order by ${newestFirst(filter.sort, `p.${column}`)}, p.id desc
                      limit ${pageSize}::bigint)`,
          )})
          select ${sql.join([...READ_COLUMNS, 'total'].map((c) => sql.ref(`page.${c}`)))}
          from page
          order by ${newestFirst(filter.sort, `page.${column}`)}, page.id desc`.compile(db);
      },
    })),
    count: compiledOnce(withUin ? 3 : 2, (db, ...placeholders: string[]) => {
      const { inst, uin } = args(placeholders);
      return db.selectNoFrom(counted(db, inst, uin).as('total'));
    }),
  };
  LIST_STATEMENTS.set(shape, statements);
  return statements;
}

/**
 * A page of the referrals an institution sends or receives, and how many there are. The two sides
 * are read separately, each in the order of its own index and only as far as the page reaches,
 * then merged; only the page's rows are joined with the catalog. (One query with `sender OR
 * provider` cannot use either index: it reads and sorts every referral the institution has.) The
 * total comes in the same statement, and each shape of filter is compiled once (see listStatements).
 * With `audit`, the list's audit row, naming the page's referrals, is written by the same statement.
 */
export async function listPage(
  db: Executor,
  keys: DataKeys,
  filter: ListFilter,
  audit?: AuditEvent,
): Promise<{ records: ReferralRecord[]; total: number; hasNext: boolean }> {
  const statements = listStatements(filter);
  const cipher = await keys.cipher(db);
  const args = [
    filter.institution.idType,
    filter.institution.id,
    ...(filter.patientUin === undefined ? [] : [cipher.blindIndex('patient-uin', filter.patientUin)]),
    String(filter.offset + filter.pageSize + 1),
    String(filter.pageSize + 1),
    String(filter.offset),
  ];
  const rows =
    audit === undefined
      ? await statements.page(db, ...args)
      : await statements.auditedPage(db, ...args, JSON.stringify(auditRow(audit)), String(filter.pageSize));
  let total = rows[0]?.total;
  if (total === undefined) {
    // An empty page: from the start there is nothing at all; further on, count what there is.
    total = filter.offset === 0 ? 0 : ((await statements.count(db, ...args.slice(0, -3)))[0]?.total ?? 0);
  }
  const page = rows.slice(0, filter.pageSize);
  return {
    records: await keys.reading(db, (c) => page.map((row) => toRecord(opened(row, c)))),
    total: Number(total),
    hasNext: rows.length > filter.pageSize,
  };
}
