// Reads: one referral in full, and the list of an institution's referrals. Each read is audited, and
// a full read mints the one-time links the requester may use now; what a read writes is stored, in
// one statement, before anything it read is handed out.
import { partiesOf } from '../../domain/access.ts';
import type { Clock } from '../../domain/clock.ts';
import { LINK_STATUSES, linkActionsFor } from '../../domain/links.ts';
import type {
  EhrFormSource,
  LinkAction,
  LinkView,
  ReferralSummaryView,
  ReferralView,
} from '../../domain/referral-view.ts';
import type { CoreStatus } from '../../domain/statuses.ts';
import { toAppointmentView, type ReferralParts } from '../../db/referrals/parts.ts';
import { auditEventOf } from '../../domain/audit.ts';
import {
  isTriageOverdue,
  WORKLISTS,
  type WorklistCountView,
  type WorklistItemView,
  type WorklistName,
} from '../../domain/worklists.ts';
import type { NewLinkToken } from '../../db/links.repository.ts';
import { type ListSort, type ReferralRecord, type ReferralWithParts } from '../../db/referrals/rows.ts';
import { ReferralNotFoundError } from '../../errors.ts';
import type { Stores } from '../../db/stores.ts';
import type { Caller } from '../caller.ts';
import type { LinkMinter } from '../links/minter.ts';
import { toEhrForwarding, toStoredSummary, toSummary } from './presenter.ts';

export interface QueryDeps {
  /** The referral, its files (a form shows them) and the forms sent to the EHR. */
  readonly stores: {
    readonly referrals: Pick<Stores['referrals'], 'readAudited' | 'list' | 'worklist' | 'worklistCounts'>;
    readonly attachments: Pick<Stores['attachments'], 'readable'>;
    readonly forwarding: { readonly forms: Pick<Stores['forwarding']['forms'], 'ofVersion'> };
  };
  readonly clock: Clock;
  readonly links: LinkMinter;
  readonly renderEhrForm: (source: EhrFormSource) => { html: string; formType: string };
}

export interface ListQuery {
  readonly side?: 'sender' | 'provider';
  readonly coreStatuses: readonly CoreStatus[];
  /** Priority codes: only referrals with one of them (none: any priority, or none). */
  readonly priorities?: readonly string[];
  readonly patientUin?: string;
  readonly sort: ListSort;
  readonly offset: number;
  readonly pageSize: number;
}

/** A page of a worklist: its items and the list's paging. */
export interface WorklistPage {
  readonly data: WorklistItemView[];
  readonly metadata: ReferralPage['metadata'];
}

export interface ReferralPage {
  readonly data: ReferralSummaryView[];
  readonly metadata: { offset: number; pageSize: number; hasNext: boolean; total: number };
}

/** What accumulates on a referral after it is written, as the views present it. */
function presentParts({ appointments, notes, outcome, timelineEvents }: ReferralParts) {
  return {
    appointments: appointments.map(toAppointmentView),
    notes,
    ...(outcome === null ? {} : { outcome }),
    timelineEvents,
  };
}

/**
 * A link of every action for the caller's requester, each with the statuses it applies in, for a read
 * that stores those that apply; none for a caller without a requester, or in the web form.
 */
function offeredLinks(links: LinkMinter, caller: Caller, referralId: string) {
  if (caller.requesterIdentifier === null || caller.inWebForm === true) return { candidates: [], links: [] };
  const prepared = links.prepare(
    {
      referralId,
      institution: caller.institution,
      requesterIdentifier: caller.requesterIdentifier,
      apiKeyId: caller.apiKeyId,
    },
    Object.keys(LINK_STATUSES) as LinkAction[],
  );
  return {
    candidates: prepared.rows.map((token) => ({ token, ...LINK_STATUSES[token.action] })),
    links: prepared.links,
  };
}

/** The links the caller's requester may use now; none for a caller without one, or in the web form. */
function linksFor(links: LinkMinter, caller: Caller, record: ReferralRecord) {
  if (caller.requesterIdentifier === null || caller.inWebForm === true) return { rows: [], links: [] };
  return links.prepare(
    {
      referralId: record.id,
      institution: caller.institution,
      requesterIdentifier: caller.requesterIdentifier,
      apiKeyId: caller.apiKeyId,
    },
    linkActionsFor(record.status, partiesOf(record, caller.institution)),
  );
}

function presentReferral(
  caller: Caller,
  { record, parts }: ReferralWithParts,
  minted: readonly LinkView[],
): ReferralView {
  return {
    ...toSummary(record, caller),
    ...presentParts(parts),
    links: minted.map(({ type, label, url }) => ({ type, label, url })),
    ehrForwarding: toEhrForwarding(record),
  };
}

/**
 * The full referral as the caller sees it, with links for the caller's requester, and the rows that
 * make those links valid: the write that answers with it stores them in its statement.
 */
export function referralAnswer(
  links: LinkMinter,
  caller: Caller,
  found: ReferralWithParts,
): { result: ReferralView; links: NewLinkToken[] } {
  const minted = linksFor(links, caller, found.record);
  return { result: presentReferral(caller, found, minted.links), links: minted.rows };
}

/** The form's source for a referral read for the system (the forwarder), not for a caller. */
export function ehrFormSourceFor({ record, parts }: ReferralWithParts): EhrFormSource {
  return ehrFormSourceOf({ ...toStoredSummary(record), ...presentParts(parts) });
}

