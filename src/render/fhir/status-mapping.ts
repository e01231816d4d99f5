// How refhub's lifecycle reads in FHIR's request and workflow vocabularies (docs/fhir.md, "Statuses").
// The FHIR referral workflow splits a referral in two: the ServiceRequest is the sender's order, whose
// status says whether the authorization stands; the Task is the provider's handling of it, whose status
// follows each step. Tables, so that the compiler checks every status is mapped.
import type { Appointment, AuditEvent, ServiceRequest, Task } from '@medplum/fhirtypes';
import type { AppointmentStatus, CoreStatus, Status } from '../../domain/statuses.ts';

/**
 * request-status. A referral that is submitted and not ended stands, whatever the provider has done
 * with it: `active`. Rejected and cancelled referrals are `revoked` ("terminated prior to the known
 * full completion ... no further activity should occur"): both are final in refhub. Not
 * `entered-in-error`, which says the request should never have existed: a rejected referral was a
 * real request, made for a real patient, and stays part of the record. A redirected referral is
 * `revoked` too: the request no longer stands at its provider; its successor's ServiceRequest, which
 * `replaces` it, is the one that stands. sender-action-required is the
 * provider's pause, not the sender's withdrawal, so the request stays `active` and the Task is on hold.
 */
export const SERVICE_REQUEST_STATUS: Readonly<Record<Status, ServiceRequest['status']>> = {
  draft: 'draft',
  'pending-acceptance': 'active',
  accepted: 'active',
  'sender-action-required': 'active',
  scheduled: 'active',
  rejected: 'revoked',
  cancelled: 'revoked',
  completed: 'completed',
  'outcome-acknowledged': 'completed',
  redirected: 'revoked',
  // Never shown (an archived referral answers 410), but a status all the same.
  archived: 'unknown',
};

/**
 * task-status, as the FHIR referral workflow and 360X use it: the Task says where the provider's work
 * stands. `scheduled` is `in-progress` (an appointment is booked or has taken place: the provider is
 * fulfilling the request). Once the provider reported its outcome the Task is `completed`, whether or
 * not the sender has read it yet (businessStatus tells the two apart). sender-action-required is
 * `on-hold`: the provider waits for the sender, and businessStatus and statusReason say why. A
 * redirected referral's Task is `cancelled` (its provider does no more with it, whoever redirected
 * it); businessStatus says `redirected` and statusReason gives the redirect's reason.
 */
export const TASK_STATUS: Readonly<Record<Status, Task['status']>> = {
  draft: 'draft',
  'pending-acceptance': 'requested',
  accepted: 'accepted',
  'sender-action-required': 'on-hold',
  scheduled: 'in-progress',
  rejected: 'rejected',
  cancelled: 'cancelled',
  completed: 'completed',
  'outcome-acknowledged': 'completed',
  redirected: 'cancelled',
  archived: 'completed',
};

/** appointmentstatus. */
export const APPOINTMENT_STATUS: Readonly<Record<AppointmentStatus, Appointment['status']>> = {
  scheduled: 'booked',
  actualized: 'fulfilled',
  'no-show': 'noshow',
  cancelled: 'cancelled',
};

export type DeliveryOutcome = 'delivered' | 'retrying' | 'failed';

/**
 * audit-event-outcome of one attempt to deliver the form to the EHR: delivered is success (0); an
 * attempt refhub will repeat is a minor failure (4); one after which it gives up is serious (8).
 */
export const DELIVERY_OUTCOME: Readonly<Record<DeliveryOutcome, NonNullable<AuditEvent['outcome']>>> = {
  delivered: '0',
  retrying: '4',
  failed: '8',
};

/** Readable names of refhub's codes, for Coding.display. */
export const STATUS_DISPLAY: Readonly<Record<Status, string>> = {
  draft: 'Draft',
  'pending-acceptance': 'Pending acceptance',
  accepted: 'Accepted',
  'sender-action-required': 'Sender action required',
  scheduled: 'Scheduled',
  rejected: 'Rejected',
  cancelled: 'Cancelled',
  completed: 'Completed',
  'outcome-acknowledged': 'Outcome acknowledged',
  redirected: 'Redirected',
  archived: 'Archived',
};

export const CORE_STATUS_DISPLAY: Readonly<Record<CoreStatus, string>> = {
  draft: 'Draft',
  pending: 'Pending',
  confirmed: 'Confirmed',
  rejected: 'Rejected',
  cancelled: 'Cancelled',
  'sender-action-required': 'Sender action required',
  completed: 'Completed',
  redirected: 'Redirected',
  archived: 'Archived',
};
