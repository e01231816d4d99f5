// Writes on referrals. Each command is a plan for the mutation runner: it asks the lifecycle table
// whether the operation is allowed, and says what changes and which sentences go on the timeline.
import { v7 as uuidv7 } from 'uuid';
import { APPOINTMENT_WINDOW_YEARS, isWithinAppointmentWindow } from '../../domain/appointment-window.ts';
import type { Clock } from '../../domain/clock.ts';
import type { DisplayTime } from '../../domain/display-time.ts';
import { isClinicalEvent } from '../../domain/clinical-events.ts';
import { decide, LIFECYCLE, OUTBOX_TOPICS, outboxTopics } from '../../domain/lifecycle.ts';
import type { OutcomeView } from '../../domain/outcome.ts';
import type { NoteView, ReferralSummaryView, ReferralView } from '../../domain/referral-view.ts';
import type { AppointmentStatus, Party } from '../../domain/statuses.ts';
import { missingForSubmit } from '../../domain/submission.ts';
import { timeline, type GivenReason } from '../../domain/timeline.ts';
import { checkReason, type ReasonAction } from '../../domain/reasons.ts';
import { resolvePriority, type PriorityRequest, type ReferralPriority } from '../../domain/priorities.ts';
import { isoDate, triageDueAt, triageWorkingDays, type TriageWithin } from '../../domain/worklists.ts';
import {
  ForbiddenRoleError,
  IncompleteReferralError,
  InvalidTransitionError,
  LimitExceededError,
  ValidationError,
} from '../../errors.ts';
import type { InstitutionRef } from '../../domain/access.ts';
import { auditEventOf } from '../../domain/audit.ts';
import type { OfferingRecord } from '../../db/catalog.repository.ts';
import type { AppointmentRecord } from '../../db/referrals/parts.ts';
import type { ReferralRecord, ReferralWithParts } from '../../db/referrals/rows.ts';
import type { PendingChange } from '../../db/referrals/change.ts';
import type { Stores } from '../../db/stores.ts';
import type { Caller } from '../caller.ts';
import type { LinkMinter } from '../links/minter.ts';
import {
  createMutationRunner,
  timelineEventsOf,
  timelineViewsOf,
  type Change,
  type PlanContext,
} from './mutation.ts';
import { referralAnswer } from './queries.ts';
import { toSummary } from './presenter.ts';
import { EMPTY_CONTENT, fieldsIn, fieldWords, resolveContent, type ReferralFieldsInput } from './input.ts';

export const MAX_NOTES = 200;
export const MAX_APPOINTMENTS = 50;

/** The stores a command reads and writes: the referral, the catalog it names, its files. */
export type CommandStores = Pick<Stores, 'referrals' | 'catalog' | 'attachments'>;

export interface CommandDeps {
  readonly stores: CommandStores;
  readonly clock: Clock;
  readonly links: LinkMinter;
  /** Writes the times in timeline sentences (an appointment's start) in the display zone. */
  readonly displayTime: DisplayTime;
}

export interface OutcomeInput {
  readonly outcomeCode: string;
  readonly summary?: string | undefined;
  /** The provider's own attachments of this referral that are part of the outcome. */
  readonly attachmentIds?: readonly string[] | undefined;
  readonly completedByName?: string | undefined;
}

/**
 * Why a step is taken: a code of the catalog's reasons (GET /api/v1/reason-codes), and what the person
 * wrote, under the body field the operation has for it (`reason`, `cancelNote` or `comment`).
 */
export interface ReasonInput {
  readonly reasonCode?: string | undefined;
  readonly comment?: string | undefined;
}

/** Where a redirect hands the referral on to, why, and who did it. */
export interface RedirectInput extends ReasonInput {
  /** The offering the successor is for: active, and not the referral's own. */
  readonly offeringId: string;
  /**
   * The successor's priority, a code the new offering takes; needed when it does not take the
   * referral's. Absent: the referral's own.
   */
  readonly priority?: string | undefined;
  readonly redirectedByName?: string | undefined;
}

export interface AppointmentInput {
  readonly status: AppointmentStatus;
  readonly startAt: string;
  readonly location: string;
}

