// The API's shapes under their own names, as the OpenAPI document names them, and the inputs of the
// operations the client wraps. All of them come from the generated types, so they follow the server.
import type { components, operations } from './openapi.generated.ts';

type Schemas = components['schemas'];

export type Referral = Schemas['Referral'];
export type ReferralSummary = Schemas['ReferralSummary'];
export type ReferralPage = Schemas['ReferralPage'];
export type Note = Schemas['Note'];
export type Attachment = Schemas['Attachment'];
export type AttachmentAdded = Schemas['AttachmentAdded'];
export type Outcome = Schemas['Outcome'];
export type OutcomeCode = Schemas['OutcomeCode'];
export type ReasonCode = Schemas['ReasonCode'];
export type Priority = Schemas['Priority'];
export type PriorityCode = Schemas['PriorityCode'];
export type CodedReason = Schemas['CodedReason'];
export type Appointment = Schemas['Appointment'];
export type TimelineEvent = Schemas['TimelineEvent'];
export type LinkUpsertResponse = Schemas['LinkUpsertResponse'];
export type EhrSubmission = Schemas['EhrSubmission'];
export type AllowedAction = Schemas['AllowedAction'];
export type BlockedAction = Schemas['BlockedAction'];
export type Problem = Schemas['Problem'];
export type FieldError = Schemas['FieldError'];
export type PatientAccess = Schemas['PatientAccess'];
export type PatientAccessReport = Schemas['PatientAccessReport'];
export type WorklistItem = Schemas['WorklistItem'];
export type WorklistPage = Schemas['WorklistPage'];
export type WorklistCount = Schemas['WorklistCount'];
export type WorklistName = WorklistCount['name'];
export type WaitTimes = Schemas['WaitTimes'];
export type WaitTimeFigure = Schemas['WaitTimeFigure'];
export type DeclinedShare = Schemas['DeclinedShare'];

type JsonBody<Operation> = Operation extends {
  readonly requestBody: { readonly content: { readonly 'application/json': infer Body } };
}
  ? Body
  : never;

/** Who a call acts for: the institution (one the API key may act for) and the person behind it. */
export interface ActingFor {
  readonly institutionIdType: JsonBody<operations['createReferral']>['institutionIdType'];
  readonly institutionId: string;
  /** The person using the clinic system, audited with every call; an email address is preferred. */
  readonly requesterIdentifier: string;
}

type WithoutActingFor<Body> = Omit<Body, 'institutionIdType' | 'institutionId' | 'requesterIdentifier'>;

/** The referral content a sender sets on create and update; null clears a field. */
export type ReferralFields = WithoutActingFor<JsonBody<operations['createReferral']>>;
/** The link upsert's prefill (the referral content), without the referral ID. */
export type LinkPrefill = WithoutActingFor<Omit<JsonBody<operations['upsertLink']>, 'referralId'>>;
export type CancelInput = WithoutActingFor<JsonBody<operations['cancelReferral']>>;
export type BackToDraftInput = WithoutActingFor<JsonBody<operations['returnReferralToDraft']>>;
export type RedirectInput = WithoutActingFor<JsonBody<operations['redirectReferral']>>;
/** The operations a reason code may be given for (`ReasonCode.actions`). */
export type ReasonAction = ReasonCode['actions'][number];
export type NoteInput = WithoutActingFor<JsonBody<operations['addReferralNote']>>;
export type AcceptInput = WithoutActingFor<JsonBody<operations['acceptReferral']>>;
export type RejectInput = WithoutActingFor<JsonBody<operations['rejectReferral']>>;
export type RequestActionInput = WithoutActingFor<JsonBody<operations['requestSenderAction']>>;
export type AppointmentInput = WithoutActingFor<JsonBody<operations['upsertAppointment']>>;
export type CompleteInput = WithoutActingFor<JsonBody<operations['completeReferral']>>;
export type AcknowledgeOutcomeInput = WithoutActingFor<JsonBody<operations['acknowledgeReferralOutcome']>>;

/** A file to attach: its bytes, its name, and the type the client believes it has. */
export interface AttachmentUpload {
  readonly content: Blob;
  /** Sent in `Content-Disposition`; it may hold any characters but a path or control characters. */
  readonly fileName: string;
  /** Checked against the bytes, never trusted: refhub detects the type itself. */
  readonly mediaType?: string;
}

/** A file downloaded, checked against the SHA-256 refhub sent with it. */
export interface AttachmentContent {
  readonly bytes: Uint8Array;
  readonly mediaType: string;
  /** SHA-256 of `bytes`, hex: the same as the attachment's `sha256`. */
  readonly sha256: string;
}

type ListQuery = NonNullable<operations['listReferrals']['parameters']['query']>;
/** Filters of the list: statuses, the institution's side, sort order and page size. */
export type ListFilters = Omit<ListQuery, 'requesterIdentifier' | 'offset'>;
/** Filters of the search: those of the list, and the patient's UIN (never sent in a URL). */
export type SearchFilters = WithoutActingFor<Omit<JsonBody<operations['searchReferrals']>, 'offset'>>;
/** Options of a patient's access report: the page size of the walk. */
export type AccessReportOptions = Pick<JsonBody<operations['searchPatientAccessReport']>, 'pageSize'>;
