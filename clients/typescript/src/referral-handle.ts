// One referral, as this client last saw it. Every change sends `If-Match` with the ETag of the last
// answer that carried one (a read, or a change), so a change made by someone else in between is
// refused with 412 `version_mismatch` instead of being overwritten. A note changes the referral's
// version without returning it: read again before the next guarded change.
//
// Every POST carries an Idempotency-Key, kept for all the retries of that call, so a retry after a
// lost answer gets the first answer replayed instead of acting twice.
import type { Client } from 'openapi-fetch';
import type {
  AcceptInput,
  ActingFor,
  AppointmentInput,
  Attachment,
  AttachmentAdded,
  AttachmentContent,
  AttachmentUpload,
  BackToDraftInput,
  RedirectInput,
  CancelInput,
  EhrSubmission,
  LinkPrefill,
  LinkUpsertResponse,
  Note,
  NoteInput,
  Referral,
  ReferralFields,
  ReferralSummary,
  RejectInput,
  RequestActionInput,
  CompleteInput,
  AcknowledgeOutcomeInput,
} from './models.ts';
import type { paths } from './openapi.generated.ts';
import { answerOf } from './problems.ts';

export interface WriteOptions {
  /** The Idempotency-Key of this change; a new one is made when absent. */
  readonly idempotencyKey?: string;
  readonly signal?: AbortSignal;
}

export interface ReadOptions {
  /** Include the EHR form (`ehrForm`, `ehrFormType`): fetch it right before forwarding it. */
  readonly ehrForm?: boolean;
  readonly signal?: AbortSignal;
}

export class ReferralHandle {
  readonly id: string;
  readonly #api: Client<paths>;
  readonly #who: ActingFor;
  readonly #newKey: () => string;
  #etag: string | undefined;

  constructor(api: Client<paths>, who: ActingFor, newKey: () => string, id: string, etag?: string) {
    this.#api = api;
    this.#who = who;
    this.#newKey = newKey;
    this.id = id;
    this.#etag = etag;
  }

  /** The ETag the next change sends as If-Match; undefined when this client has not seen one. */
  get etag(): string | undefined {
    return this.#etag;
  }

  get #acting() {
    return { institutionIdType: this.#who.institutionIdType, institutionId: this.#who.institutionId };
  }

  get #body() {
    return { ...this.#acting, requesterIdentifier: this.#who.requesterIdentifier };
  }

  #post(options: WriteOptions) {
    return {
      path: { referralId: this.id },
      header: { 'If-Match': this.#etag, 'Idempotency-Key': options.idempotencyKey ?? this.#newKey() },
    };
  }