/** How a party is named on the timeline: the person if the caller named one, with the institution. */
export function actorName(record: ReferralRecord, party: Party, personName?: string | null): string {
  const institution =
    party === 'sender' ? record.sender.name : (record.offering?.institution.name ?? 'The provider');
  const person = personName?.trim();
  return person ? `${person} (${institution})` : institution;
}

/** The person the timeline names for a caller who gave no name: a web-form user, by requester. */
export function personIn(caller: Caller): string | null {
  return caller.inWebForm === true ? caller.requesterIdentifier : null;
}

/**
 * When the triage of a referral submitted `now` is due, by the offering's service levels and the
 * catalog's holidays as they are now (domain/worklists.ts); null when the offering has none. Each
 * submission sets it afresh: time the referral spent with the sender does not count against the provider.
 */
async function triageDueFrom(
  deps: Pick<CommandDeps, 'stores' | 'displayTime'>,
  levels: TriageWithin | null,
  referral: Pick<ReferralRecord, 'priority' | 'isUrgent'>,
  now: Date,
): Promise<Date | null> {
  const days = triageWorkingDays(levels, referral);
  const today = deps.displayTime.calendarDate(now);
  if (days === null || today === undefined) return null;
  return triageDueAt(now, days, await deps.stores.catalog.holidaysFrom(isoDate(today)), deps.displayTime);
}

