// Turns stored records into the shapes of contract §6. The stored summary is the same for every
// caller; the summary a caller gets adds the actions its side may take (allowedActions and
// blockedActions), which read only columns every read of a referral already has.
import { callerActions, type ReferralActions } from '../../domain/actions.ts';
import { isOnSide } from '../../domain/access.ts';
import { isCancellable, SENDER_ACTION_WORDS, senderActionReason } from '../../domain/lifecycle.ts';
import type {
  EhrForwardingView,
  OfferingView,
  ReferralSummaryView,
  StoredSummaryView,
} from '../../domain/referral-view.ts';
import { CORE_STATUS_OF } from '../../domain/statuses.ts';
import type { ReferralRecord } from '../../db/referrals/rows.ts';
import type { Caller } from '../caller.ts';

/** The actions of `caller` on the referral as `record` holds it. */
function actionsOf(record: ReferralRecord, caller: Pick<Caller, 'role' | 'institution'>): ReferralActions {
  return callerActions(caller, record, record.offering?.cancellable ?? true);
}

/** The summary `caller` sees: the stored summary and the caller's actions. */
export function toSummary(
  record: ReferralRecord,
  caller: Pick<Caller, 'role' | 'institution'>,
): ReferralSummaryView {
  const stored = toStoredSummary(record);
  const actions = actionsOf(record, caller);
  // A cancel option may be offered to whoever reads; ops, acting on no referral, reads the sender's.
  const cancellable =
    caller.role === 'ops' ? stored.isCancellable : actions.allowedActions.includes('cancel');
  const reason = senderActionReason(record.status);
  const waitsForCaller =
    reason !== undefined && caller.role === 'sender' && isOnSide(record, caller.institution, 'sender');
  return {
    ...stored,
    ...actions,
    isCancellable: cancellable,
    ...(waitsForCaller ? { actionRequired: { reason, description: SENDER_ACTION_WORDS[reason] } } : {}),
  };
}

/** The summary as stored, the same for every caller (`isCancellable` as the sender's answer). */
export function toStoredSummary(record: ReferralRecord): StoredSummaryView {
  const offering: OfferingView | null =
    record.offering === null
      ? null
      : {
          id: record.offering.id,
          name: record.offering.name,
          category: record.offering.category,
          description: record.offering.description,
          specialty: record.offering.specialty,
          ehrCode: record.offering.ehrCode,
          institution: record.offering.institution,
          system: record.offering.system,
        };
  return {
    id: record.id,
    version: record.version,
    createdAt: record.createdAt.toISOString(),
    updatedAt: record.updatedAt.toISOString(),
    ...(record.submittedAt === null ? {} : { submittedAt: record.submittedAt.toISOString() }),
    senderSystem: record.senderSystem,
    sender: record.sender,
    offering,
    patient: record.patient,
    referrer: record.referrer,
    clinicalInfo: record.clinicalInfo,
    isUrgent: record.isUrgent,
    priority: record.priority,
    status: record.status,
    coreStatus: CORE_STATUS_OF[record.status],
    isCancellable: isCancellable(record.status, record.offering?.cancellable ?? true),
    ...(record.redirectedFrom === null ? {} : { redirectedFrom: record.redirectedFrom }),
    ...(record.redirectedTo === null ? {} : { redirectedTo: record.redirectedTo }),
  };
}

export function toEhrForwarding(record: ReferralRecord): EhrForwardingView {
  return {
    state: record.ehr.state,
    attempts: record.ehr.attempts,
    ...(record.ehr.lastAttemptAt === null ? {} : { lastAttemptAt: record.ehr.lastAttemptAt.toISOString() }),
    ...(record.ehr.sha256 === null ? {} : { sha256: record.ehr.sha256 }),
  };
}
