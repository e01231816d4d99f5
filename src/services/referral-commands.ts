// Writes on referrals. Each command is a plan for the mutation runner: it asks the lifecycle table
// whether the operation is allowed, and says what changes and which sentences go on the timeline.
import { v7 as uuidv7 } from 'uuid';
import type { Kysely, Transaction } from 'kysely';
import { APPOINTMENT_WINDOW_YEARS, isWithinAppointmentWindow } from '../domain/appointment-window.ts';
import type { Clock } from '../domain/clock.ts';
import type { DisplayTime } from '../domain/display-time.ts';
import { decide } from '../domain/lifecycle.ts';
import type { NoteView, ReferralSummaryView, ReferralView } from '../domain/referral-view.ts';
import type { AppointmentStatus, Party } from '../domain/statuses.ts';
import { missingForSubmit } from '../domain/submission.ts';
import { timeline } from '../domain/timeline.ts';
import {
  ForbiddenRoleError,
  IncompleteReferralError,
  InvalidTransitionError,
  LimitExceededError,
  ValidationError,
} from '../errors.ts';
import { catalogRepository } from '../db/catalog.repository.ts';
import { appointmentRepository, noteRepository } from '../db/referral-children.repository.ts';
import { referralRepository, type ReferralRecord } from '../db/referral.repository.ts';
import type { Database } from '../db/schema.ts';
import type { Caller } from './caller.ts';
import type { LinkMinter } from './links-minter.ts';
import { writeTransaction } from './write-transaction.ts';
import { createMutationRunner, timelineEventsOf, type PlanContext } from './referral-mutation.ts';
import { auditEventOf } from '../db/audit.repository.ts';
import { changeLogRepository } from '../db/change-log.repository.ts';
import { reloadReferralView } from './referral-queries.ts';
import { toSummary } from './referral-presenter.ts';
import {
  EMPTY_CONTENT,
  fieldsIn,
  fieldWords,
  resolveContent,
  type ReferralFieldsInput,
} from './referral-input.ts';

export const MAX_NOTES = 200;
export const MAX_APPOINTMENTS = 50;

