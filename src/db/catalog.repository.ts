// Systems, institutions, offerings, outcome codes and reason codes: the catalog (contract §1). Loading is an upsert
// by ID.
import { sql } from 'kysely';
import type { InstitutionRef } from '../domain/access.ts';
import { REFHUB_SYSTEM } from '../domain/lifecycle.ts';
import type { OutcomeCode } from '../domain/outcome.ts';
import type { FhirPriority, PriorityCode } from '../domain/priorities.ts';
import type { ReasonAction, ReasonCode } from '../domain/reasons.ts';
import type { InstitutionView, OfferingView } from '../domain/referral-view.ts';
import type { OfferingCategory } from '../domain/statuses.ts';
import type { TriageWithin } from '../domain/worklists.ts';
import type { Executor } from './executor.ts';

export interface CatalogInstitution {
  readonly idType: string;
  readonly id: string;
  readonly name: string;
}

export interface CatalogOffering {
  readonly id: string;
  readonly name: string;
  readonly category: OfferingCategory;
  readonly description: string;
  readonly specialty: string;
  readonly ehrCode: string;
  readonly institution: InstitutionRef;
  readonly system: string;
  readonly cancellable: boolean;
  readonly active: boolean;
  /** The priority codes it takes; null: every one in use. */
  readonly priorities: readonly string[] | null;
  /** Its triage service levels, working days by priority code; null: none. */
  readonly triageWithin: TriageWithin | null;
}

/** A day the catalog says is not a working day (domain/worklists.ts). */
export interface PublicHoliday {
  /** "YYYY-MM-DD" */
  readonly date: string;
  readonly name: string;
  /** A withdrawn day is a working day again. */
  readonly active: boolean;
}

export interface OfferingRecord extends OfferingView {
  readonly cancellable: boolean;
  readonly active: boolean;
  /** The priority codes it takes; null: every one in use (domain/priorities.ts). */
  readonly priorities: readonly string[] | null;
  /** Its triage service levels, working days by priority code; null: none (domain/worklists.ts). */
  readonly triageWithin: TriageWithin | null;
}

