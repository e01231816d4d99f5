// What the referral pages share: the referral ID from the path, and the page for a referral the
// sender can no longer change here.
import { isUuid } from '../../domain/ids.ts';
import type { Status } from '../../domain/statuses.ts';
import { STATUS_TEXT } from '../../render/pages/referral-form-fields.ts';
import { WebPageError } from './web-pages.ts';

export const REFERRAL_UNAVAILABLE = (): WebPageError =>
  new WebPageError(404, 'This referral is not available', [
    'It may have been deleted, or it is not shared with your institution.',
    'Open it again from your clinic system.',
  ]);

/** The referral ID in the path; a page that names no referral is not found. */
export function referralIdOf(params: unknown): string {
  const id = (params as { referralId?: unknown }).referralId;
  if (typeof id !== 'string' || !isUuid(id)) throw REFERRAL_UNAVAILABLE();
  return id.toLowerCase();
}

export function notEditable(status: Status): WebPageError {
  return new WebPageError(409, 'This referral can no longer be changed here', [
    `Its status is now: ${STATUS_TEXT[status].label}.`,
    'The sender can change a referral only while it is a draft, or when the provider has asked for action. ' +
      'Check the referral in your clinic system.',
  ]);
}
