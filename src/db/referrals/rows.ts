// A referral's row and record: the columns every read selects, the record a row becomes, the row a
// new draft or a patch writes, and where the patient data in them is sealed and opened (as one value,
// db/data-keys/data-keys.repository.ts). Shared by the reads, the list and the writes of db/referrals/.
import type { Insertable, Selectable } from 'kysely';
import type { FhirPriority, ReferralPriority } from '../../domain/priorities.ts';
import type { InstitutionRef } from '../../domain/access.ts';
import type { FieldCipher } from '../../domain/data-keys.ts';
import type {
  EhrForwardingState,
  InstitutionView,
  PatientView,
  ReferrerView,
} from '../../domain/referral-view.ts';
import type { CoreStatus, OfferingCategory, Status } from '../../domain/statuses.ts';
import type { OfferingRecord } from '../catalog.repository.ts';
import { openColumns, sealColumns } from '../data-keys/data-keys.repository.ts';
import type { NewLinkToken } from '../links.repository.ts';
import type { ReferralsTable } from '../schema.ts';
import type { ReferralParts } from './parts.ts';

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
  readonly priority: ReferralPriority | null;
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
  /** When its triage is due (domain/worklists.ts), set at submission; null: no service level. */
  readonly triageDueAt: Date | null;
  /** The referral this one carries on after a redirect; null for one its sender submitted. */
  readonly redirectedFrom: string | null;
  /** The successor this one was redirected to; null unless it is `redirected`. */
  readonly redirectedTo: string | null;
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
  /** The priority as the catalog had it when set; null until the sender sets one. */
  readonly priority: ReferralPriority | null;
}

export interface NewReferral extends ReferralContent {
  readonly id: string;
  readonly sender: InstitutionRef;
  readonly senderSystem: string;
  readonly now: Date;
  /**
   * For a redirect's successor, the referral it carries on: the successor is written submitted
   * (`pending-acceptance`, submitted now), with its first version's forward to the EHR due. A new
   * referral without it is a draft.
   */
  readonly redirectedFrom?: string;
  /** For a redirect's successor: when its triage is due at its new offering (null: no service level). */
  readonly triageDueAt?: Date | null;
}

export interface ReferralPatch extends Partial<ReferralContent> {
  readonly status?: Status;
  readonly submittedAt?: Date | null;
  /** A new triage due time (a submission): `referral.triage-overdue` may be recorded for it again. */
  readonly triageDueAt?: Date | null;
  /** The successor a redirect hands the referral on to. */
  readonly redirectedTo?: string;
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
  /** Priority codes (PRIORITY_CODE_PATTERN, checked by the API): only referrals with one of them. */
  readonly priorities?: readonly string[];
  readonly patientUin?: string;
  readonly sort: ListSort;
  readonly offset: number;
  readonly pageSize: number;
}

/** A referral's row as the reads select it; opaque outside db/referrals/. */
export type ReferralRow = Row;

// The replay a forward carries (ehr_replay_of) is the ledger's bookkeeping, read by the ledger's own
// statements only.
export type Row = Omit<Selectable<ReferralsTable>, 'patient_uin_index' | 'ehr_replay_of'> & {
  sender_name: string;
  o_name: string | null;
  o_category: string | null;
  o_description: string | null;
  o_specialty: string | null;
  o_ehr_code: string | null;
  o_system: string | null;
  o_cancellable: boolean | null;
  o_active: boolean | null;
  o_priorities: string[] | null;
  o_triage_within: Record<string, number> | null;
  p_name: string | null;
};

/** A referral's row as read, its patient data opened. */
export function opened<T extends Row>(row: T, cipher: FieldCipher): T {
  return openColumns('referrals', row, cipher);
}

/**
 * The columns of a write with their patient data sealed, and the patient's UIN's blind index. A write
 * of some of the patient data seals it with the rest of `current` (the row as read, opened).
 */
export function sealed<T extends Partial<Row>>(id: string, columns: T, cipher: FieldCipher, current?: Row) {
  return sealColumns('referrals', { id }, columns, cipher, current) as T & {
    patient_uin_index?: string | null;
  };
}

export function toRecord(row: Row): ReferralRecord {
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
          priorities: row.o_priorities,
          triageWithin: row.o_triage_within,
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
    priority:
      row.priority === null || row.priority_display === null || row.priority_fhir === null
        ? null
        : {
            code: row.priority,
            display: row.priority_display,
            fhirPriority: row.priority_fhir as FhirPriority,
          },
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
    triageDueAt: row.triage_due_at,
    redirectedFrom: row.redirected_from,
    redirectedTo: row.redirected_to,
  };
}

