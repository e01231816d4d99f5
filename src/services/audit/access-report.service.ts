// A patient's access report (docs/api.md, "A patient's access report"): who read or changed which of
// the patient's referrals, when, and through which client, for the referrals the caller's institution
// may see. Every party's accesses to those referrals are listed, the other institution's too (a clinic
// must know who at the hospital read its patient's referral), and refhub's own work and its operators';
// referrals the institution may not see are never looked at, so nobody learns another institution's
// patients.
//
// The UIN goes to the store, which looks for its blind index only: no row, no audit row and no log
// holds it. The report's own request is audited (`patient.access-report`) in the statement
// that reads it, naming every referral it covered.
import type { AccessRecord } from '../../db/audit/access-report.repository.ts';
import { auditEventOf } from '../../domain/audit.ts';
import { type AuditOutcome } from '../../db/audit/audit.repository.ts';
import type { Stores } from '../../db/stores.ts';
import type { Clock } from '../../domain/clock.ts';
import { REFHUB_SYSTEM } from '../../domain/lifecycle.ts';
import { WEB_FORM_SYSTEM } from '../../domain/links.ts';
import type { Caller } from '../caller.ts';

export const ACCESS_REPORT_ACTION = 'patient.access-report';

/** The actions of the ops pages (api/admin/admin-access.ts), which act for no institution. */
const OPS_ACTION_PREFIX = 'admin.';

export interface AccessReportDeps {
  /** The report's page, read with its own audit row written in the same statement. */
  readonly stores: Pick<Stores, 'audit'>;
  readonly clock: Clock;
}

export interface AccessReportQuery {
  readonly patientUin: string;
  readonly offset: number;
  readonly pageSize: number;
  /** The `asOf` of an earlier page: the report as that page saw it. */
  readonly asOf?: string | undefined;
}

/** The largest `bigint`: an `asOf` past it leaves nothing out. */
const BIGINT_MAX = 2n ** 63n - 1n;

/**
 * How the access came: through the API (`api`), the web form behind a one-time link (`web-form`,
 * system `Manual`, with the key that minted the link), refhub's ops pages or an ops key (`ops`), or
 * refhub on its own (`refhub`: a forward to the EHR, a reminder).
 */
export type AccessChannel = 'api' | 'web-form' | 'ops' | 'refhub';

/** The credential that acted: an API key (its display prefix) or a client of signed credentials. */
export interface AccessClientView {
  readonly kind: 'api-key' | 'client';
  readonly prefix: string;
  /** A client's ID, as its assertions name it (`iss`); absent for an API key. */
  readonly clientId?: string;
  readonly label: string | null;
}

export interface PatientAccessView {
  /** The audit row's ID: with `referralId`, what tells entries apart (a row may name two referrals). */
  readonly auditEventId: string;
  readonly occurredAt: string;
  readonly action: string;
  readonly outcome: AuditOutcome;
  readonly referralId: string;
  readonly channel: AccessChannel;
  /** The institution that acted (null for refhub and its operators). */
  readonly institution: { readonly idType: string; readonly id: string; readonly name: string | null } | null;
  readonly system: string | null;
  readonly requesterIdentifier: string | null;
  /** Null when no credential acted (refhub itself) or the one presented was not valid. */
  readonly client: AccessClientView | null;
  readonly requestId: string;
}

export interface AccessReportPage {
  readonly data: PatientAccessView[];
  readonly metadata: {
    offset: number;
    pageSize: number;
    hasNext: boolean;
    total: number;
    /** Pass it with the next pages, so that they leave out what was written since this one. */
    asOf: string;
  };
}

function channelOf(record: AccessRecord): AccessChannel {
  if (record.action.startsWith(OPS_ACTION_PREFIX) || record.credential?.role === 'ops') return 'ops';
  if (record.credential === null && record.system === REFHUB_SYSTEM) return 'refhub';
  if (record.system === WEB_FORM_SYSTEM) return 'web-form';
  return 'api';
}

function toAccessView(record: AccessRecord): PatientAccessView {
  const credential = record.credential;
  return {
    auditEventId: record.auditEventId,
    occurredAt: record.occurredAt.toISOString(),
    action: record.action,
    outcome: record.outcome,
    referralId: record.referralId,
    channel: channelOf(record),
    institution: record.institution,
    system: record.system,
    requesterIdentifier: record.requesterIdentifier,
    client:
      credential === null
        ? null
        : {
            kind: credential.kind,
            prefix: credential.prefix,
            ...(credential.kind === 'client' ? { clientId: credential.id } : {}),
            label: credential.label,
          },
    requestId: record.requestId,
  };
}

export function createAccessReport(deps: AccessReportDeps) {
  return {
    /** One page of the patient's access report for the caller's institution, newest first; audited. */
    async report(caller: Caller, query: AccessReportQuery): Promise<AccessReportPage> {
      const page = await deps.stores.audit.accessReport.page(
        {
          institution: caller.institution,
          patientUin: query.patientUin,
          offset: query.offset,
          pageSize: query.pageSize,
          asOf:
            query.asOf === undefined || BigInt(query.asOf) <= BIGINT_MAX ? query.asOf : String(BIGINT_MAX),
        },
        auditEventOf(caller, ACCESS_REPORT_ACTION, [], deps.clock.now()),
      );
      return {
        data: page.records.map(toAccessView),
        metadata: {
          offset: query.offset,
          pageSize: query.pageSize,
          hasNext: query.offset + page.records.length < page.total,
          total: page.total,
          asOf: page.asOf,
        },
      };
    },
  };
}

export type AccessReport = ReturnType<typeof createAccessReport>;
