// Makes the web addresses in a text clickable, for the web pages (never for the EHR form, which may
// hold no external URL). Only absolute http(s) addresses become links; everything else, `javascript:`
// included, stays text. The text around and inside a link is escaped like any other value.
import { html, type SafeHtml } from '../html.ts';

// An http(s) address runs until whitespace, a quote or an angle bracket.
const WEB_ADDRESS = /\bhttps?:\/\/[^\s<>"'`]+/gi;

// Punctuation that ends a sentence rather than the address ("see https://x.org/guide.").
const TRAILING = /[.,;:!?]+$/;

function splitTrailing(candidate: string): [address: string, rest: string] {
  let address = candidate.replace(TRAILING, '');
  // A closing bracket belongs to the address only when the address opened one: "(https://x.org)".
  while (/[)\]}]$/.test(address)) {
    const close = address.slice(-1);
    const open = close === ')' ? '(' : close === ']' ? '[' : '{';
    if (address.split(open).length >= address.split(close).length) break;
    address = address.slice(0, -1).replace(TRAILING, '');
  }
  return [address, candidate.slice(address.length)];
}

function isWebAddress(address: string): boolean {
  try {
    const url = new URL(address);
    return (url.protocol === 'http:' || url.protocol === 'https:') && url.hostname !== '';
  } catch {
    return false;
  }
}

/** `text` as markup, with each http(s) address a link that opens in a new tab without a referrer. */
export function linkify(text: string): SafeHtml {
  const parts: (string | SafeHtml)[] = [];
  let last = 0;
  for (const match of text.matchAll(WEB_ADDRESS)) {
    const [address, rest] = splitTrailing(match[0]);
    if (!isWebAddress(address)) continue;
    parts.push(text.slice(last, match.index));
    parts.push(
      html`<a href="${address}" rel="noopener noreferrer" target="_blank"
        >${address}<span class="visually-hidden"> (opens in a new tab)</span></a
      >`,
    );
    parts.push(rest);
    last = match.index + match[0].length;
  }
  parts.push(text.slice(last));
  return html`${parts}`;
}
