// One error taxonomy. Code throws these; the API's error handler alone turns them into
// problem+json (contract §9). Messages are written for the caller: they name the field or ID the
// caller sent and never carry patient data.

export type ErrorCode =
  | 'validation_failed'
  | 'unauthorized'
  | 'forbidden_role'
  | 'insufficient_scope'
  | 'institution_not_permitted'
  | 'referral_not_found'
  | 'referral_archived'
  | 'not_found'
  | 'invalid_transition'
  | 'incomplete_referral'
  | 'version_mismatch'
  | 'concurrent_modification'
  | 'idempotency_key_reused'
  | 'idempotency_key_in_use'
  | 'limit_exceeded'
  | 'attachment_not_found'
  | 'attachment_refused'
  | 'attachment_pending_scan'
  | 'attachment_rejected'
  | 'payload_too_large'
  | 'unsupported_media_type'
  | 'bad_request'
  | 'request_timeout'
  | 'uri_too_long'
  | 'header_fields_too_large'
  | 'rate_limited'
  | 'unavailable'
  | 'uploads_busy'
  | 'internal_error';

/**
 * Why an operation on a referral is refused, as a stable code: the `reason` member of a 409
 * invalid_transition (and of a 403 forbidden_role for `not-your-side`), and of `blockedActions[]`.
 * - `not-your-side`: the caller's institution is not the side of the referral its key acts for.
 * - `not-in-status`: the lifecycle does not allow the operation from the referral's status.
 * - `offering-not-cancellable`: the sender may not cancel, as the offering is not cancellable.
 * - `offering-locked`: an update may not change the offering once the referral has been submitted.
 */
export const REFUSAL_REASONS = [
  'not-your-side',
  'not-in-status',
  'offering-not-cancellable',
  'offering-locked',
] as const;
export type RefusalReason = (typeof REFUSAL_REASONS)[number];

export interface FieldError {
  readonly path: string;
  readonly message: string;
}

export class AppError extends Error {
  override readonly name: string = 'AppError';
  readonly code: ErrorCode;
  readonly status: number;
  readonly title: string;
  /** Extra members of the problem document, such as the current `status` of a referral. */
  readonly extra: Readonly<Record<string, unknown>>;
  readonly errors: readonly FieldError[] | undefined;
  /** When the caller may try again: sent as `Retry-After` (409 in use, 429, 503). */
  readonly retryAfterSeconds: number | undefined;
  constructor(
    code: ErrorCode,
    status: number,
    title: string,
    detail: string,
    extra: Readonly<Record<string, unknown>> = {},
    errors?: readonly FieldError[],
    retryAfterSeconds?: number,
  ) {
    super(detail);
    this.code = code;
    this.status = status;
    this.title = title;
    this.extra = extra;
    this.errors = errors;
    this.retryAfterSeconds = retryAfterSeconds;
  }
}

export class ValidationError extends AppError {
  constructor(errors: readonly FieldError[], detail?: string) {
    super(
      'validation_failed',
      400,
      'Invalid input',
      detail ?? errors.map((e) => `${e.path} ${e.message}`).join('; '),
      {},
      errors,
    );
  }
}

export class UnauthorizedError extends AppError {
  constructor(
    detail = 'Send a valid API key in the header "Authorization: ApiKey <key>", or an access token as ' +
      '"Authorization: Bearer <token>".',
  ) {
    super('unauthorized', 401, 'Unauthorized', detail);
  }
}

export class ForbiddenRoleError extends AppError {
  /** `not-your-side` when the key's role may perform the operation, but not on this referral. */
  constructor(detail: string, reason?: Extract<RefusalReason, 'not-your-side'>) {
    super('forbidden_role', 403, 'Not allowed for this role', detail, reason === undefined ? {} : { reason });
  }
}

export class InstitutionNotPermittedError extends AppError {
  constructor(idType: string, id: string) {
    super(
      'institution_not_permitted',
      403,
      'Institution not permitted',
      `This API key may not act for institution ${idType}:${id}.`,
    );
  }
}

export class ReferralNotFoundError extends AppError {
  constructor(referralId: string) {
    super(
      'referral_not_found',
      404,
      'Referral not found',
      `No referral ${referralId} is visible to this institution.`,
    );
  }
}

/**
 * The referral was archived (services/retention/referrals-archive.ts): its clinical content is no
 * longer held here. Every route that reads it or takes a step on it answers this, with the archive
 * that holds its record and when it was written, so an operator can find it.
 */
export class ReferralArchivedError extends AppError {
  constructor(referralId: string, archive: string, archivedAt: Date) {
    super(
      'referral_archived',
      410,
      'Referral archived',
      `Referral ${referralId} was archived: its record is in archive ${archive}, and its clinical ` +
        'content is no longer held here.',
      { referralId, archive: { name: archive, archivedAt: archivedAt.toISOString() } },
    );
  }
}

export class NotFoundError extends AppError {
  constructor(detail: string) {
    super('not_found', 404, 'Not found', detail);
  }
}

export class InvalidTransitionError extends AppError {
  readonly reason: RefusalReason;
  constructor(status: string, reason: RefusalReason, detail: string) {
    super('invalid_transition', 409, 'Operation not allowed in the current status', detail, {
      currentStatus: status,
      reason,
    });
    this.reason = reason;
  }
}

