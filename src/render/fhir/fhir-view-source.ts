// What a referral's FHIR view is drawn from: the referral as the get returns it to the same caller,
// without the per-caller one-time links, actions and the form, the attempts on its EHR forwarding ledger
// as the ledger endpoint returns them, and its attachments as their list returns them (the metadata,
// never the bytes). Nothing else goes in, so the view can show nothing the API would not show that
// caller.
import type { AttachmentView } from '../../domain/attachments.ts';
import type { ReferralView } from '../../domain/referral-view.ts';
import type { DeliveryOutcome } from './status-mapping.ts';

export type ReferralSource = Omit<
  ReferralView,
  'links' | 'ehrForwarding' | 'ehrForm' | 'ehrFormType' | 'allowedActions' | 'blockedActions'
>;

/** One attempt to deliver the referral's form to the EHR (`GET /referrals/{id}/ehr-submissions`). */
export interface EhrDeliveryAttempt {
  readonly id: string;
  /** `<referralId>.v<version>`, also the Idempotency-Key sent to the EHR. */
  readonly messageId: string;
  /** The referral version whose form was sent. */
  readonly version: number;
  readonly attempt: number;
  readonly attemptedAt: string;
  readonly outcome: DeliveryOutcome;
  readonly httpStatus?: number;
  readonly errorCode?: string;
  /** Of the form's bytes that were sent, in lowercase hex. */
  readonly sha256?: string;
  readonly ehrReference?: string;
  readonly durationMs: number;
}

/** One file attached to the referral, as `GET /referrals/{id}/attachments` lists it. */
export type AttachmentSource = AttachmentView;
