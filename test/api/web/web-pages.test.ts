// The pages that only tell a person something: the heading says what happened, and the text goes on
// from it (why, what to do next) without saying it again.
import * as cheerio from 'cheerio';
import { describe, expect, it } from 'vitest';
import { pageForError } from '../../../src/api/web/web-errors.ts';
import {
  FORM_EXPIRED,
  LINK_GONE,
  LINK_UNKNOWN,
  LINKS_THROTTLED,
  SESSION_MISSING,
  type WebPageError,
} from '../../../src/api/web/web-pages.ts';
import { InvalidTransitionError, UnavailableError } from '../../../src/errors.ts';
import { renderMessagePage } from '../../../src/render/pages/message.page.ts';

/** Lower case, letters and digits only, so punctuation and curly quotes do not hide a repeat. */
const words = (text: string) =>
  text
    .toLowerCase()
    .replace(/[^\p{L}\p{N}]+/gu, ' ')
    .trim();

const PAGES: readonly (readonly [string, WebPageError])[] = [
  ['a used or expired link', LINK_GONE()],
  ['an unknown link', LINK_UNKNOWN()],
  ['too many unknown links', LINKS_THROTTLED(600)],
  ['an ended session', SESSION_MISSING()],
  ['a form from elsewhere', FORM_EXPIRED()],
  [
    'a referral that no longer changes',
    pageForError(new InvalidTransitionError('cancelled', 'not-in-status', 'x')),
  ],
  ['an outage', pageForError(new UnavailableError('down'))],
];

describe('message pages', () => {
  it.each(PAGES)('%s: the first sentence does not repeat the heading', (_, error) => {
    const $ = cheerio.load(
      renderMessagePage({
        nonce: 'bm9uY2U=',
        title: error.title,
        paragraphs: error.paragraphs,
        requestId: 'r-1',
      }),
    );
    const heading = words($('h1').text());
    const paragraphs = $('main p')
      .toArray()
      .map((p) => words($(p).text()));
    expect(paragraphs.length).toBeGreaterThan(1);
    expect(paragraphs[0]!.startsWith(heading), paragraphs[0]).toBe(false);
    for (const p of paragraphs) expect(p, 'no paragraph says the heading again').not.toContain(heading);
  });
});