export function createReferralCommands(deps: CommandDeps) {
  const mutate = createMutationRunner({ referrals: deps.stores.referrals, clock: deps.clock });
  const fullView =
    (caller: Caller) =>
    ({ after }: Change) =>
      referralAnswer(deps.links, caller, after);
  const summaryView = (caller: Caller, of: 'before' | 'after') => (change: Change) => ({
    result: toSummary(change[of].record, caller),
    links: [],
  });

  /** A transition whose only change is the status and one timeline sentence. */
  function simple(
    caller: Caller,
    id: string,
    operation: 'accept' | 'reject' | 'request-action',
    ifMatch: number | undefined,
    sentence: (actor: string) => ReturnType<typeof timeline.accepted>,
    personName?: string | null,
  ): Promise<ReferralView> {
    return mutate(
      caller,
      id,
      operation,
      ifMatch,
      ({ record, party }) =>
        Promise.resolve({
          decision: decide(operation, party, statusInput(record)),
          events: [sentence(actorName(record, party, personName))],
        }),
      fullView(caller),
    );
  }

  return {
    async create(caller: Caller, input: ReferralFieldsInput): Promise<ReferralView> {
      if (caller.role !== 'sender')
        throw new ForbiddenRoleError(`A ${caller.role} key may not create referrals.`);
      const draft = await newDraft(deps.stores, deps.clock, caller, input, 'referral.create');
      const answer = referralAnswer(deps.links, caller, draft.after);
      await draft.change.write(answer, caller.idempotency);
      return answer.result;
    },

    update(caller: Caller, id: string, input: ReferralFieldsInput, ifMatch?: number): Promise<ReferralView> {
      return mutate(
        caller,
        id,
        'update',
        ifMatch,
        (ctx) => planUpdate(deps.stores.catalog, deps.clock, ctx, input, personIn(caller)),
        fullView(caller),
      );
    },

    submit(caller: Caller, id: string, ifMatch?: number): Promise<ReferralView> {
      return mutate(
        caller,
        id,
        'submit',
        ifMatch,
        async ({ record, party, now }) => {
          const decision = decide('submit', party, statusInput(record));
          const missing = missingForSubmit({
            offeringId: record.offering?.id ?? null,
            patientName: record.patient.name,
            patientUin: record.patient.uin,
          });
          if (missing.length > 0 || record.offering === null) throw new IncompleteReferralError(missing);
          // The read joined the offering as the catalog has it now.
          if (!record.offering.active) {
            throw new ValidationError([
              { path: 'offeringId', message: 'is no longer offered; choose another' },
            ]);
          }
          return {
            decision,
            patch: {
              submittedAt: record.submittedAt ?? now,
              triageDueAt: await triageDueFrom(deps, record.offering.triageWithin, record, now),
            },
            events: [
              timeline.submitted(
                actorName(record, party, personIn(caller)),
                record.offering.institution.name,
              ),
            ],
          };
        },
        fullView(caller),
      );
    },

    delete(caller: Caller, id: string, ifMatch?: number): Promise<ReferralSummaryView> {
      return mutate(
        caller,
        id,
        'delete',
        ifMatch,
        ({ record, party }) =>
          Promise.resolve({ decision: decide('delete', party, statusInput(record)), events: [] }),
        summaryView(caller, 'before'),
      );
    },

    async cancel(
      caller: Caller,
      id: string,
      input: {
        cancelNote?: string | undefined;
        reasonCode?: string | undefined;
        cancelledByName?: string | undefined;
      },
      ifMatch?: number,
    ): Promise<ReferralSummaryView> {
      const given = await checkedReason(
        deps.stores,
        'cancel',
        { reasonCode: input.reasonCode, comment: input.cancelNote },
        { field: 'cancelNote', needed: true },
      );
      return mutate(
        caller,
        id,
        'cancel',
        ifMatch,
        ({ record, parts, party, now }) => {
          const decision = decide('cancel', party, statusInput(record));
          const actor = actorName(record, party, input.cancelledByName);
          const scheduled = parts.appointments.filter((a) => a.status === 'scheduled');
          return Promise.resolve({
            decision,
            events: [
              timeline.cancelled(actor, given),
              ...scheduled.map((a) =>
                timeline.appointment(actor, 'cancelled', a.startAt, a.location, deps.displayTime),
              ),
            ],
            children: {
              changes: [{ kind: 'cancel-scheduled-appointments', now }],
              parts: (before) => ({
                ...before,
                appointments: before.appointments.map((a) =>
                  a.status === 'scheduled' ? { ...a, status: 'cancelled' as const, updatedAt: now } : a,
                ),
              }),
            },
          });
        },
        summaryView(caller, 'after'),
      );
    },

    async backToDraft(
      caller: Caller,
      id: string,
      ifMatch?: number,
      input: ReasonInput = {},
    ): Promise<ReferralSummaryView> {
      const given = await checkedReason(deps.stores, 'back-to-draft', input, {
        field: 'comment',
        needed: false,
      });
      return mutate(
        caller,
        id,
        'back-to-draft',
        ifMatch,
        ({ record, party }) =>
          Promise.resolve({
            decision: decide('back-to-draft', party, statusInput(record)),
            patch: { submittedAt: null },
            events: [timeline.backToDraft(actorName(record, party), given)],
          }),
        summaryView(caller, 'after'),
      );
    },

    /**
     * Accepts the referral; triage may change its priority on the way (`triage.priority`, one the
     * offering takes), which needs a comment saying why.
     */
    accept(
      caller: Caller,
      id: string,
      ifMatch?: number,
      personName?: string,
      triage: { priority?: string | undefined; comment?: string | undefined } = {},
    ): Promise<ReferralView> {
      if (triage.priority === undefined)
        return simple(caller, id, 'accept', ifMatch, timeline.accepted, personName);
      return mutate(
        caller,
        id,
        'accept',
        ifMatch,
        async ({ record, party }) => {
          const decision = decide('accept', party, statusInput(record));
          const actor = actorName(record, party, personName);
          if (triage.priority === record.priority?.code)
            return { decision, events: [timeline.accepted(actor)] };
          const comment = triage.comment?.trim() ? triage.comment : undefined;
          if (comment === undefined)
            throw new ValidationError([
              { path: 'body.comment', message: 'is required when triage changes the priority' },
            ]);
          const change = await checkedPriority(
            deps.stores.catalog,
            { priority: triage.priority },
            { offering: record.offering, offeringChanged: false, current: record.priority },
          );
          const to = change.priority;
          if (to === undefined || to === null)
            throw new Error('a priority was asked for and none was resolved');
          return {
            decision,
            patch: change,
            events: [
              timeline.acceptedWithPriority(actor, record.priority?.display ?? null, to.display, comment),
            ],
          };
        },
        fullView(caller),
      );
    },

    async reject(
      caller: Caller,
      id: string,
      input: ReasonInput,
      ifMatch?: number,
      personName?: string,
    ): Promise<ReferralView> {
      const given = await checkedReason(deps.stores, 'reject', input, { field: 'reason', needed: true });
      return simple(caller, id, 'reject', ifMatch, (actor) => timeline.rejected(actor, given), personName);
    },

    async requestAction(
      caller: Caller,
      id: string,
      input: ReasonInput,
      ifMatch?: number,
      personName?: string,
    ): Promise<ReferralView> {
      const given = await checkedReason(deps.stores, 'request-action', input, {
        field: 'reason',
        needed: true,
      });
      return simple(
        caller,
        id,
        'request-action',
        ifMatch,
        (actor) => timeline.actionRequested(actor, given),
        personName,
      );
    },

    /**
     * Ends the referral as `redirected` and hands it on to a successor at another offering, in one
     * statement: the successor is submitted, carries the patient, the referrer, the clinical
     * information, the priority and the files, opens its timeline with this referral's steps, and is
     * forwarded to the EHR, as this one's final state is. The answer is this referral, which names
     * its successor in `redirectedTo`.
     */
    async redirect(
      caller: Caller,
      id: string,
      input: RedirectInput,
      ifMatch?: number,
    ): Promise<ReferralView> {
      if (input.reasonCode === undefined)
        throw new ValidationError([{ path: 'body.reasonCode', message: 'is required' }]);
      const given = await checkedReason(deps.stores, 'redirect', input, { field: 'comment', needed: false });
      return mutate(
        caller,
        id,
        'redirect',
        ifMatch,
        async ({ record, parts, party, now }) => {
          const decision = decide('redirect', party, statusInput(record));
          const offering = await checkedRedirectOffering(deps.stores.catalog, record, input.offeringId);
          const priority = await checkedRedirectPriority(
            deps.stores.catalog,
            record,
            offering,
            input.priority,
          );
          const successorPriority = priority.priority === undefined ? record.priority : priority.priority;
          const successorUrgency = priority.isUrgent ?? record.isUrgent;
          const files = await deps.stores.attachments.list(record.id);
          const successorId = uuidv7();
          const actor = actorName(record, party, input.redirectedByName ?? personIn(caller));
          const to = `${offering.institution.name} (${offering.name})`;
          const from =
            record.offering === null
              ? 'another service'
              : `${record.offering.institution.name} (${record.offering.name})`;
          // The successor enters pending-acceptance as a submit leaves a referral: its forward and its
          // provider's reminders are due; and the scans its files still wait for.
          const topics = outboxTopics({ rule: LIFECYCLE.submit, next: 'pending-acceptance' }, 'draft');
          if (files.some((f) => f.scanState === 'pending-scan')) topics.push(OUTBOX_TOPICS.attachmentScan);
          return {
            decision,
            patch: { redirectedTo: successorId },
            events: [timeline.redirected(actor, to, given)],
            successor: {
              referral: {
                id: successorId,
                sender: { idType: record.sender.idType, id: record.sender.id },
                senderSystem: record.senderSystem,
                now,
                redirectedFrom: record.id,
                offeringId: offering.id,
                providerIdType: offering.institution.idType,
                providerId: offering.institution.id,
                patientUin: record.patient.uin,
                patientName: record.patient.name,
                patientDob: record.patient.dob,
                patientGender: record.patient.gender,
                patientNationality: record.patient.nationality,
                patientPhoneNumber: record.patient.phoneNumber,
                patientResidentialStatus: record.patient.residentialStatus,
                referrerId: record.referrer.id,
                referrerIdType: record.referrer.idType,
                referrerName: record.referrer.name,
                referrerEmail: record.referrer.email,
                referrerContactNumber: record.referrer.contactNumber,
                clinicalInfo: record.clinicalInfo,
                isUrgent: successorUrgency,
                priority: successorPriority,
                // Its triage is due by its new offering's service level, counted from now.
                triageDueAt: await triageDueFrom(
                  deps,
                  offering.triageWithin,
                  { priority: successorPriority, isUrgent: successorUrgency },
                  now,
                ),
              },
              offering,
              senderName: record.sender.name,
              // What people did; refhub's bookkeeping (this referral's deliveries, its reminders) is
              // not the successor's history.
              history: parts.timelineEvents.filter((e) => isClinicalEvent(e.type)),
              events: [timeline.redirectedHere(actor, from, to, given)],
              attachments: files.map((f) => ({ id: uuidv7(), from: f.id, fileName: f.fileName })),
              outbox: topics,
            },
          };
        },
        fullView(caller),
      );
    },

    upsertAppointment(
      caller: Caller,
      id: string,
      appointmentId: string,
      input: AppointmentInput,
      ifMatch?: number,
    ): Promise<ReferralView> {
      const startAt = new Date(input.startAt);
      if (!isWithinAppointmentWindow(startAt, deps.clock.now())) {
        throw new ValidationError([
          { path: 'body.startAt', message: `must be within ${APPOINTMENT_WINDOW_YEARS} years of now` },
        ]);
      }
      return mutate(
        caller,
        id,
        'upsert-appointment',
        ifMatch,
        ({ record, parts, party, now }) => {
          const existing = parts.appointments;
          const previous = existing.find((a) => a.id === appointmentId);
          if (!previous && existing.length >= MAX_APPOINTMENTS) {
            throw new LimitExceededError(`A referral can have at most ${MAX_APPOINTMENTS} appointments.`);
          }
          const statuses = [
            ...existing.filter((a) => a.id !== appointmentId).map((a) => a.status),
            input.status,
          ];
          const decision = decide('upsert-appointment', party, {
            ...statusInput(record),
            appointmentStatuses: statuses,
          });
          const unchanged =
            previous !== undefined &&
            previous.status === input.status &&
            previous.startAt.getTime() === startAt.getTime() &&
            previous.location === input.location;
          const appointment = { id: appointmentId, status: input.status, startAt, location: input.location };
          return Promise.resolve({
            decision,
            unchanged,
            events: [
              timeline.appointment(
                actorName(record, party),
                input.status,
                startAt,
                input.location,
                deps.displayTime,
              ),
            ],
            children: {
              changes: [{ kind: 'upsert-appointment', appointment, now }],
              parts: (before) => ({
                ...before,
                appointments: inAppointmentOrder([
                  ...before.appointments.filter((a) => a.id !== appointmentId),
                  { ...appointment, updatedAt: now },
                ]),
              }),
            },
          });
        },
        fullView(caller),
      );
    },

    complete(caller: Caller, id: string, input: OutcomeInput, ifMatch?: number): Promise<ReferralView> {
      return mutate(
        caller,
        id,
        'complete',
        ifMatch,
        async ({ record, party, now }) => {
          const decision = decide('complete', party, statusInput(record));
          const outcome = await checkedOutcome(deps.stores, record.id, input);
          const completedByName = input.completedByName?.trim() || personIn(caller);
          const view: OutcomeView = {
            code: outcome.code,
            display: outcome.display,
            summary: outcome.summary,
            attachmentIds: [...outcome.attachmentIds],
            completedByName,
            completedAt: now.toISOString(),
          };
          return {
            decision,
            events: [
              timeline.completed(
                actorName(record, party, completedByName),
                outcome.display,
                outcome.attachmentIds.length,
              ),
            ],
            children: {
              changes: [
                {
                  kind: 'add-outcome',
                  outcome: {
                    ...outcome,
                    referralId: record.id,
                    completedByName,
                    requesterIdentifier: caller.requesterIdentifier,
                    system: caller.system,
                    completedAt: now,
                  },
                },
              ],
              parts: (before) => ({ ...before, outcome: view }),
            },
          };
        },
        fullView(caller),
      );
    },

    acknowledgeOutcome(
      caller: Caller,
      id: string,
      input: { acknowledgedByName?: string | undefined },
      ifMatch?: number,
    ): Promise<ReferralView> {
      return mutate(
        caller,
        id,
        'acknowledge-outcome',
        ifMatch,
        ({ record, parts, party, now }) => {
          const decision = decide('acknowledge-outcome', party, statusInput(record));
          const byName = input.acknowledgedByName?.trim() || personIn(caller);
          const outcome = parts.outcome;
          // The table lets the sender acknowledge only a completed referral, which has its outcome.
          if (outcome === null) throw new Error(`referral ${record.id} is completed without an outcome`);
          return Promise.resolve({
            decision,
            events: [timeline.outcomeAcknowledged(actorName(record, party, byName))],
            children: {
              changes: [{ kind: 'acknowledge-outcome', byName, now }],
              parts: (before) => ({
                ...before,
                outcome: { ...outcome, acknowledgedAt: now.toISOString(), acknowledgedByName: byName },
              }),
            },
          });
        },
        fullView(caller),
      );
    },

    addNote(
      caller: Caller,
      id: string,
      input: { content: string; authorName?: string | undefined },
      ifMatch?: number,
    ): Promise<NoteView> {
      const noteId = uuidv7();
      return mutate(
        caller,
        id,
        'add-note',
        ifMatch,
        ({ record, parts, party, now }) => {
          const decision = decide('add-note', party, statusInput(record));
          if (parts.notes.length >= MAX_NOTES) {
            throw new LimitExceededError(`A referral can have at most ${MAX_NOTES} notes.`);
          }
          const note = {
            id: noteId,
            referralId: record.id,
            content: input.content,
            authorName: input.authorName?.trim() || null,
            authorInstitution: caller.institution,
            requesterIdentifier: caller.requesterIdentifier,
            system: caller.system,
            createdAt: now,
          };
          const view: NoteView = {
            id: note.id,
            content: note.content,
            authorName: note.authorName,
            authorInstitution: {
              idType: caller.institution.idType,
              id: caller.institution.id,
              name: institutionName(record, caller.institution),
            },
            createdAt: now.toISOString(),
          };
          return Promise.resolve({
            decision,
            events: [timeline.noteAdded(actorName(record, party, input.authorName))],
            children: {
              changes: [{ kind: 'add-note', note }],
              parts: (before) => ({ ...before, notes: [...before.notes, view] }),
            },
          });
        },
        ({ after }) => {
          const note = after.parts.notes.find((n) => n.id === noteId);
          if (!note) throw new Error(`note ${noteId} is missing from its answer`);
          return { result: note, links: [] };
        },
      );
    },
  };
}