export function catalogRepository(db: Executor) {
  const offerings = () =>
    db
      .selectFrom('offerings as o')
      .innerJoin('institutions as i', (j) =>
        j.onRef('i.id_type', '=', 'o.institution_id_type').onRef('i.id', '=', 'o.institution_id'),
      )
      .select([
        'o.id',
        'o.name',
        'o.category',
        'o.description',
        'o.specialty',
        'o.ehr_code',
        'o.system',
        'o.cancellable',
        'o.active',
        'o.priorities',
        'o.triage_within',
        'i.id_type as institution_id_type',
        'i.id as institution_id',
        'i.name as institution_name',
      ]);

  return {
    async upsertSystems(names: readonly string[]): Promise<void> {
      if (names.length === 0) return;
      await db
        .insertInto('systems')
        .values(names.map((name) => ({ name })))
        .onConflict((oc) => oc.column('name').doNothing())
        .execute();
    },

    async upsertInstitutions(institutions: readonly CatalogInstitution[]): Promise<void> {
      if (institutions.length === 0) return;
      await db
        .insertInto('institutions')
        .values(institutions.map((i) => ({ id_type: i.idType, id: i.id, name: i.name })))
        .onConflict((oc) =>
          oc
            .columns(['id_type', 'id'])
            .doUpdateSet({
              name: (eb) => eb.ref('excluded.name'),
              updated_at: sql<Date>`now()`,
            })
            // An unchanged row is left alone, so loading the same file twice changes nothing.
            .whereRef('institutions.name', 'is distinct from', 'excluded.name'),
        )
        .execute();
    },

    async upsertOfferings(offerings: readonly CatalogOffering[]): Promise<void> {
      if (offerings.length === 0) return;
      await db
        .insertInto('offerings')
        .values(
          offerings.map((o) => ({
            id: o.id,
            name: o.name,
            category: o.category,
            description: o.description,
            specialty: o.specialty,
            ehr_code: o.ehrCode,
            institution_id_type: o.institution.idType,
            institution_id: o.institution.id,
            system: o.system,
            cancellable: o.cancellable,
            active: o.active,
            priorities: o.priorities === null ? null : [...o.priorities],
            triage_within: o.triageWithin === null ? null : JSON.stringify(o.triageWithin),
          })),
        )
        .onConflict((oc) =>
          oc
            .column('id')
            .doUpdateSet((eb) => ({
              name: eb.ref('excluded.name'),
              category: eb.ref('excluded.category'),
              description: eb.ref('excluded.description'),
              specialty: eb.ref('excluded.specialty'),
              ehr_code: eb.ref('excluded.ehr_code'),
              institution_id_type: eb.ref('excluded.institution_id_type'),
              institution_id: eb.ref('excluded.institution_id'),
              system: eb.ref('excluded.system'),
              cancellable: eb.ref('excluded.cancellable'),
              active: eb.ref('excluded.active'),
              priorities: eb.ref('excluded.priorities'),
              triage_within: eb.ref('excluded.triage_within'),
              updated_at: sql<Date>`now()`,
            }))
            // An unchanged row is left alone, so loading the same file twice changes nothing.
            .where(
              sql<boolean>`(offerings.name, offerings.category, offerings.description, offerings.specialty,
                offerings.ehr_code, offerings.institution_id_type, offerings.institution_id, offerings.system,
                offerings.cancellable, offerings.active, offerings.priorities, offerings.triage_within)
              is distinct from (excluded.name, excluded.category, excluded.description, excluded.specialty,
                excluded.ehr_code, excluded.institution_id_type, excluded.institution_id, excluded.system,
                excluded.cancellable, excluded.active, excluded.priorities, excluded.triage_within)`,
            ),
        )
        .execute();
    },

    /** The file's outcome codes, in its order (the order people are offered them). */
    upsertOutcomeCodes(codes: readonly OutcomeCode[]): Promise<void> {
      return upsertCodes(
        db,
        'outcome_codes',
        codes.map((c) => ({
          code: c.code,
          display: c.display,
          summary_required: c.summaryRequired,
          active: c.active,
        })),
      );
    },

    async findOutcomeCode(code: string): Promise<OutcomeCode | undefined> {
      const row = await db
        .selectFrom('outcome_codes')
        .select(['code', 'display', 'summary_required', 'active'])
        .where('code', '=', code)
        .executeTakeFirst();
      return row && toOutcomeCode(row);
    },

    async listOutcomeCodes(): Promise<OutcomeCode[]> {
      const rows = await db
        .selectFrom('outcome_codes')
        .select(['code', 'display', 'summary_required', 'active'])
        .orderBy('position')
        .orderBy(sql`code collate "C"`)
        .execute();
      return rows.map(toOutcomeCode);
    },

    /** The file's priority codes, in its order (the order people are offered them). */
    upsertPriorityCodes(codes: readonly PriorityCode[]): Promise<void> {
      return upsertCodes(
        db,
        'priority_codes',
        codes.map((c) => ({
          code: c.code,
          display: c.display,
          fhir_priority: c.fhirPriority,
          active: c.active,
        })),
      );
    },

    async listPriorityCodes(): Promise<PriorityCode[]> {
      const rows = await db
        .selectFrom('priority_codes')
        .select(['code', 'display', 'fhir_priority', 'active'])
        .orderBy('position')
        .orderBy(sql`code collate "C"`)
        .execute();
      return rows.map((r) => ({
        code: r.code,
        display: r.display,
        // Only the catalog's own check writes them (services/catalog), and the table's CHECK holds them.
        fhirPriority: r.fhir_priority as FhirPriority,
        active: r.active,
      }));
    },

    /** The file's reason codes, in its order (the order people are offered them). */
    upsertReasonCodes(codes: readonly ReasonCode[]): Promise<void> {
      return upsertCodes(
        db,
        'reason_codes',
        codes.map((c) => ({
          code: c.code,
          display: c.display,
          actions: [...c.actions],
          comment_required: c.commentRequired,
          active: c.active,
        })),
      );
    },

    async listReasonCodes(): Promise<ReasonCode[]> {
      const rows = await db
        .selectFrom('reason_codes')
        .select(['code', 'display', 'actions', 'comment_required', 'active'])
        .orderBy('position')
        .orderBy(sql`code collate "C"`)
        .execute();
      return rows.map((r) => ({
        code: r.code,
        display: r.display,
        // Only the catalog's own check writes them (services/catalog), from REASON_ACTIONS.
        actions: r.actions as ReasonAction[],
        commentRequired: r.comment_required,
        active: r.active,
      }));
    },

    /** The systems of the catalog, `Manual` among them; refhub's own (REFHUB_SYSTEM) is not one. */
    /** The file's public holidays, upserted by date; a day the file no longer lists stays as it was. */
    async upsertHolidays(holidays: readonly PublicHoliday[]): Promise<void> {
      if (holidays.length === 0) return;
      await db
        .insertInto('public_holidays')
        .values(holidays.map((h) => ({ day: h.date, name: h.name, active: h.active })))
        .onConflict((oc) =>
          oc
            .column('day')
            .doUpdateSet((eb) => ({
              name: eb.ref('excluded.name'),
              active: eb.ref('excluded.active'),
              updated_at: sql<Date>`now()`,
            }))
            .where(
              sql<boolean>`(public_holidays.name, public_holidays.active)
                is distinct from (excluded.name, excluded.active)`,
            ),
        )
        .execute();
    },

    /** Every public holiday, in use or withdrawn, by date. */
    async listHolidays(): Promise<PublicHoliday[]> {
      const rows = await db
        .selectFrom('public_holidays')
        .select([sql<string>`day::text`.as('day'), 'name', 'active'])
        .orderBy('day')
        .execute();
      return rows.map((r) => ({ date: r.day, name: r.name, active: r.active }));
    },

    /** The days in use as holidays from `from` ("YYYY-MM-DD") on: what a due time counts past. */
    async holidaysFrom(from: string): Promise<Set<string>> {
      const rows = await db
        .selectFrom('public_holidays')
        .select(sql<string>`day::text`.as('day'))
        .where('active', '=', true)
        .where('day', '>=', from)
        .execute();
      return new Set(rows.map((r) => r.day));
    },

    async listSystems(): Promise<string[]> {
      const rows = await db
        .selectFrom('systems')
        .select('name')
        .where('name', '<>', REFHUB_SYSTEM)
        .orderBy('name')
        .execute();
      return rows.map((r) => r.name);
    },

    async findInstitution(ref: InstitutionRef): Promise<InstitutionView | undefined> {
      const row = await db
        .selectFrom('institutions')
        .select(['id_type', 'id', 'name'])
        .where('id_type', '=', ref.idType)
        .where('id', '=', ref.id)
        .executeTakeFirst();
      return row && { idType: row.id_type, id: row.id, name: row.name };
    },

    /**
     * What a new draft needs of the catalog, in one statement: the offering it names, with the
     * sending institution's name (absent when the catalog does not list it). An offering that is not
     * in the catalog comes back as none, and so does the name: the draft is refused then.
     */
    async forNewDraft(
      offeringId: string | null | undefined,
      sender: InstitutionRef,
    ): Promise<{ readonly offering?: OfferingRecord; readonly senderName?: string }> {
      const senderName = db
        .selectFrom('institutions as s')
        .select('s.name')
        .where('s.id_type', '=', sender.idType)
        .where('s.id', '=', sender.id);
      if (offeringId === null || offeringId === undefined) {
        const row = await senderName.executeTakeFirst();
        return row === undefined ? {} : { senderName: row.name };
      }
      const row = await offerings()
        .select(senderName.as('sender_name'))
        .where('o.id', '=', offeringId)
        .executeTakeFirst();
      if (row === undefined) return {};
      const { sender_name: name, ...offering } = row;
      return { offering: toOfferingRecord(offering), ...(name === null ? {} : { senderName: name }) };
    },

    async findOffering(id: string): Promise<OfferingRecord | undefined> {
      const row = await offerings().where('o.id', '=', id).executeTakeFirst();
      return row && toOfferingRecord(row);
    },

    /** Every offering with its provider, ordered by category and name (the web form's choices). */
    async listOfferings(): Promise<OfferingRecord[]> {
      const rows = await offerings().orderBy('o.category').orderBy('o.name').orderBy('o.id').execute();
      return rows.map(toOfferingRecord);
    },

    async isEmpty(): Promise<boolean> {
      const row = await db.selectFrom('institutions').select('id').limit(1).executeTakeFirst();
      return row === undefined;
    },
  };
}

