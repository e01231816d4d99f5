// The shapes of refhub's identifiers, each written once. A UUID is how every referral, key, event and
// request is named, so code that must tell an ID from anything else (an audit row's referral IDs, a
// job ID on the ops pages, a CLI argument) asks here rather than keeping its own pattern. The message
// ID `<referralId>.v<version>` names one referral version on its way to the EHR: it is the forward
// request's `messageId`, its Idempotency-Key and its queue job's ID, so the three cannot disagree.

/** A UUID in its 8-4-4-4-12 hexadecimal form, in either case. */
const UUID_SOURCE = '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}';

// Neither has the `g` flag, so `test` keeps no position between calls.
const UUID = new RegExp(`^${UUID_SOURCE}$`, 'i');
const CONTAINS_UUID = new RegExp(UUID_SOURCE, 'i');

/** Whether `value` is a UUID and nothing else. */
export function isUuid(value: string): boolean {
  return UUID.test(value);
}

/** Whether a UUID appears anywhere in `value`. */
export function containsUuid(value: string): boolean {
  return CONTAINS_UUID.test(value);
}

/** Every UUID in `text`, in order and as written. */
export function uuidsIn(text: string): string[] {
  // A fresh expression per call: a shared `g` expression would carry its position between callers.
  return text.match(new RegExp(UUID_SOURCE, 'gi')) ?? [];
}

/** The message ID (and Idempotency-Key) of one referral version: `${referralId}.v${version}`. */
export function messageIdOf(referralId: string, version: number): string {
  return `${referralId}.v${version}`;
}

/** The longest message ID: a 36-character UUID, `.v`, and a version of up to 10 digits. */
export const MAX_MESSAGE_ID_LENGTH = 48;

/** What a message ID looks like on the wire (the forward request's schema holds a receiver to it). */
export const MESSAGE_ID_PATTERN = '^[0-9A-Fa-f-]{36}\\.v[1-9][0-9]{0,9}$';

/**
 * The message ID of an attachment sent with one referral version's form:
 * `${referralId}.v${version}.a${number}`, the attachment's number within its referral.
 */
export function attachmentMessageIdOf(referralId: string, version: number, number: number): string {
  return `${messageIdOf(referralId, version)}.a${number}`;
}

/** The longest attachment message ID: a form's message ID, `.a`, and a number of up to 3 digits. */
export const MAX_ATTACHMENT_MESSAGE_ID_LENGTH = MAX_MESSAGE_ID_LENGTH + 5;

/** What an attachment's message ID looks like on the wire. */
export const ATTACHMENT_MESSAGE_ID_PATTERN = '^[0-9A-Fa-f-]{36}\\.v[1-9][0-9]{0,9}\\.a[1-9][0-9]{0,2}$';