/** Appointments in the order a read lists them: by start, then ID in byte order (`collate "C"`). */
function inAppointmentOrder(appointments: AppointmentRecord[]): AppointmentRecord[] {
  return appointments.sort(
    (a, b) => a.startAt.getTime() - b.startAt.getTime() || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0),
  );
}

/** The name of the referral's party that `institution` is: the sender's, or the provider's. */
export function institutionName(record: ReferralRecord, institution: InstitutionRef): string {
  const isSender = record.sender.idType === institution.idType && record.sender.id === institution.id;
  return isSender ? record.sender.name : (record.offering?.institution.name ?? '');
}

/**
 * A new draft from `input`, with its `referral.created` event and audit row, as a change to write in
 * one statement, and the draft as a read after that statement returns it.
 */
export async function newDraft(
  stores: Pick<Stores, 'referrals' | 'catalog'>,
  clock: Clock,
  caller: Caller,
  input: ReferralFieldsInput,
  auditAction: string,
): Promise<{ change: PendingChange; after: ReferralWithParts }> {
  const now = clock.now();
  // The offering and the sender's name in one read.
  const catalog = await stores.catalog.forNewDraft(input.offeringId, caller.institution);
  const { content, offering = null } = await resolveContent(clock, input, () =>
    Promise.resolve(catalog.offering),
  );
  const priority = await checkedPriority(stores.catalog, input, {
    offering,
    offeringChanged: false,
    current: null,
  });
  const id = uuidv7();
  const events = timelineEventsOf(
    id,
    caller.system,
    [timeline.created(catalog.senderName ?? 'The sender')],
    now,
  );
  const change = stores.referrals.change({
    referral: {
      kind: 'insert',
      referral: {
        id,
        sender: caller.institution,
        senderSystem: caller.system,
        now,
        ...EMPTY_CONTENT,
        ...content,
        ...priority,
      },
      names: { sender: catalog.senderName ?? '', offering },
    },
    timeline: events,
    outbox: [],
    audit: auditEventOf(caller, auditAction, [id], now),
  });
  if (change.after === undefined) throw new Error('a new draft has no record');
  return {
    change,
    after: {
      record: change.after,
      parts: { appointments: [], notes: [], outcome: null, timelineEvents: timelineViewsOf(events) },
    },
  };
}