/**
 * Every column of a referral, named rather than `r.*`: the full read is kept prepared on each
 * connection (db/database.ts), and a prepared `r.*` would fail once a migration adds a column.
 */
export const REFERRAL_COLUMNS = [
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
  'r.priority',
  'r.priority_display',
  'r.priority_fhir',
  'r.ehr_state',
  'r.ehr_attempts',
  'r.ehr_last_attempt_at',
  'r.ehr_sha256',
  'r.ehr_due_version',
  'r.ehr_forwarded_version',
  'r.redirected_from',
  'r.redirected_to',
  'r.archived_at',
  'r.archive_name',
  'r.created_at',
  'r.updated_at',
  'r.submitted_at',
  'r.deleted_at',
  'r.triage_due_at',
  'r.triage_overdue_at',
] as const;

/** The columns `baseQuery` selects, by name (a prepared statement must not select `*`). */
export const READ_COLUMNS = [
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
  'o_priorities',
  'o_triage_within',
  'p_name',
];

/** The columns of a full read (`referralPartsColumns` added to `baseQuery`), by name. */
export const FULL_READ_COLUMNS = [...READ_COLUMNS, 'appointments', 'notes', 'outcome', 'timelineEvents'];

/** The columns `patch` sets, besides `version` and `updated_at`; those it does not name are left out. */
export function patchColumns(patch: ReferralPatch) {
  const columns = {
    ...contentColumns(patch),
    status: patch.status,
    submitted_at: patch.submittedAt,
    ...(patch.triageDueAt === undefined ? {} : { triage_due_at: patch.triageDueAt, triage_overdue_at: null }),
    redirected_to: patch.redirectedTo,
    ...(patch.ehrDue === undefined
      ? {}
      : { ehr_state: 'queued', ehr_due_version: patch.ehrDue, ehr_attempts: 0 }),
  };
  return Object.fromEntries(Object.entries(columns).filter(([, value]) => value !== undefined)) as Partial<
    Selectable<ReferralsTable>
  >;
}

/** What a new draft's record names besides its own columns. */
export interface NewDraftNames {
  readonly sender: string;
  readonly offering: OfferingRecord | null;
}

/** The catalog columns a read joins for `offering` (and its provider). */
export function offeringColumns(offering: OfferingRecord | null) {
  return {
    o_name: offering?.name ?? null,
    o_category: offering?.category ?? null,
    o_description: offering?.description ?? null,
    o_specialty: offering?.specialty ?? null,
    o_ehr_code: offering?.ehrCode ?? null,
    o_system: offering?.system ?? null,
    o_cancellable: offering?.cancellable ?? null,
    o_active: offering?.active ?? null,
    o_priorities:
      offering?.priorities === undefined || offering.priorities === null ? null : [...offering.priorities],
    o_triage_within: offering?.triageWithin ?? null,
    p_name: offering?.institution.name ?? null,
  };
}

/** The row of a new draft, as `insert` writes it (the benchmark's seeding writes the same rows). */
export function newReferralRow(referral: NewReferral, cipher: FieldCipher): Insertable<ReferralsTable> {
  return sealed(referral.id, plainReferralRow(referral), cipher);
}

/** The row of a new referral (a draft, or a redirect's successor), its patient data in the clear. */
export function plainReferralRow(referral: NewReferral) {
  const successorOf = referral.redirectedFrom ?? null;
  return {
    id: referral.id,
    // Every column named, defaults too: the record of a new referral is made from this row.
    version: 1,
    status: successorOf === null ? 'draft' : 'pending-acceptance',
    sender_id_type: referral.sender.idType,
    sender_id: referral.sender.id,
    sender_system: referral.senderSystem,
    ...contentColumns(referral),
    created_at: referral.now,
    updated_at: referral.now,
    submitted_at: successorOf === null ? null : referral.now,
    deleted_at: null,
    // A successor's first version is due at the EHR, as a submit's is (the outbox row goes with it).
    ehr_state: successorOf === null ? 'not-sent' : 'queued',
    ehr_attempts: 0,
    ehr_last_attempt_at: null,
    ehr_sha256: null,
    ehr_due_version: successorOf === null ? null : 1,
    ehr_forwarded_version: null,
    triage_due_at: referral.triageDueAt ?? null,
    triage_overdue_at: null,
    redirected_from: successorOf,
    redirected_to: null,
  };
}

/** The columns of `content`; undefined fields are left out of the statement by Kysely. */
export function contentColumns(content: Partial<ReferralContent>) {
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
    ...(content.priority === undefined
      ? {}
      : {
          priority: content.priority?.code ?? null,
          priority_display: content.priority?.display ?? null,
          priority_fhir: content.priority?.fhirPriority ?? null,
        }),
  };
}
