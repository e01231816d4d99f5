// Referrals and their timeline. Tenancy lives here: every read takes the caller's institution and
// sees only referrals it sends, or receives once they have left draft (contract §2). Writes are
// compare-and-set on `version`, so concurrent transitions cannot both win (contract §4).
import { sql, type ExpressionBuilder, type Insertable, type RawBuilder, type Selectable } from 'kysely';
import type { InstitutionRef } from '../domain/access.ts';
import { SENDER_ACTS_IN } from '../domain/lifecycle.ts';
import { ReferralNotFoundError } from '../errors.ts';
import type { InstitutionView, PatientView, ReferrerView } from '../domain/referral-view.ts';
import type { EhrForwardingState } from '../domain/referral-view.ts';
import { statusesOf, type CoreStatus, type OfferingCategory, type Status } from '../domain/statuses.ts';
import type { LinkAction } from '../domain/referral-view.ts';
import { auditInsertFromJson, auditRow, type AuditEvent } from './audit.repository.ts';
import type { OfferingRecord } from './catalog.repository.ts';
import { linkTokenRows, type NewLinkToken } from './links.repository.ts';
import {
  referralPartsColumns,
  toReferralParts,
  type ReferralParts,
  type ReferralPartsColumns,
} from './referral-children.repository.ts';
import { compiledOnce, type CompiledOnce } from './compiled-once.ts';
import { openColumns, sealColumns, SEALED_COLUMNS, type DataKeys } from './data-keys.repository.ts';
import type { FieldCipher } from '../domain/data-keys.ts';
import type { Executor } from './executor.ts';
import { providerSees } from './provider-visibility.ts';
import type { Database, ReferralsTable } from './schema.ts';

export interface ReferralRecord {
  readonly id: string;
  readonly version: number;
  readonly status: Status;
  readonly sender: InstitutionView;
  readonly senderSystem: string;
  readonly provider: InstitutionRef | null;
  readonly offering: OfferingRecord | null;
  readonly patient: PatientView;
  readonly referrer: ReferrerView;
  readonly clinicalInfo: string | null;
  readonly isUrgent: boolean;
  readonly ehr: {
    readonly state: EhrForwardingState;
    readonly attempts: number;
    readonly lastAttemptAt: Date | null;
    readonly sha256: string | null;
    readonly dueVersion: number | null;
    readonly forwardedVersion: number | null;
  };
  readonly createdAt: Date;
  readonly updatedAt: Date;
  readonly submittedAt: Date | null;
}

/** The editable content of a referral, as stored. */
export interface ReferralContent {
  readonly offeringId: string | null;
  readonly providerIdType: string | null;
  readonly providerId: string | null;
  readonly patientUin: string | null;
  readonly patientName: string | null;
  readonly patientDob: string | null;
  readonly patientGender: string | null;
  readonly patientNationality: string | null;
  readonly patientPhoneNumber: string | null;
  readonly patientResidentialStatus: string | null;
  readonly referrerId: string | null;
  readonly referrerIdType: string | null;
  readonly referrerName: string | null;
  readonly referrerEmail: string | null;
  readonly referrerContactNumber: string | null;
  readonly clinicalInfo: string | null;
  readonly isUrgent: boolean;
}

export interface NewReferral extends ReferralContent {
  readonly id: string;
  readonly sender: InstitutionRef;
  readonly senderSystem: string;
  readonly now: Date;
}

export interface ReferralPatch extends Partial<ReferralContent> {
  readonly status?: Status;
  readonly submittedAt?: Date | null;
  /** A forward to the EHR is now due for this version: ehrForwarding becomes queued, attempts 0. */
  readonly ehrDue?: number;
}

/** A one-time link a read may hand out, and the statuses in which it may (see readAudited). */
export interface CandidateLink {
  readonly token: NewLinkToken;
  readonly asSender: readonly Status[];
  readonly asOther: readonly Status[];
}

