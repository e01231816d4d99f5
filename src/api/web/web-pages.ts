// Sending web pages: every page gets a fresh CSP nonce and the policy that matches it (the headers
// that keep it out of caches, frames and referrers are api/browser-headers.ts's, set by the plugin on
// every web response). Also the pages that only say something (an invalid link, an ended session),
// thrown as WebPageError from anywhere in a request.
import { randomBytes } from 'node:crypto';
import type { FastifyReply } from 'fastify';
import { renderMessagePage } from '../../render/pages/message.page.ts';
import type { PageHeader } from '../../render/pages/page-shell.ts';
import { NO_CONTENT_CSP, pageCsp, type PagePolicyOptions } from '../../render/pages/page-shell.ts';

/** A response that is not a page (a redirect) may load nothing. */
export { NO_CONTENT_CSP };

/** 128 random bits per response: the only stylesheet that runs is the one carrying it. */
export function newNonce(): string {
  return randomBytes(16).toString('base64');
}

export function sendPage(
  reply: FastifyReply,
  status: number,
  render: (nonce: string) => string,
  policy: PagePolicyOptions = {},
): FastifyReply {
  const nonce = newNonce();
  return reply
    .code(status)
    .header('Content-Security-Policy', pageCsp(nonce, policy))
    .type('text/html; charset=utf-8')
    .send(render(nonce));
}

/**
 * A page that explains why a request could not be served, and what to do. The title says what
 * happened; the paragraphs go on from it (why, what next) and never repeat it.
 */
export class WebPageError extends Error {
  override readonly name = 'WebPageError';
  readonly status: number;
  readonly title: string;
  readonly paragraphs: readonly string[];
  readonly header: PageHeader | undefined;
  constructor(status: number, title: string, paragraphs: readonly string[], header?: PageHeader) {
    super(title);
    this.status = status;
    this.title = title;
    this.paragraphs = paragraphs;
    this.header = header;
  }
}

export function sendMessagePage(reply: FastifyReply, error: WebPageError): FastifyReply {
  return sendPage(reply, error.status, (nonce) =>
    renderMessagePage({
      nonce,
      title: error.title,
      paragraphs: error.paragraphs,
      requestId: reply.request.id,
      ...(error.header === undefined ? {} : { header: error.header }),
    }),
  );
}

export const LINK_GONE = (): WebPageError =>
  new WebPageError(410, 'This link is no longer valid', [
    'Each link opens once, in one browser, and only for a short time, to keep patient information safe.',
    'Ask your clinic system for a new link.',
  ]);

export const LINK_UNKNOWN = (): WebPageError =>
  new WebPageError(404, 'This link is not valid', [
    'Check that you opened the whole link, or ask your clinic system for a new one.',
  ]);

export const LINKS_THROTTLED = (retryAfterSeconds: number): WebPageError =>
  new WebPageError(429, 'Too many links that are not valid', [
    'Check that you opened the whole link: a link cut short is not valid.',
    `Wait ${Math.ceil(retryAfterSeconds / 60)} minutes, then open the whole link again, or ask your clinic system for a new one.`,
  ]);

export const SESSION_MISSING = (): WebPageError =>
  new WebPageError(403, 'Your session for this referral has ended', [
    'Sessions end 2 hours after the link was opened, and they are tied to one referral in one browser.',
    'Open the referral again from your clinic system to get a new link.',
  ]);

export const FORM_EXPIRED = (): WebPageError =>
  new WebPageError(403, 'This form could not be accepted', [
    'The form was not sent from this referral’s page in this browser, or the page is out of date.',
    'Nothing was saved. Open the referral again from your clinic system and repeat your changes.',
  ]);
