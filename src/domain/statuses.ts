// The referral's fine-grained `status`, the user-facing `coreStatus` it maps to (contract §3), and
// the appointment statuses.

export const STATUSES = [
  'draft',
  'pending-acceptance',
  'accepted',
  'sender-action-required',
  'scheduled',
  'rejected',
  'cancelled',
  'completed',
  'outcome-acknowledged',
  'redirected',
  // Its record was written to an archive and its clinical content purged (domain/lifecycle.ts,
  // `archive`): never shown, listed or changed again; a read answers 410 with the archive's reference.
  'archived',
] as const;
export type Status = (typeof STATUSES)[number];

export const CORE_STATUSES = [
  'draft',
  'pending',
  'confirmed',
  'rejected',
  'cancelled',
  'sender-action-required',
  'completed',
  'redirected',
  'archived',
] as const;
export type CoreStatus = (typeof CORE_STATUSES)[number];

export const CORE_STATUS_OF: Readonly<Record<Status, CoreStatus>> = {
  draft: 'draft',
  'pending-acceptance': 'pending',
  accepted: 'pending',
  'sender-action-required': 'sender-action-required',
  scheduled: 'confirmed',
  rejected: 'rejected',
  cancelled: 'cancelled',
  completed: 'completed',
  'outcome-acknowledged': 'completed',
  redirected: 'redirected',
  archived: 'archived',
};

/**
 * The core statuses a list may filter by: every one but `archived`, whose referrals no list shows
 * (docs/api.md, "Archived referrals").
 */
export const LISTED_CORE_STATUSES = CORE_STATUSES.filter(
  (s): s is Exclude<CoreStatus, 'archived'> => s !== 'archived',
);

/** The statuses whose coreStatus is `core`. */
export function statusesOf(core: CoreStatus): Status[] {
  return STATUSES.filter((s) => CORE_STATUS_OF[s] === core);
}

export function isStatus(value: string): value is Status {
  return (STATUSES as readonly string[]).includes(value);
}

export const APPOINTMENT_STATUSES = ['scheduled', 'actualized', 'no-show', 'cancelled'] as const;
export type AppointmentStatus = (typeof APPOINTMENT_STATUSES)[number];

export const OFFERING_CATEGORIES = ['gpfirst', 'ae', 'soc', 'polyclinic', 'community'] as const;
export type OfferingCategory = (typeof OFFERING_CATEGORIES)[number];

export const INSTITUTION_ID_TYPES = ['hci'] as const;
export type InstitutionIdType = (typeof INSTITUTION_ID_TYPES)[number];

export const ROLES = ['sender', 'provider', 'ops'] as const;
export type Role = (typeof ROLES)[number];

/** The side of a referral an institution is on. */
export type Party = 'sender' | 'provider';