export interface ReferralWithParts {
  readonly record: ReferralRecord;
  readonly parts: ReferralParts;
}

/** A referral as one read saw it, with the row it was made from: the start of a change. */
export interface ReferralSnapshot extends ReferralWithParts {
  readonly row: ReferralRow;
}

export type ListSort = 'updatedAt' | 'submittedAt' | 'createdAt';

export interface ListFilter {
  readonly institution: InstitutionRef;
  readonly side?: 'sender' | 'provider';
  readonly coreStatuses: readonly CoreStatus[];
  readonly patientUin?: string;
  readonly sort: ListSort;
  readonly offset: number;
  readonly pageSize: number;
}

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

/** A referral's row as the reads select it; opaque outside this file. */
export type ReferralRow = Row;

type Row = Omit<Selectable<ReferralsTable>, 'patient_uin_index'> & {
  sender_name: string;
  o_name: string | null;
  o_category: string | null;
  o_description: string | null;
  o_specialty: string | null;
  o_ehr_code: string | null;
  o_system: string | null;
  o_cancellable: boolean | null;
  o_active: boolean | null;
  p_name: string | null;
};

/** A referral's row as read, its patient data opened. */
function opened<T extends Row>(row: T, cipher: FieldCipher): T {
  return openColumns('referrals', row, cipher);
}

/**
 * The columns of a write with their patient data sealed, and the patient's UIN's blind index. A write
 * of some of the patient data seals it with the rest of `current` (the row as read, opened).
 */
function sealed<T extends Partial<Row>>(id: string, columns: T, cipher: FieldCipher, current?: Row) {
  return sealColumns('referrals', { id }, columns, cipher, current) as T & {
    patient_uin_index?: string | null;
  };
}

function toRecord(row: Row): ReferralRecord {
  const offering: OfferingRecord | null =
    row.offering_id === null || row.o_name === null
      ? null
      : {
          id: row.offering_id,
          name: row.o_name,
          category: row.o_category as OfferingCategory,
          description: row.o_description ?? '',
          specialty: row.o_specialty ?? '',
          ehrCode: row.o_ehr_code ?? '',
          system: row.o_system ?? '',
          cancellable: row.o_cancellable ?? true,
          active: row.o_active ?? true,
          institution: {
            idType: row.provider_id_type ?? '',
            id: row.provider_id ?? '',
            name: row.p_name ?? '',
          },
        };
  return {
    id: row.id,
    version: row.version,
    status: row.status as Status,
    sender: { idType: row.sender_id_type, id: row.sender_id, name: row.sender_name },
    senderSystem: row.sender_system,
    provider:
      row.provider_id_type === null || row.provider_id === null
        ? null
        : { idType: row.provider_id_type, id: row.provider_id },
    offering,
    patient: {
      uin: row.patient_uin,
      name: row.patient_name,
      dob: row.patient_dob,
      gender: row.patient_gender as PatientView['gender'],
      nationality: row.patient_nationality,
      phoneNumber: row.patient_phone_number,
      residentialStatus: row.patient_residential_status as PatientView['residentialStatus'],
    },
    referrer: {
      id: row.referrer_id,
      idType: row.referrer_id_type,
      name: row.referrer_name,
      email: row.referrer_email,
      contactNumber: row.referrer_contact_number,
    },
    clinicalInfo: row.clinical_info,
    isUrgent: row.is_urgent,
    ehr: {
      state: row.ehr_state as EhrForwardingState,
      attempts: row.ehr_attempts,
      lastAttemptAt: row.ehr_last_attempt_at,
      sha256: row.ehr_sha256,
      dueVersion: row.ehr_due_version,
      forwardedVersion: row.ehr_forwarded_version,
    },
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    submittedAt: row.submitted_at,
  };
}

/**
 * Every column of a referral, named rather than `r.*`: the full read is kept prepared on each
 * connection (db/database.ts), and a prepared `r.*` would fail once a migration adds a column.
 */