export class IncompleteReferralError extends AppError {
  constructor(missing: readonly string[]) {
    super(
      'incomplete_referral',
      422,
      'Referral is incomplete',
      `The referral cannot be submitted until it has: ${missing.join(', ')}.`,
      { missing },
      missing.map((path) => ({ path, message: 'is required to submit' })),
    );
  }
}

export class VersionMismatchError extends AppError {
  constructor(expected: number, current: number) {
    super(
      'version_mismatch',
      412,
      'Version mismatch',
      `If-Match asked for version ${expected}, but the referral is at version ${current}.`,
      { currentVersion: current },
    );
  }
}

export class ConcurrentModificationError extends AppError {
  constructor(referralId: string) {
    super(
      'concurrent_modification',
      409,
      'Concurrent modification',
      `Referral ${referralId} kept changing while this request ran; read it again and retry.`,
    );
  }
}

export class LimitExceededError extends AppError {
  constructor(detail: string) {
    super('limit_exceeded', 409, 'Limit reached', detail);
  }
}

export class AttachmentNotFoundError extends AppError {
  constructor(attachmentId: string) {
    super('attachment_not_found', 404, 'Attachment not found', `Referral has no attachment ${attachmentId}.`);
  }
}

/**
 * A file refhub will not keep: 415 for its type, 400 for its content or name. `reason` is stable;
 * `detail` names types and rules, never the file's name or content.
 */
export class AttachmentRefusedError extends AppError {
  constructor(status: 400 | 415, reason: string, detail: string, field: string) {
    super(
      'attachment_refused',
      status,
      status === 415 ? 'File type not accepted' : 'File not accepted',
      detail,
      { reason },
      [{ path: field, message: detail }],
    );
  }
}

export class AttachmentPendingScanError extends AppError {
  constructor() {
    super(
      'attachment_pending_scan',
      409,
      'Attachment not scanned yet',
      'The file is waiting for its malware scan; its content can be read once the scan finds it clean.',
      {},
      undefined,
      5,
    );
  }
}

export class AttachmentRejectedError extends AppError {
  constructor() {
    super(
      'attachment_rejected',
      410,
      'Attachment rejected',
      'The malware scan found a threat in this file, so its content is never handed out. Ask the sender for a clean copy.',
    );
  }
}

export class UnavailableError extends AppError {
  constructor(detail: string, retryAfterSeconds = 5) {
    super('unavailable', 503, 'Service unavailable', detail, {}, undefined, retryAfterSeconds);
  }
}

/**
 * An upload that found no room within its wait (api/upload-budget.ts), before any of it was stored.
 * `reason` says which room it lacked: its credential's share, its institution's, or the server's.
 */
export class UploadsBusyError extends AppError {
  constructor(lacked: 'credential' | 'institution' | 'server', retryAfterSeconds: number) {
    const detail = {
      credential:
        'The uploads this credential has in progress already claim as many bytes as one credential may. ' +
        `Send fewer files at once, or retry after ${retryAfterSeconds} seconds.`,
      institution:
        'The uploads this institution has in progress already claim as many bytes as one institution may. ' +
        `Retry after ${retryAfterSeconds} seconds.`,
      server: `This server is receiving as many uploads as it can hold. Retry after ${retryAfterSeconds} seconds.`,
    }[lacked];
    super(
      'uploads_busy',
      503,
      'Uploads busy',
      detail,
      { reason: lacked === 'server' ? 'server-busy' : `${lacked}-share` },
      undefined,
      retryAfterSeconds,
    );
  }
}

export class IdempotencyKeyInUseError extends AppError {
  constructor() {
    super(
      'idempotency_key_in_use',
      409,
      'Request in progress',
      'A request with this Idempotency-Key is still running. Retry after it finishes.',
      {},
      undefined,
      1,
    );
  }
}

export class IdempotencyKeyReusedError extends AppError {
  constructor() {
    super(
      'idempotency_key_reused',
      422,
      'Idempotency key reused',
      'This Idempotency-Key was used with a different request. Use a new key for a new request.',
    );
  }
}

/** A client of signed credentials, as a refusal of its token request is audited under it. */
export interface RefusedClient {
  readonly id: string;
  readonly system: string;
  readonly institutions: readonly { readonly idType: string; readonly id: string }[];
}

/**
 * Why a token request is refused, as RFC 6749 §5.2 names it, with a sentence for the client's
 * developer, and the client the request's assertion names when refhub knows it (revoked or not),
 * under which the refusal is audited.
 */
export class OAuthError extends Error {
  override readonly name = 'OAuthError';
  readonly error: 'invalid_request' | 'invalid_client' | 'unsupported_grant_type' | 'invalid_scope';
  readonly status: 400 | 401;
  readonly client: RefusedClient | undefined;
  constructor(error: OAuthError['error'], description: string, client?: RefusedClient) {
    super(description);
    this.error = error;
    this.status = error === 'invalid_client' ? 401 : 400;
    this.client = client;
  }

  /** The same refusal, of `client`. */
  of(client: RefusedClient | undefined): OAuthError {
    return new OAuthError(this.error, this.message, client);
  }
}