/**
 * The priority and urgency `input` leaves the referral with, checked against the catalog's priorities
 * and the offering the referral will have (domain/priorities.ts): the columns to write.
 */
async function checkedPriority(
  catalog: Pick<Stores['catalog'], 'listPriorityCodes'>,
  input: ReferralFieldsInput,
  context: Pick<PriorityRequest, 'offering' | 'offeringChanged' | 'current'>,
): Promise<{ priority?: ReferralPriority | null; isUrgent?: boolean }> {
  // Nothing to check (and no read of the catalog) unless the request touches the priority: sets it,
  // moves the referral to another offering, or sends an urgency a priority decides.
  const touches =
    input.priority !== undefined ||
    context.offeringChanged ||
    (context.current !== null && input.isUrgent !== undefined && input.isUrgent !== null);
  if (!touches) return {};
  const { change, problems } = resolvePriority(await catalog.listPriorityCodes(), {
    ...context,
    priority: input.priority,
    isUrgent: input.isUrgent,
  });
  if (problems.length > 0)
    throw new ValidationError(problems.map((p) => ({ path: `body.${p.field}`, message: p.message })));
  return change;
}

/**
 * The reason `input` gives for `action`, checked against the catalog's reasons: a code in use for the
 * action, and the comment its code requires, under the body field `comment.field`. An operation whose
 * comment was required before reasons had codes (`comment.needed`) takes a code, a comment or both.
 */