const REFERRAL_COLUMNS = [
  'r.id',
  'r.version',
  'r.status',
  'r.sender_id_type',
  'r.sender_id',
  'r.sender_system',
  'r.provider_id_type',
  'r.provider_id',
  'r.offering_id',
  'r.patient_uin',
  'r.patient_name',
  'r.patient_dob',
  'r.patient_gender',
  'r.patient_nationality',
  'r.patient_phone_number',
  'r.patient_residential_status',
  'r.referrer_id',
  'r.referrer_id_type',
  'r.referrer_name',
  'r.referrer_email',
  'r.referrer_contact_number',
  'r.clinical_info',
  'r.personal_data',
  'r.is_urgent',
  'r.ehr_state',
  'r.ehr_attempts',
  'r.ehr_last_attempt_at',
  'r.ehr_sha256',
  'r.ehr_due_version',
  'r.ehr_forwarded_version',
  'r.created_at',
  'r.updated_at',
  'r.submitted_at',
  'r.deleted_at',
] as const;

function sideOf(
  eb: ExpressionBuilder<Database & { r: ReferralsTable }, 'r'>,
  side: 'sender' | 'provider',
  inst: InstitutionRef,
) {
  return side === 'sender'
    ? eb.and([eb('r.sender_id_type', '=', inst.idType), eb('r.sender_id', '=', inst.id)])
    : eb.and([
        eb('r.provider_id_type', '=', inst.idType),
        eb('r.provider_id', '=', inst.id),
        providerSees('r'),
      ]);
}

/** A referral's row with its sender's, offering's and provider's names, as every read selects it. */
function baseQuery(db: Executor) {
  return db
    .selectFrom('referrals as r')
    .innerJoin('institutions as s', (j) =>
      j.onRef('s.id_type', '=', 'r.sender_id_type').onRef('s.id', '=', 'r.sender_id'),
    )
    .leftJoin('offerings as o', 'o.id', 'r.offering_id')
    .leftJoin('institutions as p', (j) =>
      j.onRef('p.id_type', '=', 'r.provider_id_type').onRef('p.id', '=', 'r.provider_id'),
    )
    .select(REFERRAL_COLUMNS)
    .select([
      's.name as sender_name',
      'o.name as o_name',
      'o.category as o_category',
      'o.description as o_description',
      'o.specialty as o_specialty',
      'o.ehr_code as o_ehr_code',
      'o.system as o_system',
      'o.cancellable as o_cancellable',
      'o.active as o_active',
      'p.name as p_name',
    ])
    .where('r.deleted_at', 'is', null);
}

/**
 * Whether `inst` may see the referral `r` (on `side`, or on either): the tenancy of every read, and of
 * the access report (access-report.repository.ts), which lists what was done to referrals it may see.
 */
export function visibleTo(inst: InstitutionRef, side?: 'sender' | 'provider') {
  return (eb: ExpressionBuilder<Database & { r: ReferralsTable }, 'r'>) =>
    side === undefined
      ? eb.or([sideOf(eb, 'sender', inst), sideOf(eb, 'provider', inst)])
      : sideOf(eb, side, inst);
}

// The reads by key run on every request and every forward: compiled once (compiled-once.ts).
const readVisible = compiledOnce(3, (db, id: string, idType: string, institutionId: string) =>
  baseQuery(db)
    .where('r.id', '=', id)
    .where(visibleTo({ idType, id: institutionId })),
);
const readForSystem = compiledOnce(1, (db, id: string) => baseQuery(db).where('r.id', '=', id));
function visibleWithParts(db: Executor, id: string, idType: string, institutionId: string) {
  return baseQuery(db)
    .select(referralPartsColumns(sql.ref('r.id')))
    .where('r.id', '=', id)
    .where(visibleTo({ idType, id: institutionId }));
}
const readVisibleWithParts = compiledOnce(3, visibleWithParts);