export interface CommandDeps {
  readonly db: Kysely<Database>;
  readonly clock: Clock;
  readonly links: LinkMinter;
  /** Writes the times in timeline sentences (an appointment's start) in the display zone. */
  readonly displayTime: DisplayTime;
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

export function createReferralCommands(deps: CommandDeps) {
  const mutate = createMutationRunner(deps);
  const fullView = (caller: Caller, id: string) => (trx: Transaction<Database>) =>
    reloadReferralView(trx, deps.links, caller, id);
  const summaryView = (caller: Caller, id: string) => async (trx: Transaction<Database>) =>
    toSummary(await referralRepository(trx).getVisible(id, caller.institution), caller);

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
      fullView(caller, id),
    );
  }

  return {
    async create(caller: Caller, input: ReferralFieldsInput): Promise<ReferralView> {
      if (caller.role !== 'sender')
        throw new ForbiddenRoleError(`A ${caller.role} key may not create referrals.`);
      return writeTransaction(deps.db, caller, async (trx) => {
        const id = await insertDraft(trx, deps.clock, caller, input, 'referral.create');
        return reloadReferralView(trx, deps.links, caller, id);
      });
    },

    update(caller: Caller, id: string, input: ReferralFieldsInput, ifMatch?: number): Promise<ReferralView> {
      return mutate(
        caller,
        id,
        'update',
        ifMatch,
        (ctx) => planUpdate(deps.clock, ctx, input, personIn(caller)),
        fullView(caller, id),
      );
    },

    submit(caller: Caller, id: string, ifMatch?: number): Promise<ReferralView> {
      return mutate(
        caller,
        id,
        'submit',
        ifMatch,
        async ({ record, party, now, trx }) => {
          const decision = decide('submit', party, statusInput(record));
          const missing = missingForSubmit({
            offeringId: record.offering?.id ?? null,
            patientName: record.patient.name,
            patientUin: record.patient.uin,
          });
          if (missing.length > 0 || record.offering === null) throw new IncompleteReferralError(missing);
          const offering = await catalogRepository(trx).findOffering(record.offering.id);
          if (!offering?.active) {
            throw new ValidationError([
              { path: 'offeringId', message: 'is no longer offered; choose another' },
            ]);
          }
          return {
            decision,
            patch: { submittedAt: record.submittedAt ?? now },
            events: [
              timeline.submitted(actorName(record, party, personIn(caller)), offering.institution.name),
            ],
          };
        },
        fullView(caller, id),
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
        (_trx, before) => Promise.resolve(toSummary(before, caller)),
      );
    },

    cancel(
      caller: Caller,
      id: string,
      input: { cancelNote: string; cancelledByName?: string | undefined },
      ifMatch?: number,
    ): Promise<ReferralSummaryView> {
      return mutate(
        caller,
        id,
        'cancel',
        ifMatch,
        async ({ record, party, trx }) => {
          const decision = decide('cancel', party, statusInput(record));
          const actor = actorName(record, party, input.cancelledByName);
          // Appointments change only through a compare-and-set on the referral, so the ones read here
          // are the ones cancelled below.
          const scheduled = (await appointmentRepository(trx).list(record.id)).filter(
            (a) => a.status === 'scheduled',
          );
          return {
            decision,
            events: [
              timeline.cancelled(actor, input.cancelNote),
              ...scheduled.map((a) =>
                timeline.appointment(actor, 'cancelled', a.startAt, a.location, deps.displayTime),
              ),
            ],
            writeChildren: async (tx, now) => {
              await appointmentRepository(tx).cancelScheduled(record.id, now);
            },
          };
        },
        summaryView(caller, id),
      );
    },

    backToDraft(caller: Caller, id: string, ifMatch?: number): Promise<ReferralSummaryView> {
      return mutate(
        caller,
        id,
        'back-to-draft',
        ifMatch,
        ({ record, party }) =>
          Promise.resolve({
            decision: decide('back-to-draft', party, statusInput(record)),
            patch: { submittedAt: null },
            events: [timeline.backToDraft(actorName(record, party))],
          }),
        summaryView(caller, id),
      );
    },

    accept(caller: Caller, id: string, ifMatch?: number, personName?: string): Promise<ReferralView> {
      return simple(caller, id, 'accept', ifMatch, timeline.accepted, personName);
    },

    reject(
      caller: Caller,
      id: string,
      reason: string,
      ifMatch?: number,
      personName?: string,
    ): Promise<ReferralView> {
      return simple(caller, id, 'reject', ifMatch, (actor) => timeline.rejected(actor, reason), personName);
    },

    requestAction(
      caller: Caller,
      id: string,
      reason: string,
      ifMatch?: number,
      personName?: string,
    ): Promise<ReferralView> {
      return simple(
        caller,
        id,
        'request-action',
        ifMatch,
        (actor) => timeline.actionRequested(actor, reason),
        personName,
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
        async ({ record, party, trx }) => {
          const existing = await appointmentRepository(trx).list(record.id);
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
          return {
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
            writeChildren: (tx, now) =>
              appointmentRepository(tx).upsert(
                record.id,
                { id: appointmentId, status: input.status, startAt, location: input.location },
                now,
              ),
          };
        },
        fullView(caller, id),
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
        async ({ record, party, trx }) => {
          const decision = decide('add-note', party, statusInput(record));
          if ((await noteRepository(trx).count(record.id)) >= MAX_NOTES) {
            throw new LimitExceededError(`A referral can have at most ${MAX_NOTES} notes.`);
          }
          return {
            decision,
            events: [timeline.noteAdded(actorName(record, party, input.authorName))],
            writeChildren: (tx, now) =>
              noteRepository(tx).insert({
                id: noteId,
                referralId: record.id,
                content: input.content,
                authorName: input.authorName?.trim() || null,
                authorInstitution: caller.institution,
                requesterIdentifier: caller.requesterIdentifier,
                system: caller.system,
                createdAt: now,
              }),
          };
        },
        (trx) => noteRepository(trx).get(noteId),
      );
    },
  };
}

/** Inserts a draft from `input`, with its `referral.created` event and audit row; returns its ID. */
export async function insertDraft(
  trx: Transaction<Database>,
  clock: Clock,
  caller: Caller,
  input: ReferralFieldsInput,
  auditAction: string,
): Promise<string> {
  const now = clock.now();
  const content = { ...EMPTY_CONTENT, ...(await resolveContent(trx, clock, input)) };
  const id = uuidv7();
  await referralRepository(trx).insert({
    id,
    sender: caller.institution,
    senderSystem: caller.system,
    now,
    ...content,
  });
  const sender = await catalogRepository(trx).findInstitution(caller.institution);
  await changeLogRepository(trx).record({
    timeline: timelineEventsOf(id, caller.system, [timeline.created(sender?.name ?? 'The sender')], now),
    outbox: [],
    audit: auditEventOf(caller, auditAction, [id], now),
  });
  return id;
}

function statusInput(record: ReferralRecord) {
  return { status: record.status, offeringCancellable: record.offering?.cancellable ?? true };
}

async function planUpdate(
  clock: Clock,
  { trx, record, party }: PlanContext,
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
  const patch = await resolveContent(trx, clock, input);
  const fields = fieldsIn(input);
  return {
    decision,
    patch,
    unchanged: fields.length === 0,
    events: [timeline.updated(actorName(record, party, person), fieldWords(fields))],
  };
}

export { planUpdate };
export type ReferralCommands = ReturnType<typeof createReferralCommands>;