  #seen<T>(answer: { data: T; response: Response }): T {
    this.#etag = answer.response.headers.get('etag') ?? undefined;
    return answer.data;
  }

  async read(options: ReadOptions = {}): Promise<Referral> {
    return this.#seen(
      await answerOf(
        this.#api.GET('/api/v1/referrals/{referralId}', {
          params: {
            path: { referralId: this.id },
            query: {
              ...this.#body,
              ...(options.ehrForm === true ? { additionalField: ['ehrForm'] as const } : {}),
            },
          },
          signal: options.signal,
        }),
      ),
    );
  }

  async update(fields: ReferralFields, options: WriteOptions = {}): Promise<Referral> {
    return this.#seen(
      await answerOf(
        this.#api.PATCH('/api/v1/referrals/{referralId}', {
          params: { path: { referralId: this.id }, header: { 'If-Match': this.#etag } },
          body: { ...this.#body, ...fields },
          signal: options.signal,
        }),
      ),
    );
  }

  async submit(options: WriteOptions = {}): Promise<Referral> {
    return this.#seen(
      await answerOf(
        this.#api.POST('/api/v1/referrals/{referralId}/submit', {
          params: this.#post(options),
          body: this.#body,
          signal: options.signal,
        }),
      ),
    );
  }

  async cancel(input: CancelInput, options: WriteOptions = {}): Promise<ReferralSummary> {
    return this.#seen(
      await answerOf(
        this.#api.POST('/api/v1/referrals/{referralId}/cancel', {
          params: this.#post(options),
          body: { ...this.#body, ...input },
          signal: options.signal,
        }),
      ),
    );
  }

  /**
   * Redirects the referral to another offering, with a code of `reasonCodes('redirect')`: it ends as
   * `redirected`, and its `redirectedTo` names the successor, which `client.referral(id)` opens.
   */
  async redirect(input: RedirectInput, options: WriteOptions = {}): Promise<Referral> {
    return this.#seen(
      await answerOf(
        this.#api.POST('/api/v1/referrals/{referralId}/redirect', {
          params: this.#post(options),
          body: { ...this.#body, ...input },
          signal: options.signal,
        }),
      ),
    );
  }

  /** Returns the referral to draft, with a code of `reasonCodes('back-to-draft')` and a comment if given. */
  async returnToDraft(input: BackToDraftInput = {}, options: WriteOptions = {}): Promise<ReferralSummary> {
    return this.#seen(
      await answerOf(
        this.#api.POST('/api/v1/referrals/{referralId}/back-to-draft', {
          params: this.#post(options),
          body: { ...this.#body, ...input },
          signal: options.signal,
        }),
      ),
    );
  }

  /** Deletes a draft; answers the referral as it was. */
  async delete(options: Pick<WriteOptions, 'signal'> = {}): Promise<ReferralSummary> {
    return this.#seen(
      await answerOf(
        this.#api.DELETE('/api/v1/referrals/{referralId}', {
          params: {
            path: { referralId: this.id },
            query: this.#body,
            header: { 'If-Match': this.#etag },
          },
          signal: options.signal,
        }),
      ),
    );
  }

  async addNote(input: NoteInput, options: WriteOptions = {}): Promise<Note> {
    return this.#seen(
      await answerOf(
        this.#api.POST('/api/v1/referrals/{referralId}/notes', {
          params: this.#post(options),
          body: { ...this.#body, ...input },
          signal: options.signal,
        }),
      ),
    );
  }

  async accept(input: AcceptInput = {}, options: WriteOptions = {}): Promise<Referral> {
    return this.#seen(
      await answerOf(
        this.#api.POST('/api/v1/referrals/{referralId}/accept', {
          params: this.#post(options),
          body: { ...this.#body, ...input },
          signal: options.signal,
        }),
      ),
    );
  }

  async reject(input: RejectInput, options: WriteOptions = {}): Promise<Referral> {
    return this.#seen(
      await answerOf(
        this.#api.POST('/api/v1/referrals/{referralId}/reject', {
          params: this.#post(options),
          body: { ...this.#body, ...input },
          signal: options.signal,
        }),
      ),
    );
  }

  async requestAction(input: RequestActionInput, options: WriteOptions = {}): Promise<Referral> {
    return this.#seen(
      await answerOf(
        this.#api.POST('/api/v1/referrals/{referralId}/request-action', {
          params: this.#post(options),
          body: { ...this.#body, ...input },
          signal: options.signal,
        }),
      ),
    );
  }

  /**
   * The provider's outcome: a code of `outcomeCodes()`, the consult summary, and the provider's own
   * files (attached first) that are part of it.
   */
  async complete(input: CompleteInput, options: WriteOptions = {}): Promise<Referral> {
    return this.#seen(
      await answerOf(
        this.#api.POST('/api/v1/referrals/{referralId}/complete', {
          params: this.#post(options),
          body: { ...this.#body, ...input },
          signal: options.signal,
        }),
      ),
    );
  }

  /** The sender read the provider's outcome: the referral leaves the sender's worklist. */
  async acknowledgeOutcome(
    input: AcknowledgeOutcomeInput = {},
    options: WriteOptions = {},
  ): Promise<Referral> {
    return this.#seen(
      await answerOf(
        this.#api.POST('/api/v1/referrals/{referralId}/acknowledge-outcome', {
          params: this.#post(options),
          body: { ...this.#body, ...input },
          signal: options.signal,
        }),
      ),
    );
  }

  /** Creates or updates the appointment the provider system knows as `appointmentId`. */
  async upsertAppointment(
    appointmentId: string,
    input: AppointmentInput,
    options: Pick<WriteOptions, 'signal'> = {},
  ): Promise<Referral> {
    return this.#seen(
      await answerOf(
        this.#api.PUT('/api/v1/referrals/{referralId}/appointments/{appointmentId}', {
          params: { path: { referralId: this.id, appointmentId }, header: { 'If-Match': this.#etag } },
          body: { ...this.#body, ...input },
          signal: options.signal,
        }),
      ),
    );
  }

  /** A fresh one-time link into the web form for this referral, applying `prefill` first. */
  async link(prefill: LinkPrefill = {}, options: WriteOptions = {}): Promise<LinkUpsertResponse> {
    return this.#seen(
      await answerOf(
        this.#api.POST('/api/v1/links/upsert', {
          params: { header: this.#post(options).header },
          body: { ...this.#body, ...prefill, referralId: this.id },
          signal: options.signal,
        }),
      ),
    );
  }

  /**
   * Attaches a file. It adds to the referral rather than changing what was read, so it is not guarded
   * by If-Match, and several files go one after another. It changes the referral's version: where the
   * handle held the version just before it, nothing else changed the referral in between, and the
   * handle takes the version the upload made (`referralVersion`), so that `attach()` then `submit()`
   * works; otherwise it keeps the ETag it had, and the next guarded change is refused with 412 until
   * the referral is read again. The file is `pending-scan` until refhub's malware scan answers
   * (`not-scanned` where refhub runs no scanner).
   */
  async attach(file: AttachmentUpload, options: WriteOptions = {}): Promise<AttachmentAdded> {
    const { data } = await answerOf(
      this.#api.POST('/api/v1/referrals/{referralId}/attachments', {
        params: {
          path: { referralId: this.id },
          query: this.#body,
          header: {
            'Idempotency-Key': options.idempotencyKey ?? this.#newKey(),
            'Content-Disposition': attachmentDisposition(file.fileName),
          },
        },
        headers: { 'Content-Type': file.mediaType ?? 'application/octet-stream' },
        body: file.content,
        // The file goes as it is, not as JSON.
        bodySerializer: (content) => content,
        signal: options.signal,
      }),
    );
    if (this.#etag !== undefined && versionOf(this.#etag) === data.referralVersion - 1) {
      this.#etag = `W/"${data.referralVersion}"`;
    }
    return data;
  }

  /** The referral's files, in the order they were added. */
  async attachments(options: Pick<WriteOptions, 'signal'> = {}): Promise<readonly Attachment[]> {
    const { data } = await answerOf(
      this.#api.GET('/api/v1/referrals/{referralId}/attachments', {
        params: { path: { referralId: this.id }, query: this.#body },
        signal: options.signal,
      }),
    );
    return data.data;
  }

  async attachment(attachmentId: string, options: Pick<WriteOptions, 'signal'> = {}): Promise<Attachment> {
    const { data } = await answerOf(
      this.#api.GET('/api/v1/referrals/{referralId}/attachments/{attachmentId}', {
        params: { path: { referralId: this.id, attachmentId }, query: this.#body },
        signal: options.signal,
      }),
    );
    return data;
  }

  /**
   * Downloads a file, and checks it against the SHA-256 refhub sent (`Content-Digest`): a file that
   * arrives changed is an error, never handed on. 409 `attachment_pending_scan` until its scan finds
   * it clean; 410 `attachment_rejected` once the scan found a threat.
   */
  async download(
    attachmentId: string,
    options: Pick<WriteOptions, 'signal'> = {},
  ): Promise<AttachmentContent> {
    const { data, response } = await answerOf(
      this.#api.GET('/api/v1/referrals/{referralId}/attachments/{attachmentId}/content', {
        params: { path: { referralId: this.id, attachmentId }, query: this.#body },
        parseAs: 'arrayBuffer',
        signal: options.signal,
      }),
    );
    const bytes = new Uint8Array(data);
    const sha256 = hex(new Uint8Array(await crypto.subtle.digest('SHA-256', bytes)));
    const sent = /^sha-256=:([A-Za-z0-9+/=]+):$/.exec(response.headers.get('content-digest') ?? '')?.[1];
    if (sent === undefined || hex(Uint8Array.from(atob(sent), (c) => c.charCodeAt(0))) !== sha256) {
      throw new Error(`attachment ${attachmentId} arrived changed: its SHA-256 is not the one refhub sent`);
    }
    return { bytes, mediaType: response.headers.get('content-type') ?? 'application/octet-stream', sha256 };
  }

  /** Removes a file from a draft; answers the attachment as it was. */
  async removeAttachment(
    attachmentId: string,
    options: Pick<WriteOptions, 'signal'> = {},
  ): Promise<Attachment> {
    const { data } = await answerOf(
      this.#api.DELETE('/api/v1/referrals/{referralId}/attachments/{attachmentId}', {
        params: {
          path: { referralId: this.id, attachmentId },
          query: this.#body,
          header: { 'If-Match': this.#etag },
        },
        signal: options.signal,
      }),
    );
    return data;
  }

  /** Every attempt to forward the referral's form to the national EHR, oldest first. */
  async ehrSubmissions(options: Pick<WriteOptions, 'signal'> = {}): Promise<readonly EhrSubmission[]> {
    const { data } = await answerOf(
      this.#api.GET('/api/v1/referrals/{referralId}/ehr-submissions', {
        params: { path: { referralId: this.id }, query: this.#body },
        signal: options.signal,
      }),
    );
    return data.data;
  }
}

/** `Content-Disposition` naming a file: the name in RFC 8187 form, which holds any character. */
/** The version an ETag names: `W/"3"` and `"3"` are version 3. */
function versionOf(etag: string): number | undefined {
  const match = /^(?:W\/)?"(\d+)"$/.exec(etag);
  return match === null ? undefined : Number(match[1]);
}

function attachmentDisposition(fileName: string): string {
  const encoded = encodeURIComponent(fileName).replace(
    /['()*]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
  );
  return `attachment; filename*=UTF-8''${encoded}`;
}

function hex(bytes: Uint8Array): string {
  return Array.from(bytes, (byte) => byte.toString(16).padStart(2, '0')).join('');
}