/** The columns `baseQuery` selects, by name (a prepared statement must not select `*`). */
const READ_COLUMNS = [
  ...REFERRAL_COLUMNS.map((column) => column.slice('r.'.length)),
  'sender_name',
  'o_name',
  'o_category',
  'o_description',
  'o_specialty',
  'o_ehr_code',
  'o_system',
  'o_cancellable',
  'o_active',
  'p_name',
];

/** The columns of a full read (`referralPartsColumns` added to `baseQuery`), by name. */
const FULL_READ_COLUMNS = [...READ_COLUMNS, 'appointments', 'notes', 'outcome', 'timelineEvents'];

/**
 * A full read with what it writes, in one statement: the referral (if the institution may see it),
 * its audit row, and the one-time links the caller may use in the referral's status. `audit` is the
 * audit row as JSON (its referral is the one read); `links` are candidate link rows as JSON, one per
 * action, each with the statuses in which the sender (`as_sender`) or another party (`as_other`) gets
 * it. The statement returns the actions it stored links for. Nothing is written when the referral is
 * not found.
 */
const readVisibleAudited = compiledOnce(
  5,
  (db, id: string, idType: string, institutionId: string, audit: string, links: string) => ({
    compile: () =>
      sql<
        Row & ReferralPartsColumns & { minted: string[] }
      >`with r as (${visibleWithParts(db, id, idType, institutionId)}),
        audit as (${auditInsertFromJson(audit, sql`array[r.id]`, ['r'])}),
        minted as (
          insert into link_tokens (id, token_hash, referral_id, action, institution_id_type, institution_id,
            requester_identifier, api_key_id, created_at, expires_at, used_at)
          select l.id, l.token_hash, r.id, l.action, l.institution_id_type, l.institution_id,
            l.requester_identifier, l.api_key_id, l.created_at, l.expires_at, null
          from json_to_recordset(${links}::json) as l(id uuid, token_hash text, action text,
            institution_id_type text, institution_id text, requester_identifier text, api_key_id uuid,
            created_at timestamptz, expires_at timestamptz, as_sender text[], as_other text[])
          cross join r
          where r.status = any(case when r.sender_id_type = ${idType} and r.sender_id = ${institutionId}
            then l.as_sender else l.as_other end)
          returning action)
        select ${sql.join(FULL_READ_COLUMNS.map((column) => sql.id(column)))},
          array(select action from minted) as minted
        from r`.compile(db),
  }),
);
const readForSystemWithParts = compiledOnce(1, (db, id: string) =>
  baseQuery(db)
    .select(referralPartsColumns(sql.ref('r.id')))
    .where('r.id', '=', id),
);

