// Every error a web route can meet becomes a page with the status that fits; anything unexpected is
// a 500 page that says nothing about its cause.
import { describe, expect, it } from 'vitest';
import {
  AppError,
  AttachmentNotFoundError,
  AttachmentPendingScanError,
  AttachmentRejectedError,
  ConcurrentModificationError,
  ForbiddenRoleError,
  IncompleteReferralError,
  InvalidTransitionError,
  LimitExceededError,
  NotFoundError,
  ReferralNotFoundError,
  UnavailableError,
  ValidationError,
  VersionMismatchError,
} from '../../../src/errors.ts';
import { pageForError } from '../../../src/api/web/web-errors.ts';
import { WebPageError } from '../../../src/api/web/web-pages.ts';

function fastifyError(code: string, statusCode: number): Error {
  return Object.assign(new Error(`${code} with details`), { code, statusCode });
}

describe('pageForError', () => {
  it.each([
    [
      new InvalidTransitionError(
        'cancelled',
        'not-in-status',
        'Cannot update a referral whose status is cancelled.',
      ),
      409,
      'This referral can no longer be changed here',
    ],
    [
      new ReferralNotFoundError('0197a2b0-0000-7000-8000-000000000001'),
      404,
      'This referral is not available',
    ],
    [new NotFoundError('gone'), 404, 'This referral is not available'],
    [new AttachmentNotFoundError('id'), 404, 'This file is not available'],
    [new AttachmentPendingScanError(), 409, 'This file is waiting for its malware scan'],
    [new AttachmentRejectedError(), 410, 'This file cannot be opened'],
    [new ForbiddenRoleError('no'), 403, 'This link does not allow that'],
    [new ConcurrentModificationError('id'), 409, 'The referral is busy'],
    [new VersionMismatchError(1, 2), 409, 'The referral is busy'],
    [new LimitExceededError('too many'), 409, 'The referral is busy'],
    [new ValidationError([{ path: 'body.x', message: 'bad' }]), 400, 'The form could not be read'],
    [
      new ValidationError([{ path: 'query', message: 'is not valid percent-encoded UTF-8' }]),
      400,
      'The address could not be read',
    ],
    [
      new ValidationError([{ path: 'body', message: 'is not valid UTF-8' }]),
      400,
      'The form could not be read',
    ],
    [new IncompleteReferralError(['patientUin']), 422, 'Something went wrong'],
    [new UnavailableError('down'), 503, 'The service is unavailable'],
    [new AppError('internal_error', 500, 'Internal', 'boom'), 500, 'Something went wrong'],
    [fastifyError('FST_ERR_CTP_BODY_TOO_LARGE', 413), 413, 'Too much to send at once'],
    [fastifyError('FST_ERR_CTP_INVALID_MEDIA_TYPE', 415), 415, 'The form could not be read'],
    [fastifyError('FST_ERR_CTP_INVALID_CONTENT_LENGTH', 400), 400, 'The form could not be read'],
    [new TypeError('select * from referrals where patient_name = "Tan"'), 500, 'Something went wrong'],
  ])('%s becomes a %i page', (error, status, title) => {
    const page = pageForError(error);
    expect(page.status).toBe(status);
    expect(page.title).toBe(title);
    expect(page.paragraphs.join(' ')).not.toMatch(/select|Tan|details|boom/);
  });

  it('names the status a referral is in now, and passes a page error through', () => {
    expect(
      pageForError(
        new InvalidTransitionError(
          'pending-acceptance',
          'not-in-status',
          'Cannot update a referral whose status is pending-acceptance.',
        ),
      ).paragraphs[0],
    ).toBe('Its status is now: Submitted, awaiting acceptance.');
    const own = new WebPageError(410, 'Gone', ['Ask again.']);
    expect(pageForError(own)).toBe(own);
  });
});
