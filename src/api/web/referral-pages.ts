// What the referral pages share: the referral and file IDs from the path, the page for a referral the
// sender can no longer change here, and the pages for a file that cannot be opened.
import { isUuid } from '../../domain/ids.ts';
import { senderActionReason } from '../../domain/lifecycle.ts';
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

export const FILE_UNAVAILABLE = (): WebPageError =>
  new WebPageError(404, 'This file is not available', [
    'It may have been removed from the referral. Go back to the referral and reload the page.',
  ]);

export const FILE_WAITING_FOR_SCAN = (): WebPageError =>
  new WebPageError(409, 'This file is waiting for its malware scan', [
    'It can be opened once the scan finds it clean. Go back to the referral and reload the page in a moment.',
  ]);

export const FILE_REJECTED = (): WebPageError =>
  new WebPageError(410, 'This file cannot be opened', [
    'The malware scan found a threat in it, so refhub never hands it out. Ask the sender for a clean copy.',
  ]);

/** The file's ID in the path; a path that names no file is not found. */
export function attachmentIdOf(params: unknown): string {
  const id = (params as { attachmentId?: unknown }).attachmentId;
  if (typeof id !== 'string' || !isUuid(id)) throw FILE_UNAVAILABLE();
  return id.toLowerCase();
}

export function notEditable(status: Status): WebPageError {
  return new WebPageError(409, 'This referral can no longer be changed here', [
    `Its status is now: ${STATUS_TEXT[status].label}.`,
    senderActionReason(status) === 'outcome-to-acknowledge'
      ? 'The provider has completed it. Open the referral from your clinic system to read the outcome and acknowledge it.'
      : 'The sender can change a referral only while it is a draft, or when the provider has asked for action. ' +
        'Check the referral in your clinic system.',
  ]);
}
