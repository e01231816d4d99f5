// What a clinic system does for one institution and one person: create referrals and links, open a
// referral by ID, and walk the list or a search page by page.
import type { Client } from 'openapi-fetch';
import type {
  AccessReportOptions,
  ActingFor,
  LinkPrefill,
  LinkUpsertResponse,
  ListFilters,
  OutcomeCode,
  PatientAccess,
  PatientAccessReport,
  PriorityCode,
  ReasonAction,
  ReasonCode,
  Referral,
  ReferralFields,
  ReferralPage,
  ReferralSummary,
  SearchFilters,
  WorklistCount,
  WorklistItem,
  WorklistName,
  WorklistPage,
  WaitTimes,
} from './models.ts';
import type { paths } from './openapi.generated.ts';
import { answerOf } from './problems.ts';
import { ReferralHandle, type WriteOptions } from './referral-handle.ts';

/** A page walk starts at the newest referral and asks for this many at a time unless told otherwise. */
const PAGE_SIZE = 100;

export class InstitutionClient {
  readonly actingFor: ActingFor;
  readonly #api: Client<paths>;
  readonly #newKey: () => string;

  constructor(api: Client<paths>, actingFor: ActingFor, newKey: () => string) {
    this.#api = api;
    this.actingFor = actingFor;
    this.#newKey = newKey;
  }