async function checkedReason(
  stores: CommandStores,
  action: ReasonAction,
  input: ReasonInput,
  comment: { readonly field: string; readonly needed: boolean },
): Promise<GivenReason> {
  const text = input.comment?.trim() ? input.comment : undefined;
  if (input.reasonCode === undefined) {
    // As before reasons had codes: the comment is what is missing, and a code would also do.
    if (comment.needed && text === undefined) {
      throw new ValidationError(
        [{ path: `body.${comment.field}`, message: 'is required' }],
        `body.${comment.field} is required, or a reasonCode of GET /api/v1/reason-codes`,
      );
    }
    return { comment: text };
  }
  const checked = checkReason(await stores.catalog.listReasonCodes(), action, {
    reasonCode: input.reasonCode,
    comment: text,
  });
  if (checked.problems.length > 0) {
    throw new ValidationError(
      checked.problems.map((p) => ({
        path: `body.${p.field === 'comment' ? comment.field : 'reasonCode'}`,
        message: p.message,
      })),
    );
  }
  return { reason: checked.reason, comment: text };
}

/**
 * The outcome `input` names, checked against the catalog and the referral's files: a code the catalog
 * offers now, the summary it requires, and files the provider itself added that the scanner did not
 * reject, each named once.
 */
async function checkedOutcome(stores: CommandStores, referralId: string, input: OutcomeInput) {
  const code = await stores.catalog.findOutcomeCode(input.outcomeCode);
  const problems: { path: string; message: string }[] = [];
  if (code === undefined || !code.active) {
    problems.push({
      path: 'body.outcomeCode',
      message: `is not an outcome the catalog offers (GET /api/v1/outcome-codes lists them)`,
    });
  }
  const summary = input.summary?.trim() ? input.summary : null;
  if (code?.summaryRequired === true && summary === null) {
    problems.push({ path: 'body.summary', message: `is required with outcome ${code.code}` });
  }
  const ids = input.attachmentIds ?? [];
  if (ids.length > 0) {
    const files = new Map((await stores.attachments.list(referralId)).map((a) => [a.id, a]));
    ids.forEach((fileId, index) => {
      const file = files.get(fileId);
      const path = `body.attachmentIds.${index}`;
      if (ids.indexOf(fileId) !== index) problems.push({ path, message: 'names a file twice' });
      else if (file === undefined) problems.push({ path, message: 'is not an attachment of this referral' });
      else if (file.addedBy !== 'provider')
        problems.push({ path, message: "is the sender's attachment; name the provider's own files" });
      else if (file.scanState === 'rejected')
        problems.push({ path, message: 'was rejected by the malware scan' });
    });
  }
  if (problems.length > 0 || code === undefined) throw new ValidationError(problems);
  return { code: code.code, display: code.display, summary, attachmentIds: ids };
}

