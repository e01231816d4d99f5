// Reads: one referral in full, and the list of an institution's referrals. Each read is audited in
// the same transaction, and a full read mints the one-time links the requester may use now.
import type { Kysely, Transaction } from 'kysely';
import { partiesOf } from '../domain/access.ts';
import type { Clock } from '../domain/clock.ts';
import { linkActionsFor } from '../domain/links.ts';
import type { EhrFormSource, ReferralSummaryView, ReferralView } from '../domain/referral-view.ts';
import type { CoreStatus } from '../domain/statuses.ts';
import {
  appointmentRepository,
  noteRepository,
  timelineRepository,
  toAppointmentView,
} from '../db/referral-children.repository.ts';
import { referralRepository, type ListSort, type ReferralRecord } from '../db/referral.repository.ts';
import type { Database } from '../db/schema.ts';
import type { Caller } from './caller.ts';
import type { LinkMinter } from './link-minter.ts';
import { audit } from './referral-mutation.ts';
import { toEhrForwarding, toSummary } from './referral-presenter.ts';

export interface QueryDeps {
  readonly db: Kysely<Database>;
  readonly clock: Clock;
  readonly links: LinkMinter;
  readonly renderEhrForm: (source: EhrFormSource) => { html: string; formType: string };
}

export interface ListQuery {
  readonly side?: 'sender' | 'provider';
  readonly coreStatuses: readonly CoreStatus[];
  readonly patientUin?: string;
  readonly sort: ListSort;
  readonly offset: number;
  readonly pageSize: number;
}

export interface ReferralPage {
  readonly data: ReferralSummaryView[];
  readonly metadata: { offset: number; pageSize: number; hasNext: boolean; total: number };
}

/** The full referral as the caller sees it, with links minted for the caller's requester. */
export async function loadReferralView(
  trx: Transaction<Database>,
  links: LinkMinter,
  caller: Caller,
  record: ReferralRecord,
): Promise<ReferralView> {
  const [appointments, notes, timelineEvents] = await Promise.all([
    appointmentRepository(trx).list(record.id),
    noteRepository(trx).list(record.id),
    timelineRepository(trx).list(record.id),
  ]);
  const minted =
    caller.requesterIdentifier === null
      ? []
      : await links.mint(
          trx,
          {
            referralId: record.id,
            institution: caller.institution,
            requesterIdentifier: caller.requesterIdentifier,
            apiKeyId: caller.apiKeyId,
          },
          linkActionsFor(record.status, partiesOf(record, caller.institution)),
        );
  return {
    ...toSummary(record),
    appointments: appointments.map(toAppointmentView),
    links: minted.map(({ type, label, url }) => ({ type, label, url })),
    notes,
    timelineEvents,
    ehrForwarding: toEhrForwarding(record),
  };
}

/** Reads the referral again inside the transaction (after a write) and presents it. */
export async function reloadReferralView(
  trx: Transaction<Database>,
  links: LinkMinter,
  caller: Caller,
  referralId: string,
): Promise<ReferralView> {
  const record = await referralRepository(trx).getVisible(referralId, caller.institution);
  return loadReferralView(trx, links, caller, record);
}

/** The form is drawn from the stored referral only, never from per-caller links or forwarding state. */
export function ehrFormSourceOf(view: ReferralView): EhrFormSource {
  return {
    id: view.id,
    version: view.version,
    createdAt: view.createdAt,
    updatedAt: view.updatedAt,
    ...(view.submittedAt === undefined ? {} : { submittedAt: view.submittedAt }),
    senderSystem: view.senderSystem,
    sender: view.sender,
    offering: view.offering,
    patient: view.patient,
    referrer: view.referrer,
    clinicalInfo: view.clinicalInfo,
    isUrgent: view.isUrgent,
    status: view.status,
    coreStatus: view.coreStatus,
    isCancellable: view.isCancellable,
    appointments: view.appointments,
    notes: view.notes,
    timelineEvents: view.timelineEvents,
  };
}

export function createReferralQueries(deps: QueryDeps) {
  return {
    async get(caller: Caller, referralId: string, options: { ehrForm: boolean }): Promise<ReferralView> {
      const view = await deps.db.transaction().execute(async (trx) => {
        const record = await referralRepository(trx).getVisible(referralId, caller.institution);
        const loaded = await loadReferralView(trx, deps.links, caller, record);
        await audit(
          trx,
          caller,
          options.ehrForm ? 'referral.read-ehr-form' : 'referral.read',
          [record.id],
          deps.clock.now(),
        );
        return loaded;
      });
      if (!options.ehrForm) return view;
      // Rendering happens outside the transaction, from the state read at one version.
      const form = deps.renderEhrForm(ehrFormSourceOf(view));
      return { ...view, ehrForm: form.html, ehrFormType: form.formType };
    },

    async list(
      caller: Caller,
      query: ListQuery,
      action: 'referral.list' | 'referral.search' = 'referral.list',
    ): Promise<ReferralPage> {
      return deps.db.transaction().execute(async (trx) => {
        const page = await referralRepository(trx).list({ institution: caller.institution, ...query });
        await audit(
          trx,
          caller,
          action,
          page.records.map((r) => r.id),
          deps.clock.now(),
        );
        return {
          data: page.records.map(toSummary),
          metadata: {
            offset: query.offset,
            pageSize: query.pageSize,
            hasNext: page.hasNext,
            total: page.total,
          },
        };
      });
    },
  };
}

export type ReferralQueries = ReturnType<typeof createReferralQueries>;
