// The JSON shapes of contract §6 as test types, and assertions that a response has exactly those
// fields (so a removed field such as patient.isHsgEnrolled cannot come back unnoticed).
import { expect } from 'vitest';
import { STATUSES, type Status } from '../../src/domain/statuses.ts';

export interface InstitutionJson {
  idType: string;
  id: string;
  name: string;
}

export interface OfferingJson {
  id: string;
  name: string;
  category: string;
  description: string;
  specialty: string;
  ehrCode: string;
  institution: InstitutionJson;
  system: string;
}

export interface SummaryJson {
  id: string;
  version: number;
  createdAt: string;
  updatedAt: string;
  submittedAt?: string;
  senderSystem: string;
  sender: InstitutionJson;
  offering: OfferingJson | null;
  patient: Record<string, unknown>;
  referrer: Record<string, unknown>;
  clinicalInfo: string | null;
  isUrgent: boolean;
  priority: { code: string; display: string; fhirPriority: string } | null;
  status: Status;
  coreStatus: string;
  isCancellable: boolean;
  allowedActions: string[];
  blockedActions: BlockedActionJson[];
  actionRequired?: { reason: string; description: string };
  redirectedFrom?: string;
  redirectedTo?: string;
}

export interface BlockedActionJson {
  action: string;
  reason: string;
  detail: string;
}

/** docs/api.md, "Allowed and blocked actions", transcribed. */
export const DOCUMENTED_ACTIONS = [
  'edit',
  'submit',
  'delete',
  'back-to-draft',
  'cancel',
  'redirect',
  'accept',
  'reject',
  'request-action',
  'upsert-appointment',
  'complete',
  'acknowledge-outcome',
  'add-note',
  'add-attachment',
];
/** The statuses in which the sender is asked to act, each with its documented reason. */
export const SENDER_ACTION_REASONS: Readonly<Partial<Record<Status, string>>> = {
  'sender-action-required': 'provider-request',
  completed: 'outcome-to-acknowledge',
};
const WITH_OUTCOME: readonly Status[] = ['completed', 'outcome-acknowledged'];
export const DOCUMENTED_BLOCK_REASONS = ['not-your-side', 'not-in-status', 'offering-not-cancellable'];

export interface AppointmentJson {
  id: string;
  status: string;
  startAt: string;
  location: string;
  updatedAt: string;
}

export interface LinkJson {
  type: string;
  label: string;
  url: string;
}

export interface NoteJson {
  id: string;
  content: string;
  authorName: string | null;
  authorInstitution: InstitutionJson;
  createdAt: string;
}

export interface TimelineEventJson {
  id: string;
  type: string;
  system: string;
  description: string;
  producedAt: string;
  /** The coded reason of a step given for one (reject, request-action, cancel, back-to-draft, redirect). */
  reason?: { code: string; display: string };
  /** A step copied into a redirect's successor: the referral it was taken on. */
  fromReferralId?: string;
}

export interface ReferralBody extends SummaryJson {
  appointments: AppointmentJson[];
  links: LinkJson[];
  notes: NoteJson[];
  timelineEvents: TimelineEventJson[];
  outcome?: Record<string, unknown> & { completedAt: string };
  ehrForwarding: { state: string; attempts: number; lastAttemptAt?: string; sha256?: string };
  ehrForm?: string;
  ehrFormType?: string;
}

export interface PageJson {
  data: SummaryJson[];
  metadata: { offset: number; pageSize: number; hasNext: boolean; total: number };
}

