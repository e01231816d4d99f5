// The web routes' error handler: every failure becomes a page a person can read, with the status
// that fits, never a stack trace, SQL or patient data. A 5xx logs the error's kind and where it was
// thrown, not its message (database drivers quote stored values in messages), like the API does.
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { isStatus } from '../../domain/statuses.ts';
import {
  AppError,
  AttachmentNotFoundError,
  AttachmentPendingScanError,
  AttachmentRejectedError,
  ConcurrentModificationError,
  ForbiddenRoleError,
  InvalidTransitionError,
  LimitExceededError,
  NotFoundError,
  ReferralNotFoundError,
  UnavailableError,
  ValidationError,
  VersionMismatchError,
} from '../../errors.ts';
import { errorKind } from '../../logger.ts';
import {
  FILE_REJECTED,
  FILE_UNAVAILABLE,
  FILE_WAITING_FOR_SCAN,
  notEditable,
  REFERRAL_UNAVAILABLE,
} from './referral-pages.ts';
import { sendMessagePage, WebPageError } from './web-pages.ts';

const TRY_AGAIN = 'Nothing was saved. Go back, reload the page and try again.';

function appErrorPage(error: AppError): WebPageError {
  if (error instanceof InvalidTransitionError) {
    const status = error.extra.currentStatus;
    if (typeof status === 'string' && isStatus(status)) return notEditable(status);
  }
  if (error instanceof ReferralNotFoundError || error instanceof NotFoundError) return REFERRAL_UNAVAILABLE();
  if (error instanceof AttachmentNotFoundError) return FILE_UNAVAILABLE();
  if (error instanceof AttachmentPendingScanError) return FILE_WAITING_FOR_SCAN();
  if (error instanceof AttachmentRejectedError) return FILE_REJECTED();
  if (error instanceof ForbiddenRoleError) {
    return new WebPageError(403, 'This link does not allow that', [
      'The link you opened does not let you change this referral. Open it from your clinic system.',
    ]);
  }
  if (
    error instanceof ConcurrentModificationError ||
    error instanceof VersionMismatchError ||
    error instanceof LimitExceededError
  ) {
    return new WebPageError(409, 'The referral is busy', [
      'The referral was changing while you saved. ' + TRY_AGAIN,
    ]);
  }
  if (error instanceof ValidationError) {
    // The address itself, before any page ran (api/request-encoding.ts): a link cut or changed on
    // its way, most likely.
    const errors = error.errors ?? [];
    if (errors.length > 0 && errors.every((e) => e.path === 'query')) {
      return new WebPageError(400, 'The address could not be read', [
        'Part of the address after the “?” is not valid. Open the link again from your clinic system.',
      ]);
    }
    return new WebPageError(400, 'The form could not be read', [TRY_AGAIN]);
  }
  if (error instanceof UnavailableError) {
    return new WebPageError(503, 'The service is unavailable', ['Try again in a few minutes.']);
  }
  return new WebPageError(error.status, 'Something went wrong', [TRY_AGAIN]);
}

export function pageForError(error: FastifyError | Error): WebPageError {
  if (error instanceof WebPageError) return error;
  if (error instanceof AppError) return appErrorPage(error);
  const { code, statusCode } = error as FastifyError;
  if (code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
    return new WebPageError(413, 'Too much to send at once', [
      'The form is larger than refhub accepts. Shorten the clinical information and try again.',
    ]);
  }
  if (code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') {
    return new WebPageError(415, 'The form could not be read', [TRY_AGAIN]);
  }
  if (typeof statusCode === 'number' && statusCode >= 400 && statusCode < 500) {
    return new WebPageError(400, 'The form could not be read', [TRY_AGAIN]);
  }
  return new WebPageError(500, 'Something went wrong', [
    'Something went wrong on our side, and the request was not completed.',
    'Try again in a few minutes. If it keeps happening, contact support.',
  ]);
}

export async function handleWebError(
  error: FastifyError,
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<FastifyReply> {
  const page = pageForError(error);
  if (page.status >= 500) {
    request.log.error({ err: errorKind(error, { withStack: true }) }, 'web request failed');
  }
  return sendMessagePage(reply, page);
}