  get #body() {
    return {
      institutionIdType: this.actingFor.institutionIdType,
      institutionId: this.actingFor.institutionId,
      requesterIdentifier: this.actingFor.requesterIdentifier,
    };
  }

  /**
   * A referral to read and change. Given a referral or summary this client received, its changes are
   * guarded by that version (`If-Match`); given only an ID, they are guarded once it has been read.
   */
  referral(target: string | { readonly id: string; readonly version: number }): ReferralHandle {
    return typeof target === 'string'
      ? new ReferralHandle(this.#api, this.actingFor, this.#newKey, target)
      : new ReferralHandle(this.#api, this.actingFor, this.#newKey, target.id, `W/"${target.version}"`);
  }

  /** Creates a draft. Retries after a lost answer reuse the Idempotency-Key: one draft, whatever happens. */
  async createReferral(fields: ReferralFields, options: WriteOptions = {}): Promise<Referral> {
    const { data } = await answerOf(
      this.#api.POST('/api/v1/referrals', {
        params: { header: { 'Idempotency-Key': options.idempotencyKey ?? this.#newKey() } },
        body: { ...this.#body, ...fields },
        signal: options.signal,
      }),
    );
    return data;
  }

  /** The outcomes a provider may report when it completes a referral, in the catalog's order. */
  async outcomeCodes(signal?: AbortSignal): Promise<OutcomeCode[]> {
    const { institutionIdType, institutionId } = this.actingFor;
    const { data } = await answerOf(
      this.#api.GET('/api/v1/outcome-codes', {
        params: { query: { institutionIdType, institutionId } },
        signal,
      }),
    );
    return data.data;
  }

  /** The priorities a referral may have, in the catalog's order; with `offeringId`, those it takes. */
  async priorities(offeringId?: string, signal?: AbortSignal): Promise<PriorityCode[]> {
    const { institutionIdType, institutionId } = this.actingFor;
    const { data } = await answerOf(
      this.#api.GET('/api/v1/priorities', {
        params: {
          query: { institutionIdType, institutionId, ...(offeringId === undefined ? {} : { offeringId }) },
        },
        signal,
      }),
    );
    return data.data;
  }

  /**
   * How long referrals to the offering waited, as last computed: submit → accepted and submit → the
   * first appointment booked (p50 and p90 in days), and the share declined, each with its count; a
   * figure made of too few referrals is absent (`enoughData: false`).
   */
  async waitTimes(offeringId: string, signal?: AbortSignal): Promise<WaitTimes> {
    const { institutionIdType, institutionId } = this.actingFor;
    const { data } = await answerOf(
      this.#api.GET('/api/v1/offerings/{offeringId}/wait-times', {
        params: { path: { offeringId }, query: { institutionIdType, institutionId } },
        signal,
      }),
    );
    return data;
  }

  /**
   * The reasons the catalog offers for rejecting, sending back, cancelling, returning a referral to
   * draft or redirecting it, in its order; with `action`, those of that operation alone.
   */
  async reasonCodes(action?: ReasonAction, signal?: AbortSignal): Promise<ReasonCode[]> {
    const { institutionIdType, institutionId } = this.actingFor;
    const { data } = await answerOf(
      this.#api.GET('/api/v1/reason-codes', {
        params: { query: { institutionIdType, institutionId, ...(action === undefined ? {} : { action }) } },
        signal,
      }),
    );
    return data.data;
  }

  /** Creates a draft from `prefill` and returns a one-time link into the web form to complete it. */
  async upsertLink(prefill: LinkPrefill, options: WriteOptions = {}): Promise<LinkUpsertResponse> {
    const { data } = await answerOf(
      this.#api.POST('/api/v1/links/upsert', {
        params: { header: { 'Idempotency-Key': options.idempotencyKey ?? this.#newKey() } },
        body: { ...this.#body, ...prefill },
        signal: options.signal,
      }),
    );
    return data;
  }

  /**
   * The institution's referrals, page by page (`offset` and `pageSize`, while `hasNext`). Sorted by
   * `createdAt` unless `sort` says otherwise: creation times never change, so a referral updated
   * during the walk keeps its place.
   */
  async *referralPages(filters: ListFilters = {}, signal?: AbortSignal): AsyncGenerator<ReferralPage> {
    const { institutionIdType, institutionId, requesterIdentifier } = this.#body;
    for (let offset = 0; ;) {
      const { data } = await answerOf(
        this.#api.GET('/api/v1/institutions/{institutionIdType}/{institutionId}/referrals', {
          params: {
            path: { institutionIdType, institutionId },
            query: {
              sort: 'createdAt',
              pageSize: PAGE_SIZE,
              ...filters,
              offset,
              requesterIdentifier,
            },
          },
          signal,
        }),
      );
      yield data;
      if (!data.metadata.hasNext || data.data.length === 0) return;
      offset = data.metadata.offset + data.data.length;
    }
  }

  /**
   * Every referral of the institution that matches `filters`, newest first. A referral created during
   * the walk shifts the pages by one; it is then seen twice, and given once.
   */
  async *referrals(filters: ListFilters = {}, signal?: AbortSignal): AsyncGenerator<ReferralSummary> {
    yield* once(this.referralPages(filters, signal));
  }

  /** The institution's worklists, the provider's and the sender's, each with its count now. */
  async worklists(signal?: AbortSignal): Promise<WorklistCount[]> {
    const { institutionIdType, institutionId, requesterIdentifier } = this.#body;
    const { data } = await answerOf(
      this.#api.GET('/api/v1/institutions/{institutionIdType}/{institutionId}/worklists', {
        params: { path: { institutionIdType, institutionId }, query: { requesterIdentifier } },
        signal,
      }),
    );
    return data.data;
  }

  /** One worklist, page by page in its order (the provider's most pressing first, the sender's latest change first). */
  async *worklistPages(name: WorklistName, signal?: AbortSignal): AsyncGenerator<WorklistPage> {
    const { institutionIdType, institutionId, requesterIdentifier } = this.#body;
    for (let offset = 0; ;) {
      const { data } = await answerOf(
        this.#api.GET('/api/v1/institutions/{institutionIdType}/{institutionId}/worklists/{worklistName}', {
          params: {
            path: { institutionIdType, institutionId, worklistName: name },
            query: { pageSize: PAGE_SIZE, offset, requesterIdentifier },
          },
          signal,
        }),
      );
      yield data;
      if (!data.metadata.hasNext || data.data.length === 0) return;
      offset = data.metadata.offset + data.data.length;
    }
  }

  /**
   * Every referral of one worklist, in its order, each with its triage due time. A referral that joins
   * the list during the walk shifts the pages by one; it is then seen twice, and given once.
   */
  async *worklist(name: WorklistName, signal?: AbortSignal): AsyncGenerator<WorklistItem> {
    yield* once(this.worklistPages(name, signal));
  }

  /** The search (patient UIN and the list's filters, all in the body, never in a URL), page by page. */
  async *searchPages(filters: SearchFilters, signal?: AbortSignal): AsyncGenerator<ReferralPage> {
    const { institutionIdType, institutionId, requesterIdentifier } = this.#body;
    for (let offset = 0; ;) {
      const { data } = await answerOf(
        this.#api.POST('/api/v1/institutions/{institutionIdType}/{institutionId}/referrals/search', {
          params: { path: { institutionIdType, institutionId } },
          body: { sort: 'createdAt', pageSize: PAGE_SIZE, ...filters, offset, requesterIdentifier },
          signal,
        }),
      );
      yield data;
      if (!data.metadata.hasNext || data.data.length === 0) return;
      offset = data.metadata.offset + data.data.length;
    }
  }

  /** Every referral the search finds, newest first. */
  async *search(filters: SearchFilters, signal?: AbortSignal): AsyncGenerator<ReferralSummary> {
    yield* once(this.searchPages(filters, signal));
  }

  /**
   * A patient's access report, page by page: who read or changed which of the patient's referrals the
   * institution may see, newest first. The UIN goes in the body, never in a URL. Each page asked for is
   * itself an access, listed first from then on: the pages after the first ask with its `asOf`, so
   * they show the report as the first one did.
   */
  async *accessReportPages(
    patientUin: string,
    options: AccessReportOptions = {},
    signal?: AbortSignal,
  ): AsyncGenerator<PatientAccessReport> {
    let asOf: string | undefined;
    for (let offset = 0; ;) {
      const { data } = await answerOf(
        this.#api.POST('/api/v1/patients/access-report/search', {
          body: { pageSize: PAGE_SIZE, ...options, ...this.#body, patientUin, offset, ...(asOf && { asOf }) },
          signal,
        }),
      );
      yield data;
      if (!data.metadata.hasNext || data.data.length === 0) return;
      offset = data.metadata.offset + data.data.length;
      asOf = data.metadata.asOf;
    }
  }

  /**
   * Every entry of a patient's access report, newest first, each once: an entry a page walk sees again
   * (an access written before the first page, but stored after it) is given only the first time.
   */
  async *accessReport(
    patientUin: string,
    options: AccessReportOptions = {},
    signal?: AbortSignal,
  ): AsyncGenerator<PatientAccess> {
    const given = new Set<string>();
    for await (const page of this.accessReportPages(patientUin, options, signal)) {
      for (const entry of page.data) {
        const key = `${entry.auditEventId}/${entry.referralId}`;
        if (given.has(key)) continue;
        given.add(key);
        yield entry;
      }
    }
  }
}

async function* once<T extends { readonly id: string }>(
  pages: AsyncIterable<{ readonly data: readonly T[] }>,
): AsyncGenerator<T> {
  const given = new Set<string>();
  for await (const page of pages) {
    for (const referral of page.data) {
      if (given.has(referral.id)) continue;
      given.add(referral.id);
      yield referral;
    }
  }
}
