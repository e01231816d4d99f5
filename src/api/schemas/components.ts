// Every named schema of the API, registered once on the app so that routes can `ref()` them and the
// OpenAPI document lists them under components.schemas. A named schema missing here stops the app at
// start (its reference cannot be resolved); one listed here but never referenced fails the lint test.
import type { FastifyInstance } from 'fastify';
import { Attachment, AttachmentAdded, AttachmentList } from './attachments.schema.ts';
import { EhrSentAttachment, EhrSentForm, EhrSubmission, EhrSubmissionList } from './forwarding.schema.ts';
import { EventInstitution, EventPage, EventPageMetadata, ReferralEvent } from './events.schema.ts';
import { FhirBundle } from './fhir.schema.ts';
import {
  WebhookAttempt,
  WebhookAttemptList,
  WebhookSubscription,
  WebhookSubscriptionList,
  WebhookSubscriptionWithSecret,
} from './webhooks.schema.ts';
import { LinkUpsertResponse } from './links.schema.ts';
import {
  PatientAccess,
  PatientAccessClient,
  PatientAccessInstitution,
  PatientAccessReport,
  PatientAccessReportMetadata,
} from './access-report.schema.ts';
import type { Named } from './named.ts';
import { WorklistCount, WorklistCounts, WorklistItem, WorklistPage } from './worklists.schema.ts';
import { DeclinedShare, WaitTimeFigure, WaitTimes } from './wait-times.schema.ts';
import { FieldError, Problem } from './problem.schema.ts';
import {
  AllowedAction,
  Appointment,
  BlockedAction,
  EhrForwarding,
  Institution,
  Link,
  Note,
  Offering,
  Outcome,
  OutcomeCode,
  PageMetadata,
  CodedReason,
  Priority,
  PriorityCode,
  ReasonCode,
  Patient,
  Referral,
  ReferralPage,
  ReferralSummary,
  Referrer,
  TimelineEvent,
} from './referral.schema.ts';

export const COMPONENT_SCHEMAS: readonly Named[] = [
  Problem,
  FieldError,
  Referral,
  ReferralSummary,
  ReferralPage,
  PageMetadata,
  WorklistItem,
  WorklistPage,
  WorklistCount,
  WorklistCounts,
  Institution,
  Offering,
  Patient,
  Referrer,
  Appointment,
  Link,
  Note,
  Outcome,
  OutcomeCode,
  CodedReason,
  Priority,
  PriorityCode,
  ReasonCode,
  TimelineEvent,
  AllowedAction,
  BlockedAction,
  EhrForwarding,
  LinkUpsertResponse,
  EhrSubmission,
  EhrSubmissionList,
  EhrSentForm,
  EhrSentAttachment,
  FhirBundle,
  ReferralEvent,
  EventInstitution,
  EventPage,
  EventPageMetadata,
  WebhookSubscription,
  WebhookSubscriptionWithSecret,
  WebhookSubscriptionList,
  WebhookAttempt,
  WebhookAttemptList,
  Attachment,
  AttachmentAdded,
  AttachmentList,
  PatientAccessReport,
  PatientAccessReportMetadata,
  PatientAccess,
  PatientAccessInstitution,
  PatientAccessClient,
  WaitTimes,
  WaitTimeFigure,
  DeclinedShare,
];

export function registerComponentSchemas(app: FastifyInstance): void {
  for (const schema of COMPONENT_SCHEMAS) app.addSchema(schema);
}
