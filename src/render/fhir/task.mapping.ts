// The provider's handling of the referral as a Task, the way the FHIR referral workflow (and 360X)
// carries a referral's progress: status for FHIR's generic workflow, businessStatus for refhub's own
// status and coreStatus, and statusReason for why it was rejected, cancelled or put on hold. The
// documents the provider attached (a consultation letter) are what its work produced: Task.output.
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
import type { Status } from '../../domain/statuses.ts';
import { codeableConceptOf, codingOf, fhirString } from './fhir-datatypes.ts';
import { FHIR_SYSTEMS, REFHUB_CODE_SYSTEMS } from './fhir-systems.ts';
import type { ReferralSource } from './fhir-view-source.ts';
import { referenceTo, resourceIdOf, type Identified } from './resource-identity.ts';
import { priorityOf } from './service-request.mapping.ts';
import { CORE_STATUS_DISPLAY, STATUS_DISPLAY, TASK_STATUS } from './status-mapping.ts';

/** The statuses whose reason a person gave (the reason is quoted in the timeline event). */
const REASONED: ReadonlySet<Status> = new Set(['rejected', 'cancelled', 'sender-action-required']);

/** The timeline event types of the operations that lead into `status`, read from the lifecycle table. */
function eventsInto(status: Status): ReadonlySet<string> {
  return new Set(
    Object.values(LIFECYCLE).flatMap((rule) =>
      rule.to.kind === 'status' && rule.to.status === status && rule.event !== null ? [rule.event] : [],
    ),
  );
}

/** The sentence of the latest event that brought the referral into its status, for those with a reason. */
function statusReasonOf(referral: ReferralSource): CodeableConcept | undefined {
  if (!REASONED.has(referral.status)) return undefined;
  const types = eventsInto(referral.status);
  const event = referral.timelineEvents.findLast((e) => types.has(e.type));
  const text = fhirString(event?.description);
  return text === undefined ? undefined : { text };
}

export interface TaskParties {
  readonly serviceRequest: Identified<ServiceRequest>;
  readonly patient: Identified<Patient>;
  readonly sender: Identified<Organization>;
  readonly provider: Identified<Organization> | undefined;
  /** The documents the provider attached to the referral. */
  readonly output: readonly Reference<DocumentReference>[];
}

/** The type of each Task.output: a file the provider attached. */
const ATTACHMENT_OUTPUT: CodeableConcept = {
  coding: [{ system: REFHUB_CODE_SYSTEMS.taskOutputType, code: 'attachment', display: 'Attachment' }],
};

export function taskOf(
  referral: ReferralSource,
  { serviceRequest, patient, sender, provider, output }: TaskParties,
): Identified<Task> {
  const statusReason = statusReasonOf(referral);
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
    authoredOn: referral.createdAt,
    // R4 requires lastModified ≥ authoredOn (inv-1); stored times that disagree (a clock behind
    // another) leave lastModified out rather than state an order of events that did not happen.
    ...(Date.parse(referral.updatedAt) >= Date.parse(referral.createdAt)
      ? { lastModified: referral.updatedAt }
      : {}),
    requester: referenceTo(sender, sender.name),
    ...(provider === undefined ? {} : { owner: referenceTo(provider, provider.name) }),
    ...(output.length === 0
      ? {}
      : {
          output: output.map((document): TaskOutput => ({
            type: ATTACHMENT_OUTPUT,
            valueReference: document,
          })),
        }),
  };
}