/** The catalog's lists of codes (outcomes, priorities, reasons): a row per code, kept in the file's order. */
type CodeTable = 'outcome_codes' | 'priority_codes' | 'reason_codes';

/**
 * Upserts a list of codes by `code`, each taking its place in the list as `position` (the order people
 * are offered them in). A row whose values are unchanged is left alone, so loading the same file twice
 * changes nothing; a code the file no longer lists stays, since what was given with it keeps it.
 */
async function upsertCodes(
  db: Executor,
  table: CodeTable,
  codes: readonly ({ readonly code: string } & Readonly<Record<string, unknown>>)[],
): Promise<void> {
  const first = codes[0];
  if (first === undefined) return;
  const rows = codes.map((c, position) => ({ ...c, position }));
  const columns = Object.keys({ ...first, position: 0 }).filter((c) => c !== 'code');
  const excluded = columns.map((c) => sql.ref(`excluded.${c}`));
  await db
    .insertInto(table)
    // Each caller names its table's own columns; the union of tables leaves Kysely no one row type.
    .values(rows as never)
    .onConflict((oc) =>
      oc
        .column('code')
        .doUpdateSet({
          ...Object.fromEntries(columns.map((c, i) => [c, excluded[i]])),
          updated_at: sql<Date>`now()`,
        } as never)
        .where(
          sql<boolean>`(${sql.join(columns.map((c) => sql.ref(`${table}.${c}`)))})
            is distinct from (${sql.join(excluded)})`,
        ),
    )
    .execute();
}

interface OfferingRow {
  id: string;
  name: string;
  category: string;
  description: string;
  specialty: string;
  ehr_code: string;
  system: string;
  cancellable: boolean;
  active: boolean;
  priorities: string[] | null;
  triage_within: Record<string, number> | null;
  institution_id_type: string;
  institution_id: string;
  institution_name: string;
}

function toOfferingRecord(row: OfferingRow): OfferingRecord {
  return {
    id: row.id,
    name: row.name,
    category: row.category as OfferingCategory,
    description: row.description,
    specialty: row.specialty,
    ehrCode: row.ehr_code,
    system: row.system,
    cancellable: row.cancellable,
    active: row.active,
    priorities: row.priorities,
    triageWithin: row.triage_within,
    institution: { idType: row.institution_id_type, id: row.institution_id, name: row.institution_name },
  };
}

function toOutcomeCode(row: {
  code: string;
  display: string;
  summary_required: boolean;
  active: boolean;
}): OutcomeCode {
  return { code: row.code, display: row.display, summaryRequired: row.summary_required, active: row.active };
}

export type CatalogRepository = ReturnType<typeof catalogRepository>;