/** The form is drawn from the stored referral only, never from per-caller links or forwarding state. */
export function ehrFormSourceOf(view: EhrFormSource): EhrFormSource {
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
    priority: view.priority,
    status: view.status,
    coreStatus: view.coreStatus,
    isCancellable: view.isCancellable,
    ...(view.redirectedFrom === undefined ? {} : { redirectedFrom: view.redirectedFrom }),
    ...(view.redirectedTo === undefined ? {} : { redirectedTo: view.redirectedTo }),
    appointments: view.appointments,
    notes: view.notes,
    ...(view.outcome === undefined ? {} : { outcome: view.outcome }),
    timelineEvents: view.timelineEvents,
  };
}

export function createReferralQueries(deps: QueryDeps) {
  return {
    async get(caller: Caller, referralId: string, options: { ehrForm: boolean }): Promise<ReferralView> {
      // A read writes two things: its audit row and the links it hands out. They are written by the
      // statement that reads the referral, so both are stored or neither is, and they are committed
      // before any data leaves; if that fails, the caller gets an error and no data. The links the
      // caller may use depend on the status read, so every action's link is offered with the statuses
      // it applies in, and the statement stores those that apply. One round trip, no transaction.
      const offered = offeredLinks(deps.links, caller, referralId);
      const found = await deps.stores.referrals.readAudited(
        referralId,
        caller.institution,
        auditEventOf(
          caller,
          options.ehrForm ? 'referral.read-ehr-form' : 'referral.read',
          [referralId],
          deps.clock.now(),
        ),
        offered.candidates,
      );
      if (!found) throw new ReferralNotFoundError(referralId);
      const shown = linkActionsFor(found.record.status, partiesOf(found.record, caller.institution))
        .filter((action) => found.linked.includes(action))
        .flatMap((action) => offered.links.filter((link) => link.type === action));
      const view = presentReferral(caller, found, shown);
      if (!options.ehrForm) return view;
      // A version that was sent to the EHR answers with the bytes that were sent: the ledger's hash
      // holds for them whatever changed since (a catalog name, the templates in an upgrade). Any other
      // version is rendered now, after the audit row is stored, from the state read at that version;
      // it is what the forward will send.
      const sent =
        found.record.ehr.state === 'not-sent'
          ? undefined
          : await deps.stores.forwarding.forms.ofVersion(view.id, view.version);
      const form =
        sent ??
        deps.renderEhrForm({
          ...ehrFormSourceOf(view),
          attachments: await deps.stores.attachments.readable(view.id),
        });
      return { ...view, ehrForm: form.html, ehrFormType: form.formType };
    },

    /**
     * The referral as stored, for another representation of a full read (the FHIR view): audited
     * under `action`, with no one-time links minted (they are buttons for a client's screen) and no
     * form rendered. As for `get`, the audit row is stored before anything read is handed out.
     */
    async getContent(caller: Caller, referralId: string, action: string): Promise<EhrFormSource> {
      const found = await deps.stores.referrals.readAudited(
        referralId,
        caller.institution,
        auditEventOf(caller, action, [referralId], deps.clock.now()),
        [],
      );
      if (!found) throw new ReferralNotFoundError(referralId);
      return ehrFormSourceFor(found);
    },

    async list(
      caller: Caller,
      query: ListQuery,
      action: 'referral.list' | 'referral.search' = 'referral.list',
    ): Promise<ReferralPage> {
      // As for a full read: the audit row is the list's only write, written by the statement that
      // reads the page, so it is stored before the page leaves, with no transaction of its own.
      const page = await deps.stores.referrals.list(
        { institution: caller.institution, ...query },
        auditEventOf(caller, action, [], deps.clock.now()),
      );
      return {
        data: page.records.map((record) => toSummary(record, caller)),
        metadata: {
          offset: query.offset,
          pageSize: query.pageSize,
          hasNext: page.hasNext,
          total: page.total,
        },
      };
    },

    /** A page of one of the caller's worklists, most pressing first; audited like the list. */
    async worklist(
      caller: Caller,
      name: WorklistName,
      paging: { readonly offset: number; readonly pageSize: number },
    ): Promise<WorklistPage> {
      const now = deps.clock.now();
      const page = await deps.stores.referrals.worklist(
        { institution: caller.institution, name, now, ...paging },
        auditEventOf(caller, 'referral.worklist', [], now),
      );
      return {
        data: page.records.map((record) => ({
          ...toSummary(record, caller),
          ...(record.triageDueAt === null ? {} : { dueAt: record.triageDueAt.toISOString() }),
          overdue: isTriageOverdue(record, now),
        })),
        metadata: { ...paging, hasNext: page.hasNext, total: page.total },
      };
    },

    /** The caller's worklists with how many referrals each has now. */
    async worklists(caller: Caller): Promise<{ data: WorklistCountView[] }> {
      const now = deps.clock.now();
      const counts = await deps.stores.referrals.worklistCounts(
        caller.institution,
        now,
        auditEventOf(caller, 'referral.worklists', [], now),
      );
      return {
        data: counts.map(({ name, total }) => ({
          name,
          side: WORKLISTS[name].side,
          title: WORKLISTS[name].title,
          count: total,
        })),
      };
    },
  };
}

export type ReferralQueries = ReturnType<typeof createReferralQueries>;