/** Contract §3, transcribed: the coreStatus each status is shown as. */
export const CONTRACT_CORE_STATUS: Readonly<Record<Status, string>> = {
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

export const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const SYSTEMS = ['Manual', 'HAS', 'Epic', 'PartnersBuddy'];

const SUMMARY_KEYS = [
  'id',
  'version',
  'createdAt',
  'updatedAt',
  'senderSystem',
  'sender',
  'offering',
  'patient',
  'referrer',
  'clinicalInfo',
  'isUrgent',
  'priority',
  'status',
  'coreStatus',
  'isCancellable',
  'allowedActions',
  'blockedActions',
];
const REFERRAL_KEYS = ['appointments', 'links', 'notes', 'timelineEvents', 'ehrForwarding'];

const keysOf = (value: unknown) => Object.keys(value as object).sort();
const sorted = (keys: readonly string[]) => [...keys].sort();

function expectSummaryFields(body: SummaryJson): void {
  expect(body.id).toMatch(UUID);
  expect(Number.isInteger(body.version) && body.version >= 1).toBe(true);
  expect(body.createdAt).toMatch(ISO_MS);
  expect(body.updatedAt).toMatch(ISO_MS);
  expect(STATUSES).toContain(body.status);
  // submittedAt is absent (not null) for drafts, present once submitted.
  if (body.status === 'draft') expect(body).not.toHaveProperty('submittedAt');
  else expect(body.submittedAt).toMatch(ISO_MS);
  expect(body.coreStatus).toBe(CONTRACT_CORE_STATUS[body.status]);
  if (body.redirectedTo !== undefined) expect(body.redirectedTo).toMatch(UUID);
  if (body.redirectedFrom !== undefined) expect(body.redirectedFrom).toMatch(UUID);
  expect(SYSTEMS).toContain(body.senderSystem);
  expect(keysOf(body.sender)).toEqual(['id', 'idType', 'name']);
  if (body.offering !== null) {
    expect(keysOf(body.offering)).toEqual(
      sorted(['id', 'name', 'category', 'description', 'specialty', 'ehrCode', 'institution', 'system']),
    );
    expect(keysOf(body.offering.institution)).toEqual(['id', 'idType', 'name']);
  }
  expect(keysOf(body.patient)).toEqual(
    sorted(['uin', 'name', 'dob', 'gender', 'nationality', 'phoneNumber', 'residentialStatus']),
  );
  expect(body.patient).not.toHaveProperty('isHsgEnrolled');
  expect(keysOf(body.referrer)).toEqual(sorted(['id', 'idType', 'name', 'email', 'contactNumber']));
  expect(typeof body.isUrgent).toBe('boolean');
  if (body.priority !== null) {
    expect(keysOf(body.priority)).toEqual(['code', 'display', 'fhirPriority']);
    // The priority decides the urgency.
    expect(body.isUrgent).toBe(body.priority.fhirPriority !== 'routine');
  }
  expect(typeof body.isCancellable).toBe('boolean');
  for (const action of body.allowedActions) expect(DOCUMENTED_ACTIONS).toContain(action);
  for (const blocked of body.blockedActions) {
    expect(keysOf(blocked)).toEqual(['action', 'detail', 'reason']);
    expect(DOCUMENTED_ACTIONS).toContain(blocked.action);
    expect(DOCUMENTED_BLOCK_REASONS).toContain(blocked.reason);
    expect(blocked.detail).toMatch(/^[A-Z].+\.$/);
  }
  // Each action at most once, in one list or the other.
  const listed = [...body.allowedActions, ...body.blockedActions.map((b) => b.action)];
  expect(new Set(listed).size).toBe(listed.length);
}

/**
 * The summary's keys for `body`: `submittedAt` once submitted, and `actionRequired` where the sender
 * is asked to act (only the sender gets it: present or not, it must be the documented one).
 */
function summaryKeys(body: SummaryJson): string[] {
  const reason = SENDER_ACTION_REASONS[body.status];
  if (body.actionRequired !== undefined) {
    expect(reason, `actionRequired in ${body.status}`).toBeDefined();
    expect(keysOf(body.actionRequired)).toEqual(['description', 'reason']);
    expect(body.actionRequired.reason).toBe(reason);
    expect(body.actionRequired.description).toMatch(/^[A-Z].+\.$/);
  }
  return [
    ...SUMMARY_KEYS,
    ...(body.status === 'draft' ? [] : ['submittedAt']),
    ...(body.actionRequired === undefined ? [] : ['actionRequired']),
    // A redirected referral names its successor, and only it; a successor names where it came from.
    ...(body.status === 'redirected' ? ['redirectedTo'] : []),
    ...(body.redirectedFrom === undefined ? [] : ['redirectedFrom']),
  ];
}

/** A ReferralSummary (list, delete, cancel, back-to-draft): exactly its fields. */
export function expectSummaryShape(value: unknown): SummaryJson {
  const body = value as SummaryJson;
  const keys = summaryKeys(body);
  expect(keysOf(body)).toEqual(sorted(keys));
  expectSummaryFields(body);
  return body;
}

/** A full Referral (get and the other writes): the summary plus its collections. */
export function expectReferralShape(value: unknown, options: { ehrForm?: boolean } = {}): ReferralBody {
  const body = value as ReferralBody;
  const keys = [
    ...summaryKeys(body),
    ...REFERRAL_KEYS,
    ...(WITH_OUTCOME.includes(body.status) ? ['outcome'] : []),
    ...(options.ehrForm === true ? ['ehrForm', 'ehrFormType'] : []),
  ];
  expect(keysOf(body)).toEqual(sorted(keys));
  expectSummaryFields(body);
  for (const a of body.appointments) {
    expect(keysOf(a)).toEqual(sorted(['id', 'status', 'startAt', 'location', 'updatedAt']));
    expect(a.startAt).toMatch(ISO_MS);
  }
  for (const l of body.links) {
    expect(keysOf(l)).toEqual(['label', 'type', 'url']);
  }
  for (const n of body.notes) {
    expect(keysOf(n)).toEqual(sorted(['id', 'content', 'authorName', 'authorInstitution', 'createdAt']));
    expect(keysOf(n.authorInstitution)).toEqual(['id', 'idType', 'name']);
  }
  for (const e of body.timelineEvents) {
    expect(keysOf(e)).toEqual(
      sorted([
        'id',
        'type',
        'system',
        'description',
        'producedAt',
        ...(e.reason === undefined ? [] : ['reason']),
        ...(e.fromReferralId === undefined ? [] : ['fromReferralId']),
      ]),
    );
    if (e.reason !== undefined) {
      expect(keysOf(e.reason)).toEqual(['code', 'display']);
      // The reason's words are in the sentence people read.
      expect(e.description).toContain(e.reason.display);
    }
    expect(e.producedAt).toMatch(ISO_MS);
    expect(SYSTEMS).toContain(e.system);
    // A sentence for people: capitalised, several words, and no event type inside it.
    expect(e.description).toMatch(/^[A-Z]\S* .+ .+/);
    expect(e.description).not.toMatch(/\b(referral|appt|note|ehr)\.[a-z-]+/);
  }
  if (body.outcome !== undefined) {
    expect(keysOf(body.outcome)).toEqual(
      sorted([
        'code',
        'display',
        'summary',
        'attachmentIds',
        'completedByName',
        'completedAt',
        ...(body.status === 'outcome-acknowledged' ? ['acknowledgedAt', 'acknowledgedByName'] : []),
      ]),
    );
    expect(body.outcome.completedAt).toMatch(ISO_MS);
  }
  const produced = body.timelineEvents.map((e) => e.producedAt);
  expect(produced, 'timelineEvents oldest first').toEqual([...produced].sort());
  expect(['not-sent', 'queued', 'forwarded', 'failed']).toContain(body.ehrForwarding.state);
  expect(Number.isInteger(body.ehrForwarding.attempts)).toBe(true);
  return body;
}
