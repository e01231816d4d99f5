// A patient's access report: every audit row that names a referral of the patient which the calling
// institution may see, whoever wrote it (its own staff, the other party's, refhub's operators or refhub
// itself), newest first, a page at a time. The patient is found by the blind index of the UIN
// (domain/data-keys.ts), made here with the data keys: the UIN goes no further than this call.
//
// Tenancy is the referral list's (`visibleTo`): the referrals the institution sends, and those it
// receives once they have left draft; deleted ones are invisible here too. An audit row may name more
// referrals than the patient's (a list names its page): only the patient's are reported, one entry per
// row and referral, so another institution's other referrals never show. A request refused because
// its credential may not act for the institution it claimed is left out: it was turned away before
// any referral was looked at, so the referrals it names are only what it said, and a credential
// cannot put rows in another institution's reports by naming its referrals (api/request-audit.ts).
//
// The report's own audit row, naming every referral it covered, is written by the statement that reads
// the page, so it is stored before anything leaves; the statement does not see its own row, and the
// next report lists it. So every page asked for adds entries at the top (one per referral covered), and
// a walk by offset would never reach the end: a page answers with `asOf`, the newest audit row it saw
// (its `seq`), and a page asked for with it leaves out every row written after. A row written before it
// but committed later can still appear, in its place: a walk then sees an entry again, never misses one.
import { sql, type Selectable } from 'kysely';
import type { InstitutionRef } from '../../domain/access.ts';
import { auditInsertFromJson, auditRow, type AuditEvent, type AuditOutcome } from './audit.repository.ts';
import type { DataKeys } from '../data-keys/data-keys.repository.ts';
import type { Executor } from '../executor.ts';
import type { AuditEventsTable } from '../schema.ts';
import { visibleTo } from '../referrals/reads.ts';

/** The credential an audit row names: an API key, or a client of signed credentials. */
export interface AccessCredential {
  readonly id: string;
  readonly kind: 'api-key' | 'client';
  readonly prefix: string;
  readonly label: string | null;
  readonly role: string;
}

/** One audit row, for one referral of the patient. */
export interface AccessRecord {
  /** The audit row's ID. */
  readonly auditEventId: string;
  readonly occurredAt: Date;
  readonly requestId: string;
  readonly action: string;
  readonly outcome: AuditOutcome;
  readonly referralId: string;
  /** The institution the row names, with its catalog name (null when the catalog does not list it). */
  readonly institution: { readonly idType: string; readonly id: string; readonly name: string | null } | null;
  readonly system: string | null;
  readonly requesterIdentifier: string | null;
  readonly credential: AccessCredential | null;
}

export interface AccessReportFilter {
  readonly institution: InstitutionRef;
  /** The patient's UIN: only its blind index is looked for, and it is stored nowhere. */
  readonly patientUin: string;
  readonly offset: number;
  readonly pageSize: number;
  /** Leave out the audit rows written after this one (its `seq`): the report as an earlier page saw it. */
  readonly asOf?: string | undefined;
}

/** A row of the page: an audit row's columns, with its credential's and its institution's. */
type EntryColumns = Pick<
  Selectable<AuditEventsTable>,
  | 'id'
  | 'occurred_at'
  | 'request_id'
  | 'action'
  | 'outcome'
  | 'system'
  | 'institution_id_type'
  | 'institution_id'
  | 'requester_identifier'
  | 'api_key_id'
> & {
  referral_id: string;
  institution_name: string | null;
  key_kind: 'api-key' | 'client' | null;
  key_prefix: string | null;
  key_label: string | null;
  key_role: string | null;
};

/** What the statement returns: the total with each entry, or alone (entry columns null) on an empty page. */
type AccessRow = { total: number | string; as_of: string } & (
  EntryColumns | { [C in keyof EntryColumns]: null }
);

function toRecord(row: EntryColumns): AccessRecord {
  return {
    auditEventId: row.id,
    occurredAt: row.occurred_at,
    requestId: row.request_id,
    action: row.action,
    outcome: row.outcome,
    referralId: row.referral_id,
    institution:
      row.institution_id_type === null || row.institution_id === null
        ? null
        : { idType: row.institution_id_type, id: row.institution_id, name: row.institution_name },
    system: row.system,
    requesterIdentifier: row.requester_identifier,
    credential:
      row.api_key_id === null || row.key_kind === null || row.key_prefix === null || row.key_role === null
        ? null
        : {
            id: row.api_key_id,
            kind: row.key_kind,
            prefix: row.key_prefix,
            label: row.key_label,
            role: row.key_role,
          },
  };
}

const isEntry = (row: AccessRow): row is AccessRow & EntryColumns => row.occurred_at !== null;

export function accessReportRepository(db: Executor, keys: DataKeys) {
  return {
    /**
     * One page of the patient's access report for `filter.institution`, newest first (ties by the
     * order the rows were written, then by referral ID), with the total, and `audit` written in the
     * same statement naming every referral of the patient the institution may see.
     */
    async page(
      filter: AccessReportFilter,
      audit: AuditEvent,
    ): Promise<{ records: AccessRecord[]; total: number; asOf: string }> {
      const patientIndex = (await keys.cipher(db)).blindIndex('patient-uin', filter.patientUin);
      const patient = db
        .selectFrom('referrals as r')
        .select('r.id')
        .where('r.patient_uin_index', '=', patientIndex)
        .where('r.deleted_at', 'is', null)
        .where(visibleTo(filter.institution));
      // One row even for an empty page, so that the total comes with it: the count joined with the page.
      const { rows } = await sql<AccessRow>`with patient as (${patient}),
        audit as (${auditInsertFromJson(
          JSON.stringify(auditRow(audit)),
          sql`array(select p.id from patient p order by p.id)`,
        )}),
        access as (
          select e.seq, e.id, e.occurred_at, e.request_id, e.api_key_id, e.system, e.institution_id_type,
            e.institution_id, e.requester_identifier, e.action, e.outcome, p.id as referral_id
          from audit_events e
          join patient p on p.id = any(e.referral_ids)
          where e.referral_ids && array(select p.id from patient p)
            and e.claimed_institution_id is null
            and (${filter.asOf ?? null}::bigint is null or e.seq <= ${filter.asOf ?? null}::bigint))
        select c.total, c.as_of, page.id, page.occurred_at, page.request_id, page.action, page.outcome,
          page.referral_id, page.system, page.institution_id_type, page.institution_id,
          page.institution_name, page.requester_identifier, page.api_key_id, page.key_kind,
          page.key_prefix, page.key_label, page.key_role
        from (select count(*)::int as total, coalesce(max(seq), 0)::text as as_of from access) c
        left join (
          select a.seq, a.id, a.occurred_at, a.request_id, a.action, a.outcome, a.referral_id, a.system,
            a.institution_id_type, a.institution_id, i.name as institution_name, a.requester_identifier,
            a.api_key_id, k.kind as key_kind, k.prefix as key_prefix, k.label as key_label,
            k.role as key_role
          from access a
          left join institutions i on i.id_type = a.institution_id_type and i.id = a.institution_id
          left join api_keys k on k.id = a.api_key_id
          order by a.occurred_at desc, a.seq desc, a.referral_id
          limit ${String(filter.pageSize)}::bigint offset ${String(filter.offset)}::bigint) page on true
        order by page.occurred_at desc, page.seq desc, page.referral_id`.execute(db);
      return {
        records: rows.filter(isEntry).map(toRecord),
        total: Number(rows[0]?.total ?? 0),
        asOf: filter.asOf ?? rows[0]?.as_of ?? '0',
      };
    },
  };
}
