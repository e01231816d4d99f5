// The provider's handling of the referral as a Task, the way the FHIR referral workflow (and 360X)
// carries a referral's progress: status for FHIR's generic workflow, businessStatus for refhub's own
// status and coreStatus, and statusReason for why it was rejected, cancelled or put on hold, or, once
// the provider completed it, what came of it (the outcome's code). What the provider's work produced is
// Task.output: the outcome's consult summary, the documents it named as part of the outcome (the
// consultation letter), and the other files it attached, each file once.
import type {
  CodeableConcept,
  DocumentReference,
  Organization,
  Patient,
  Reference,
  ServiceRequest,
  Task,
  TaskOutput,
} from '@medplum/fhirtypes';
import { LIFECYCLE } from '../../domain/lifecycle.ts';
import type { OutcomeView } from '../../domain/outcome.ts';
import type { Status } from '../../domain/statuses.ts';
import { codeableConceptOf, codingOf, fhirString } from './fhir-datatypes.ts';
import { FHIR_SYSTEMS, REFHUB_CODE_SYSTEMS } from './fhir-systems.ts';
import type { ReferralSource } from './fhir-view-source.ts';
import { referenceTo, resourceIdOf, type Identified } from './resource-identity.ts';
import { priorityOf } from './service-request.mapping.ts';
import { CORE_STATUS_DISPLAY, STATUS_DISPLAY, TASK_STATUS } from './status-mapping.ts';

/** The statuses whose reason a person gave (the reason is quoted in the timeline event). */
const REASONED: ReadonlySet<Status> = new Set([
  'rejected',
  'cancelled',
  'sender-action-required',
  'redirected',
]);

/** The timeline event types of the operations that lead into `status`, read from the lifecycle table. */
function eventsInto(status: Status): ReadonlySet<string> {
  return new Set(
    Object.values(LIFECYCLE).flatMap((rule) =>
      rule.to.kind === 'status' && rule.to.status === status && rule.event !== null ? [rule.event] : [],
    ),
  );
}

/** The outcome's code, with the words the catalog gave it, which are also the text. */
function outcomeReasonOf(outcome: OutcomeView): CodeableConcept | undefined {
  const display = fhirString(outcome.display);
  return codeableConceptOf(codingOf(REFHUB_CODE_SYSTEMS.outcome, outcome.code, display), display);
}

/**
 * Why the Task stands as it does: for a completed referral, its outcome; for a rejected, cancelled or
 * on-hold one, the latest event that brought it into its status: its coded reason, when it had one,
 * and its sentence as the text.
 */
function statusReasonOf(referral: ReferralSource): CodeableConcept | undefined {
  if (referral.outcome !== undefined) return outcomeReasonOf(referral.outcome);
  if (!REASONED.has(referral.status)) return undefined;
  const types = eventsInto(referral.status);
  const event = referral.timelineEvents.findLast((e) => types.has(e.type));
  const text = fhirString(event?.description);
  if (text === undefined) return undefined;
  const reason = event?.reason;
  if (reason === undefined) return { text };
  return codeableConceptOf(
    codingOf(REFHUB_CODE_SYSTEMS.reason, reason.code, fhirString(reason.display)),
    text,
  );
}

export interface TaskParties {
  readonly serviceRequest: Identified<ServiceRequest>;
  readonly patient: Identified<Patient>;
  readonly sender: Identified<Organization>;
  readonly provider: Identified<Organization> | undefined;
  /** The documents the provider attached to the referral, in the order they were added. */
  readonly output: readonly ProviderDocument[];
}

/** A document the provider attached, with the ID of the attachment it shows. */
export interface ProviderDocument {
  readonly attachmentId: string;
  readonly reference: Reference<DocumentReference>;
}

const outputType = (code: string, display: string): CodeableConcept => ({
  coding: [{ system: REFHUB_CODE_SYSTEMS.taskOutputType, code, display }],
});

/** The types of Task.output: the consult summary, a document of the outcome, any other file. */
const SUMMARY_OUTPUT = outputType('consult-summary', 'Consult summary');
const OUTCOME_DOCUMENT_OUTPUT = outputType('outcome-document', 'Outcome document');
const ATTACHMENT_OUTPUT = outputType('attachment', 'Attachment');

/**
 * What the provider's work produced: the consult summary, then the documents it named as part of the
 * outcome in the order it named them, then its other files in the order they were added. A file the
 * view does not present as a document (the scanner rejected it) is no output, whatever named it.
 */
function outputsOf(outcome: OutcomeView | undefined, documents: readonly ProviderDocument[]): TaskOutput[] {
  const summary = fhirString(outcome?.summary);
  const named = new Set(outcome?.attachmentIds ?? []);
  const byId = new Map(documents.map((d) => [d.attachmentId, d.reference]));
  return [
    ...(summary === undefined ? [] : [{ type: SUMMARY_OUTPUT, valueString: summary }]),
    ...[...named].flatMap((id) => {
      const reference = byId.get(id);
      return reference === undefined ? [] : [{ type: OUTCOME_DOCUMENT_OUTPUT, valueReference: reference }];
    }),
    ...documents
      .filter((d) => !named.has(d.attachmentId))
      .map((d) => ({ type: ATTACHMENT_OUTPUT, valueReference: d.reference })),
  ];
}

export function taskOf(
  referral: ReferralSource,
  { serviceRequest, patient, sender, provider, output }: TaskParties,
): Identified<Task> {
  const statusReason = statusReasonOf(referral);
  const outputs = outputsOf(referral.outcome, output);
  const businessStatus = codeableConceptOf(
    [
      ...codingOf(REFHUB_CODE_SYSTEMS.referralStatus, referral.status, STATUS_DISPLAY[referral.status]),
      ...codingOf(
        REFHUB_CODE_SYSTEMS.coreStatus,
        referral.coreStatus,
        CORE_STATUS_DISPLAY[referral.coreStatus],
      ),
    ],
    CORE_STATUS_DISPLAY[referral.coreStatus],
  );
  return {
    resourceType: 'Task',
    id: resourceIdOf('Task', referral.id),
    meta: { versionId: String(referral.version), lastUpdated: referral.updatedAt },
    basedOn: [referenceTo(serviceRequest)],
    status: TASK_STATUS[referral.status],
    ...(statusReason === undefined ? {} : { statusReason }),
    ...(businessStatus === undefined ? {} : { businessStatus }),
    intent: 'order',
    priority: priorityOf(referral),
    code: {
      coding: [{ system: FHIR_SYSTEMS.taskCode, code: 'fulfill', display: 'Fulfill the focal request' }],
    },
    focus: referenceTo(serviceRequest),
    for: referenceTo(patient),
    // The work ended when the provider reported its outcome; when it began, refhub does not record.
    ...(referral.outcome === undefined ? {} : { executionPeriod: { end: referral.outcome.completedAt } }),
    authoredOn: referral.createdAt,
    // R4 requires lastModified ≥ authoredOn (inv-1); stored times that disagree (a clock behind
    // another) leave lastModified out rather than state an order of events that did not happen.
    ...(Date.parse(referral.updatedAt) >= Date.parse(referral.createdAt)
      ? { lastModified: referral.updatedAt }
      : {}),
    requester: referenceTo(sender, sender.name),
    ...(provider === undefined ? {} : { owner: referenceTo(provider, provider.name) }),
    ...(outputs.length === 0 ? {} : { output: outputs }),
  };
}