/**
 * The offering a redirect names, as the catalog has it: one it offers now, and not the referral's
 * own. Refusals name `body.offeringId` and never quote it.
 */
async function checkedRedirectOffering(
  catalog: Pick<Stores['catalog'], 'findOffering'>,
  record: ReferralRecord,
  offeringId: string,
) {
  const offering = await catalog.findOffering(offeringId);
  const refuse = (message: string) => new ValidationError([{ path: 'body.offeringId', message }]);
  if (offering === undefined) throw refuse('is not a known offering');
  if (!offering.active) throw refuse('is no longer offered; choose another');
  if (offering.id === record.offering?.id)
    throw refuse("is the referral's own offering; redirect it to another");
  return offering;
}

/**
 * The successor's priority: the one the body gives (a code the new offering takes), or else the
 * referral's, which the new offering must take. A priority it does not take names the field that can
 * fix it: `body.priority` when one was given, `body.offeringId` when none was.
 */
async function checkedRedirectPriority(
  catalog: Pick<Stores['catalog'], 'listPriorityCodes'>,
  record: ReferralRecord,
  offering: OfferingRecord,
  priority: string | undefined,
): Promise<{ priority?: ReferralPriority | null; isUrgent?: boolean }> {
  // A referral without a priority (made before priorities) keeps its isUrgent, as an update does.
  if (priority === undefined && record.priority === null) return {};
  const { change, problems } = resolvePriority(await catalog.listPriorityCodes(), {
    priority,
    isUrgent: undefined,
    offering,
    offeringChanged: true,
    current: record.priority,
  });
  if (problems.length > 0) {
    if (priority === undefined && record.priority !== null) {
      throw new ValidationError([
        {
          path: 'body.offeringId',
          message:
            `does not take the referral's priority ${record.priority.display}; ` +
            'give a priority it takes (GET /api/v1/priorities)',
        },
      ]);
    }
    throw new ValidationError(problems.map((p) => ({ path: `body.${p.field}`, message: p.message })));
  }
  return change;
}

