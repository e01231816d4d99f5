// Tenancy: every read of a referral takes the caller's institution and sees only referrals it sends,
// or receives once they have left draft (contract §2). The reads by key run on every request and every
// forward, so they are compiled once (db/compiled-once.ts); the full read that audits itself and mints
// the caller's links is one statement.
import { sql, type ExpressionBuilder } from 'kysely';
import type { InstitutionRef } from '../../domain/access.ts';
import { auditInsertFromJson } from '../audit/audit.repository.ts';
import { compiledOnce } from '../compiled-once.ts';
import type { Executor } from '../executor.ts';
import { providerSees } from '../provider-visibility.ts';
import type { Database, ReferralsTable } from '../schema.ts';
import { referralPartsColumns, type ReferralPartsColumns } from './parts.ts';
import { FULL_READ_COLUMNS, REFERRAL_COLUMNS, type Row } from './rows.ts';

export function sideOf(
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
export function baseQuery(db: Executor) {
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
      'o.priorities as o_priorities',
      'o.triage_within as o_triage_within',
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
export const readVisible = compiledOnce(3, (db, id: string, idType: string, institutionId: string) =>
  baseQuery(db)
    .where('r.id', '=', id)
    .where(visibleTo({ idType, id: institutionId })),
);
export const readForSystem = compiledOnce(1, (db, id: string) => baseQuery(db).where('r.id', '=', id));
function visibleWithParts(db: Executor, id: string, idType: string, institutionId: string) {
  return baseQuery(db)
    .select(referralPartsColumns(sql.ref('r.id')))
    .where('r.id', '=', id)
    .where(visibleTo({ idType, id: institutionId }));
}
export const readVisibleWithParts = compiledOnce(3, visibleWithParts);

/**
 * A full read with what it writes, in one statement: the referral (if the institution may see it),
 * its audit row, and the one-time links the caller may use in the referral's status. `audit` is the
 * audit row as JSON (its referral is the one read); `links` are candidate link rows as JSON, one per
 * action, each with the statuses in which the sender (`as_sender`) or another party (`as_other`) gets
 * it. The statement returns the actions it stored links for. Nothing is written when the referral is
 * not found.
 */
export const readVisibleAudited = compiledOnce(
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
export const readForSystemWithParts = compiledOnce(1, (db, id: string) =>
  baseQuery(db)
    .select(referralPartsColumns(sql.ref('r.id')))
    .where('r.id', '=', id),
);
