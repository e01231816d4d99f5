// The referral as callers see it (contract §6). The API returns these shapes, and the renderer
// draws the ehrForm from them. Unset values are null; `submittedAt` is absent for drafts.
import type { FormAttachment } from './attachments.ts';
import type { Action, BlockedAction } from './actions.ts';
import type { SenderActionReason } from './lifecycle.ts';
import type { OutcomeView } from './outcome.ts';
import type { ReferralPriority } from './priorities.ts';
import type { ReasonView } from './reasons.ts';
import type { AppointmentStatus, CoreStatus, OfferingCategory, Status } from './statuses.ts';

export interface InstitutionView {
  readonly idType: string;
  readonly id: string;
  readonly name: string;
}

export interface OfferingView {
  readonly id: string;
  readonly name: string;
  readonly category: OfferingCategory;
  readonly description: string;
  readonly specialty: string;
  readonly ehrCode: string;
  readonly institution: InstitutionView;
  readonly system: string;
}

export interface PatientView {
  readonly uin: string | null;
  readonly name: string | null;
  /** YYYY-MM-DD */
  readonly dob: string | null;
  readonly gender: 'Male' | 'Female' | null;
  /** ISO 3166-1 alpha-2 */
  readonly nationality: string | null;
  readonly phoneNumber: string | null;
  readonly residentialStatus: 'SC' | 'PR' | 'Foreigner' | null;
}

export interface ReferrerView {
  readonly id: string | null;
  readonly idType: string | null;
  readonly name: string | null;
  readonly email: string | null;
  readonly contactNumber: string | null;
}

export interface ReferralSummaryView {
  readonly id: string;
  readonly version: number;
  readonly createdAt: string;
  readonly updatedAt: string;
  readonly submittedAt?: string;
  readonly senderSystem: string;
  readonly sender: InstitutionView;
  readonly offering: OfferingView | null;
  readonly patient: PatientView;
  readonly referrer: ReferrerView;
  readonly clinicalInfo: string | null;
  readonly isUrgent: boolean;
  /** The catalog's priority the sender set, in its words; null until one is set. */
  readonly priority: ReferralPriority | null;
  readonly status: Status;
  readonly coreStatus: CoreStatus;
  /** The sender's answer (contract §4): equal to whether `cancel` is in the sender's allowedActions. */
  readonly isCancellable: boolean;
  /** What the caller's side may do now (actions.ts). */
  readonly allowedActions: Action[];
  /** What else the caller's side may do in general, and why not now. */
  readonly blockedActions: BlockedAction[];
  /**
   * For the sender, while the referral waits for it (it is listed under `sender-action-required`):
   * why, as a code and in words. Absent otherwise.
   */
  readonly actionRequired?: { readonly reason: SenderActionReason; readonly description: string };
  /** The referral this one carries on after a redirect; absent for one its sender submitted. */
  readonly redirectedFrom?: string;
  /** The referral this one was redirected to; absent unless it is `redirected`. */
  readonly redirectedTo?: string;
}

/** The summary as stored, the same for every caller: what the ehrForm and the FHIR view draw from. */
export type StoredSummaryView = Omit<
  ReferralSummaryView,
  'allowedActions' | 'blockedActions' | 'actionRequired'
>;

export interface AppointmentView {
  readonly id: string;
  readonly status: AppointmentStatus;
  readonly startAt: string;
  readonly location: string;
  readonly updatedAt: string;
}

export type LinkAction = 'edit' | 'respond' | 'print' | 'view';

export interface LinkView {
  readonly type: LinkAction;
  readonly label: string;
  readonly url: string;
}

export interface NoteView {
  readonly id: string;
  readonly content: string;
  readonly authorName: string | null;
  readonly authorInstitution: InstitutionView;
  readonly createdAt: string;
}

export interface TimelineEventView {
  readonly id: string;
  readonly type: string;
  readonly system: string;
  readonly description: string;
  readonly producedAt: string;
  /** The coded reason the step was given for (domain/reasons.ts); absent when it had none. */
  readonly reason?: ReasonView;
  /**
   * For a step of the referral this one was redirected from, copied into its timeline at the
   * redirect: that referral's ID. Absent for the referral's own steps.
   */
  readonly fromReferralId?: string;
}

export type EhrForwardingState = 'not-sent' | 'queued' | 'forwarded' | 'failed';

export interface EhrForwardingView {
  readonly state: EhrForwardingState;
  readonly lastAttemptAt?: string;
  readonly sha256?: string;
  readonly attempts: number;
}

export interface ReferralView extends ReferralSummaryView {
  readonly appointments: AppointmentView[];
  readonly links: LinkView[];
  readonly notes: NoteView[];
  /** The provider's outcome, once it completed the referral; absent before. */
  readonly outcome?: OutcomeView;
  readonly timelineEvents: TimelineEventView[];
  readonly ehrForwarding: EhrForwardingView;
  readonly ehrForm?: string;
  readonly ehrFormType?: string;
}

/**
 * What the ehrForm is drawn from: the referral as stored at one version, without per-caller links,
 * and the files that go with it (none when absent).
 */
export type EhrFormSource = Omit<
  ReferralView,
  | 'links'
  | 'ehrForwarding'
  | 'ehrForm'
  | 'ehrFormType'
  | 'allowedActions'
  | 'blockedActions'
  | 'actionRequired'
> & { readonly attachments?: readonly FormAttachment[] };