function statusInput(record: ReferralRecord) {
  return { status: record.status, offeringCancellable: record.offering?.cancellable ?? true };
}

async function planUpdate(
  catalog: Pick<Stores['catalog'], 'findOffering' | 'listPriorityCodes'>,
  clock: Clock,
  { record, party }: PlanContext,
  input: ReferralFieldsInput,
  person: string | null = null,
) {
  const decision = decide('update', party, statusInput(record));
  // The offering decides the provider. Once submitted, changing it would hand the referral (and the
  // patient's data) to another institution behind the back of the one that asked the sender to act.
  if (
    input.offeringId !== undefined &&
    input.offeringId !== (record.offering?.id ?? null) &&
    record.status !== 'draft'
  ) {
    throw new InvalidTransitionError(
      record.status,
      'offering-locked',
      'The offering can change only while the referral is a draft; return it to draft first.',
    );
  }
  const { content, offering } = await resolveContent(clock, input, (id) => catalog.findOffering(id));
  const priority = await checkedPriority(catalog, input, {
    offering: offering === undefined ? record.offering : offering,
    offeringChanged: offering !== undefined && (offering?.id ?? null) !== (record.offering?.id ?? null),
    current: record.priority,
  });
  const fields = fieldsIn(input);
  return {
    decision,
    patch: { ...content, ...priority },
    ...(offering === undefined ? {} : { offering }),
    unchanged: fields.length === 0,
    events: [timeline.updated(actorName(record, party, person), fieldWords(fields))],
  };
}

export { planUpdate, statusInput };
export type ReferralCommands = ReturnType<typeof createReferralCommands>;