/** What decides the text of a list statement; the institution, patient and paging are its values. */
function listShape(filter: ListFilter): string {
  return JSON.stringify([
    filter.side ?? 'both',
    [...filter.coreStatuses].sort(),
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
    const conditions = [sideOf(eb, side, inst)];
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

export function referralRepository(db: Executor, keys: DataKeys) {
  const record = (row: Row | undefined) => row && keys.reading(db, (cipher) => toRecord(opened(row, cipher)));
  return {
    /** The referral if `institution` may see it; undefined otherwise (the caller answers 404). */
    async findVisible(id: string, institution: InstitutionRef): Promise<ReferralRecord | undefined> {
      const [row] = await readVisible(db, id, institution.idType, institution.id);
      return record(row);
    },

    /** The referral if `institution` may see it; 404 referral_not_found otherwise. */
    async getVisible(id: string, institution: InstitutionRef): Promise<ReferralRecord> {
      const record = await this.findVisible(id, institution);
      if (!record) throw new ReferralNotFoundError(id);
      return record;
    },

    /** The referral without a tenancy check: for workers acting for the system, never for callers. */
    async findForSystem(id: string): Promise<ReferralRecord | undefined> {
      const [row] = await readForSystem(db, id);
      return record(row);
    },

    /**
     * `findVisible` with the referral's appointments, notes and timeline, read in the same statement
     * (a full read needs them all).
     */
    async findVisibleWithParts(
      id: string,
      institution: InstitutionRef,
    ): Promise<ReferralSnapshot | undefined> {
      const [stored] = await readVisibleWithParts(db, id, institution.idType, institution.id);
      return (
        stored &&
        keys.reading(db, (cipher) => {
          const row = opened(stored, cipher);
          return { record: toRecord(row), parts: toReferralParts(row, cipher), row };
        })
      );
    },

    /**
     * `findVisibleWithParts` with its audit row and one-time links written in the same statement (see
     * readVisibleAudited), so that they are stored before anything read is handed out, in one round
     * trip. Returns the actions whose links were stored.
     */
    async readAudited(
      id: string,
      institution: InstitutionRef,
      audit: AuditEvent,
      links: readonly CandidateLink[],
    ): Promise<(ReferralWithParts & { readonly linked: readonly LinkAction[] }) | undefined> {
      const [row] = await readVisibleAudited(
        db,
        id,
        institution.idType,
        institution.id,
        JSON.stringify(auditRow(audit)),
        JSON.stringify(
          links.map(({ token, asSender, asOther }) => ({
            ...linkTokenRows([token])[0],
            as_sender: asSender,
            as_other: asOther,
          })),
        ),
      );
      return (
        row &&
        keys.reading(db, (cipher) => ({
          record: toRecord(opened(row, cipher)),
          parts: toReferralParts(row, cipher),
          linked: row.minted as LinkAction[],
        }))
      );
    },

    /** `findForSystem` with the referral's parts, in one statement (the forwarder renders from them). */
    async findForSystemWithParts(id: string): Promise<ReferralWithParts | undefined> {
      const [row] = await readForSystemWithParts(db, id);
      return (
        row &&
        keys.reading(db, (cipher) => ({
          record: toRecord(opened(row, cipher)),
          parts: toReferralParts(row, cipher),
        }))
      );
    },

    /** Who sent the referral (it never changes), deleted or not: one indexed row, two columns. */
    async senderOf(id: string): Promise<InstitutionRef | undefined> {
      const row = await db
        .selectFrom('referrals')
        .select(['sender_id_type', 'sender_id'])
        .where('id', '=', id)
        .executeTakeFirst();
      return row && { idType: row.sender_id_type, id: row.sender_id };
    },

    /** Locks the referral's row for the rest of the transaction, then reads it (system work only). */
    async lockForSystem(id: string): Promise<ReferralRecord | undefined> {
      await db.selectFrom('referrals').select('id').where('id', '=', id).forUpdate().executeTakeFirst();
      return this.findForSystem(id);
    },

    /**
     * A page of the referrals an institution sends or receives, and how many there are. The two sides
     * are read separately, each in the order of its own index and only as far as the page reaches,
     * then merged; only the page's rows are joined with the catalog. (One query with `sender OR
     * provider` cannot use either index: it reads and sorts every referral the institution has.) The
     * total comes in the same statement, and each shape of filter is compiled once (see listStatement).
     * With `audit`, the list's audit row, naming the page's referrals, is written by the same statement.
     */
    async list(
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
          : await statements.auditedPage(
              db,
              ...args,
              JSON.stringify(auditRow(audit)),
              String(filter.pageSize),
            );
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
    },

    async insert(referral: NewReferral): Promise<void> {
      await db
        .insertInto('referrals')
        .values(newReferralRow(referral, await keys.cipher(db)))
        .execute();
    },

    /**
     * Applies `patch` and increments `version` only if the row is still at `expectedVersion`.
     * Returns false when another transaction got there first; the caller decides again.
     */
    async compareAndSet(
      id: string,
      expectedVersion: number,
      patch: ReferralPatch,
      now: Date,
    ): Promise<boolean> {
      const columns = patchColumns(patch);
      let current: Row | undefined;
      if (SEALED_COLUMNS.referrals.columns.some((column) => column in columns)) {
        // The patient data is sealed as one value: the rest of it comes from the row at that version.
        const [stored] = await readForSystem(db, id);
        if (stored === undefined || stored.version !== expectedVersion) return false;
        current = await keys.reading(db, (cipher) => opened(stored, cipher));
      }
      const result = await compareAndSetQuery(
        db,
        id,
        expectedVersion,
        sealed(id, columns, await keys.cipher(db), current),
        now,
      ).executeTakeFirst();
      return result.numUpdatedRows === 1n;
    },

    /** Soft-deletes: the row stays for the audit trail but is never visible again. */
    async softDelete(id: string, expectedVersion: number, now: Date): Promise<boolean> {
      const result = await softDeleteQuery(db, id, expectedVersion, now).executeTakeFirst();
      return result.numUpdatedRows === 1n;
    },
  };
}

/** The columns `patch` sets, besides `version` and `updated_at`; those it does not name are left out. */
function patchColumns(patch: ReferralPatch) {
  const columns = {
    ...contentColumns(patch),
    status: patch.status,
    submitted_at: patch.submittedAt,
    ...(patch.ehrDue === undefined
      ? {}
      : { ehr_state: 'queued', ehr_due_version: patch.ehrDue, ehr_attempts: 0 }),
  };
  return Object.fromEntries(Object.entries(columns).filter(([, value]) => value !== undefined)) as Partial<
    Selectable<ReferralsTable>
  >;
}

/**
 * The UPDATE that sets `columns` and increments `version` only if the row is still at
 * `expectedVersion` (and `guard` holds): no row when another write got there first.
 */
function versionedUpdate(
  db: Executor,
  id: string,
  expectedVersion: number,
  columns: Partial<Selectable<ReferralsTable>>,
  now: Date,
  guard: RawBuilder<boolean> = sql<boolean>`true`,
) {
  return db
    .updateTable('referrals')
    .set((eb) => ({ ...columns, version: eb('version', '+', 1), updated_at: now }))
    .where('id', '=', id)
    .where('version', '=', expectedVersion)
    .where('deleted_at', 'is', null)
    .where(guard);
}

/** The compare-and-set of a patch's columns, sealed. */
function compareAndSetQuery(
  db: Executor,
  id: string,
  expectedVersion: number,
  columns: Partial<Selectable<ReferralsTable>>,
  now: Date,
  guard?: RawBuilder<boolean>,
) {
  return versionedUpdate(db, id, expectedVersion, columns, now, guard);
}

/** The soft delete: the row stays for the audit trail but is never visible again. */
function softDeleteQuery(
  db: Executor,
  id: string,
  expectedVersion: number,
  now: Date,
  guard?: RawBuilder<boolean>,
) {
  return versionedUpdate(db, id, expectedVersion, { deleted_at: now }, now, guard);
}

/**
 * The writes of a change on a referral, each a statement for a common table expression of the change's
 * statement (db/change-log.repository.ts) that returns `returning`, with the record the referral is
 * after it. The record is made from the row the read saw by the same columns the statement sets, so it
 * is exactly what a read after the statement would return.
 */
export const referralWrites = {
  /** Inserts a new draft. */
  insert(
    db: Executor,
    cipher: FieldCipher,
    referral: NewReferral,
    returning: readonly (keyof ReferralsTable)[],
    names: NewDraftNames,
  ) {
    const row = plainReferralRow(referral);
    return {
      query: () =>
        db
          .insertInto('referrals')
          .values(sealed(referral.id, row, cipher))
          .returning(returning),
      after: toRecord({ ...(row as Row), ...offeringColumns(names.offering), sender_name: names.sender }),
    };
  },

  /** The compare-and-set of `patch` on the referral `before` saw; `offering` is the one `patch` names. */
  compareAndSet(
    db: Executor,
    cipher: FieldCipher,
    before: ReferralSnapshot,
    patch: ReferralPatch,
    now: Date,
    returning: readonly (keyof ReferralsTable)[],
    offering?: OfferingRecord | null,
  ) {
    const row: Row = {
      ...before.row,
      ...patchColumns(patch),
      ...(patch.offeringId === undefined ? {} : offeringColumns(offering ?? null)),
      version: before.row.version + 1,
      updated_at: now,
    };
    return {
      query: (guard: RawBuilder<boolean>) =>
        compareAndSetQuery(
          db,
          before.record.id,
          before.record.version,
          sealed(before.record.id, patchColumns(patch), cipher, before.row),
          now,
          guard,
        ).returning(returning),
      after: toRecord(row),
    };
  },

  /** Soft-deletes the referral `before` saw, if it is still at its version. */
  softDelete(
    db: Executor,
    before: ReferralSnapshot,
    now: Date,
    returning: readonly (keyof ReferralsTable)[],
  ) {
    return (guard: RawBuilder<boolean>) =>
      softDeleteQuery(db, before.record.id, before.record.version, now, guard).returning(returning);
  },
};

/** What a new draft's record names besides its own columns. */
export interface NewDraftNames {
  readonly sender: string;
  readonly offering: OfferingRecord | null;
}

/** The catalog columns a read joins for `offering` (and its provider). */
function offeringColumns(offering: OfferingRecord | null) {
  return {
    o_name: offering?.name ?? null,
    o_category: offering?.category ?? null,
    o_description: offering?.description ?? null,
    o_specialty: offering?.specialty ?? null,
    o_ehr_code: offering?.ehrCode ?? null,
    o_system: offering?.system ?? null,
    o_cancellable: offering?.cancellable ?? null,
    o_active: offering?.active ?? null,
    p_name: offering?.institution.name ?? null,
  };
}

/** The row of a new draft, as `insert` writes it (the benchmark's seeding writes the same rows). */
export function newReferralRow(referral: NewReferral, cipher: FieldCipher): Insertable<ReferralsTable> {
  return sealed(referral.id, plainReferralRow(referral), cipher);
}

/** The row of a new draft, its patient data in the clear. */
function plainReferralRow(referral: NewReferral) {
  return {
    id: referral.id,
    // Every column named, defaults too: the record of a new draft is made from this row.
    version: 1,
    status: 'draft',
    sender_id_type: referral.sender.idType,
    sender_id: referral.sender.id,
    sender_system: referral.senderSystem,
    ...contentColumns(referral),
    created_at: referral.now,
    updated_at: referral.now,
    submitted_at: null,
    deleted_at: null,
    ehr_state: 'not-sent',
    ehr_attempts: 0,
    ehr_last_attempt_at: null,
    ehr_sha256: null,
    ehr_due_version: null,
    ehr_forwarded_version: null,
  };
}

/** The columns of `content`; undefined fields are left out of the statement by Kysely. */
function contentColumns(content: Partial<ReferralContent>) {
  return {
    offering_id: content.offeringId,
    provider_id_type: content.providerIdType,
    provider_id: content.providerId,
    patient_uin: content.patientUin,
    patient_name: content.patientName,
    patient_dob: content.patientDob,
    patient_gender: content.patientGender,
    patient_nationality: content.patientNationality,
    patient_phone_number: content.patientPhoneNumber,
    patient_residential_status: content.patientResidentialStatus,
    referrer_id: content.referrerId,
    referrer_id_type: content.referrerIdType,
    referrer_name: content.referrerName,
    referrer_email: content.referrerEmail,
    referrer_contact_number: content.referrerContactNumber,
    clinical_info: content.clinicalInfo,
    is_urgent: content.isUrgent,
  };
}

export type ReferralRepository = ReturnType<typeof referralRepository>;
