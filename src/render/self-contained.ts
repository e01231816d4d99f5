// The guard that an HTML document is self-contained (contract §7): it runs nothing and fetches
// nothing. The renderer's tests use it, and the forwarder calls it on the exact bytes before each
// send, so it must hold against any input, not only against our own templates.
//
// The full check parses with cheerio (parse5, the HTML standard's algorithm) so it sees what a
// browser sees: entities in attributes are decoded, elements inside <svg>, <math> and <template> are
// visited. Problems name elements and attributes but never quote values, which may carry patient data.
//
// Building a whole DOM for every form sent cost a tenth of the forwarder's CPU, so the guard first
// tries a strict scan in one pass (`isPlainlySelfContained`): it accepts only documents written the
// way the renderer writes them (lower-case tags, double-quoted attributes, its entities, no comments,
// no foreign or raw-text elements) and applies the same rules to every tag and attribute. Anything
// it does not fully understand goes to the full check, which decides; so the scan can only make the
// guard faster, never laxer. A property test holds the two to that.
//
// cheerio and its parsers hold about 7 MiB of heap once loaded, and the forms the renderer writes
// never need them, so they are loaded the first time a document needs the full check.
import { createRequire } from 'node:module';
import type * as Cheerio from 'cheerio';
import { EHR_FORM_CSP, URL_ATTRIBUTES } from './document-policy.ts';

export { EHR_FORM_CSP };

export class NotSelfContainedError extends Error {
  override readonly name = 'NotSelfContainedError';
  readonly code = 'not_self_contained';
  readonly problems: readonly string[];
  constructor(problems: readonly string[]) {
    super(`The document is not self-contained: ${problems.join('; ')}.`);
    this.problems = problems;
  }
}

const FORBIDDEN_ELEMENTS = new Set([
  'script',
  'link',
  'style',
  'iframe',
  'object',
  'embed',
  'base',
  'form',
  'frame',
  'frameset',
  'applet',
  'portal',
]);

/** Attributes holding a whitespace-separated list of URLs (srcset also has descriptors). */
const URL_LIST_ATTRIBUTES = new Set(['srcset', 'imagesrcset', 'ping', 'archive']);

const ANIMATION_ELEMENTS = new Set(['animate', 'set']);

const ALLOWED_HTTP_EQUIV = new Set(['content-security-policy', 'content-type']);

const DOCTYPE = /^\uFEFF?[\t\n\f\r ]*<!doctype\s+html\s*>/i;

let parser: typeof Cheerio | undefined;
/** cheerio, loaded on first use (synchronously: the check is a plain function). */
function cheerio(): typeof Cheerio {
  return (parser ??= createRequire(import.meta.url)('cheerio') as typeof Cheerio);
}

// The URL parser ignores leading/trailing C0 controls and spaces, and tabs/newlines anywhere.
function normalizeUrl(value: string): string {
  const url = value.replace(/[\t\n\r]/g, '');
  let start = 0;
  let end = url.length;
  while (start < end && url.charCodeAt(start) <= 0x20) start++;
  while (end > start && url.charCodeAt(end - 1) <= 0x20) end--;
  return url.slice(start, end);
}

function isLocalUrl(value: string): boolean {
  const url = normalizeUrl(value);
  return url.startsWith('#') || /^data:/i.test(url);
}

// A srcset descriptor such as `2x`, `480w` or `1.5x,`; every other token is a URL.
const SRCSET_DESCRIPTOR = /^[+-]?\d*\.?\d+(?:e[+-]?\d+)?[wxh],?$/i;

function isLocalUrlList(value: string): boolean {
  return value
    .split(/[\t\n\f\r ]+/)
    .map((token) => token.replace(/^,+/, ''))
    .filter((token) => token !== '' && !SRCSET_DESCRIPTOR.test(token))
    .every(isLocalUrl);
}

// CSS escapes (`\75 rl(`) and comments would hide a function name from a plain text search.
function normalizeCss(css: string): string {
  return css
    .replace(/\\([0-9a-f]{1,6})[\t\n\f\r ]?/gi, (_, hex: string) => {
      const code = Number.parseInt(hex, 16);
      return code === 0 || code > 0x10ffff ? '\uFFFD' : String.fromCodePoint(code);
    })
    .replace(/\\\r?\n/g, '')
    .replace(/\\(.)/gs, '$1')
    .replace(/\/\*[\s\S]*?(?:\*\/|$)/g, '')
    .toLowerCase();
}

/** A url() in CSS that points anywhere but a data: URL or a #fragment. */
function hasExternalCssUrl(css: string): boolean {
  return [...css.matchAll(/url\(\s*["']?([^"')]*)/g)].some((m) => !isLocalUrl(m[1] ?? ''));
}

/** What in a style attribute would load something, or undefined when nothing would. */
function styleProblem(value: string): string | undefined {
  const css = normalizeCss(value);
  if (/(?:^|[^a-z0-9_-])(?:-webkit-)?image-set\(|(?:^|[^a-z0-9_-])src\(/.test(css)) {
    return 'uses image-set() or src()';
  }
  if (/expression\(|@import|-moz-binding|behavior\s*:/.test(css)) return 'uses a CSS feature that loads code';
  if (hasExternalCssUrl(css)) return 'has a url() that is not a data: URL or #fragment';
  return undefined;
}

// Absolute URLs (`scheme://`), scheme-relative ones (`//host`) and script URLs, anywhere in a value.
const EXTERNAL_REFERENCE = /[a-z][a-z0-9+.-]*:\/\/|^\/\/|(?:java|vb)script:/i;

function attributeProblem(tag: string, name: string, value: string): string | undefined {
  const where = `<${tag}> attribute "${name}"`;
  if (name.startsWith('on')) return `${where} is an event handler`;
  // Namespace declarations are identifiers, never fetched.
  if (name === 'xmlns' || name.startsWith('xmlns:')) return undefined;
  if (URL_ATTRIBUTES.has(name))
    return isLocalUrl(value) ? undefined : `${where} is not a data: URL or #fragment`;
  if (URL_LIST_ATTRIBUTES.has(name)) {
    return isLocalUrlList(value) ? undefined : `${where} lists a URL that is not a data: URL or #fragment`;
  }
  if (name === 'style') {
    const problem = styleProblem(value);
    if (problem !== undefined) return `${where} ${problem}`;
  } else if (hasExternalCssUrl(normalizeCss(value))) {
    // SVG presentation attributes (fill, filter, mask, ...) take url() as style does.
    return `${where} has a url() that is not a data: URL or #fragment`;
  }
  // A data: URL is inert even when it mentions a URL (an SVG's xmlns, say), so it is left out.
  const outsideDataUrls = value.replace(/[\t\n\r]/g, '').replace(/url\(\s*(["']?)data:.*?\1\s*\)/gis, '');
  if (EXTERNAL_REFERENCE.test(outsideDataUrls)) return `${where} references an external URL`;
  return undefined;
}

// Names come from the document being checked; keep problem messages short whatever it holds.
function shortName(name: string): string {
  return name.length > 40 ? `${name.slice(0, 40)}…` : name;
}

function elementProblems($: Cheerio.CheerioAPI, report: (problem: string) => void): void {
  for (const el of $('*').toArray()) {
    if (!('attribs' in el)) continue;
    const tag = shortName(el.name.toLowerCase());
    if (FORBIDDEN_ELEMENTS.has(tag)) report(`<${tag}> elements are not allowed`);
    for (const [rawName, value] of Object.entries(el.attribs)) {
      const name = shortName(rawName.toLowerCase());
      const problem = attributeProblem(tag, name, value);
      if (problem !== undefined) report(problem);
      if (tag === 'meta' && name === 'http-equiv' && !ALLOWED_HTTP_EQUIV.has(value.trim().toLowerCase())) {
        report('<meta http-equiv> other than Content-Security-Policy or Content-Type is not allowed');
      }
      // SVG animation can rewrite an href after parsing, past every attribute check above.
      if (ANIMATION_ELEMENTS.has(tag) && name === 'attributename' && /href$/i.test(value.trim())) {
        report(`<${tag}> may not animate an href`);
      }
    }
  }
}

function hasRequiredCsp($: Cheerio.CheerioAPI): boolean {
  // A CSP <meta> outside <head> is ignored by browsers, so only <head> counts.
  return $('head > meta')
    .toArray()
    .some(
      (el) =>
        el.attribs['http-equiv']?.trim().toLowerCase() === 'content-security-policy' &&
        el.attribs.content === EHR_FORM_CSP,
    );
}

/** Every way `html` fails to be self-contained; empty when it is. */
export function checkSelfContained(html: string): string[] {
  // Callers may be untyped JavaScript; a guard that throws a TypeError would hide the real problem.
  if (typeof (html as unknown) !== 'string') return ['the document is not a string'];
  const problems = new Set<string>();
  const report = (problem: string): void => {
    problems.add(problem);
  };
  if (!DOCTYPE.test(html)) report('it does not start with <!doctype html>');
  let $: Cheerio.CheerioAPI;
  try {
    $ = cheerio().load(html);
  } catch {
    return [...problems, 'it could not be parsed as HTML'];
  }
  if (!hasRequiredCsp($)) {
    report(`<head> lacks <meta http-equiv="Content-Security-Policy" content="${EHR_FORM_CSP}">`);
  }
  elementProblems($, report);
  return [...problems];
}

// The strict scan. Tags and attributes as the renderer writes them; `<` anywhere else, an entity other
// than the renderer's own, upper case, unquoted or single-quoted values, comments, and elements
// whose content a browser tokenizes differently (foreign, raw text, templates) all end the scan.
const TAG = /<(\/?)([a-z][a-z0-9-]*)((?:[\t\n\f\r ]+[a-z][a-z0-9:-]*="[^"]*")*)[\t\n\f\r ]*\/?>/y;
const ATTRIBUTE = /[\t\n\f\r ]+([a-z][a-z0-9:-]*)="([^"]*)"/g;
const TEXT = /[^<]*/y;
// The entities the renderer's escaping writes (html.ts), and what a browser reads for each.
const RENDERER_ENTITIES = /&(?:amp|quot|#39|lt|gt|#96|#13);/g;
const ENTITY_TEXT: Readonly<Record<string, string>> = {
  '&amp;': '&',
  '&quot;': '"',
  '&#39;': "'",
  '&lt;': '<',
  '&gt;': '>',
  '&#96;': '`',
  '&#13;': '\r',
};
const DIFFERENT_CONTENT = new Set([
  'svg',
  'math',
  'template',
  'textarea',
  'xmp',
  'noembed',
  'noframes',
  'noscript',
  'plaintext',
]);
const HEAD_CONTENT = new Set(['meta', 'title']);
const WHITESPACE = /^[\t\n\f\r ]*$/;

/** An attribute's value as a browser reads it, or undefined when it holds an entity we do not read. */
function attributeText(raw: string): string | undefined {
  if (!raw.includes('&')) return raw;
  const ampersands = raw.split('&').length - 1;
  // Every & must begin one of the renderer's entities; then the value decodes exactly.
  if (ampersands !== (raw.match(RENDERER_ENTITIES)?.length ?? 0)) return undefined;
  return raw.replace(RENDERER_ENTITIES, (entity) => ENTITY_TEXT[entity] ?? entity);
}

type Place = 'before-head' | 'head' | 'after-head';

/** A tag's attributes as a browser reads them (the first of a repeated name counts), or undefined. */
function attributesOf(tag: string, rawAttributes: string): Map<string, string> | undefined {
  const attributes = new Map<string, string>();
  ATTRIBUTE.lastIndex = 0;
  for (let m = ATTRIBUTE.exec(rawAttributes); m !== null; m = ATTRIBUTE.exec(rawAttributes)) {
    const [, name = '', raw = ''] = m;
    const value = attributeText(raw);
    if (value === undefined || attributeProblem(tag, name, value) !== undefined) return undefined;
    if (!attributes.has(name)) attributes.set(name, value);
  }
  return attributes;
}

// The renderer writes the same tags thousands of times (its STYLE constants, its data-field names),
// and checking their attributes is the scan's most expensive step: the verdict on a whole tag's
// attributes is remembered, for short tags and a bounded number of them, so that an unusual document
// cannot grow the memory. Only tags that need no more than that verdict are remembered.
const FINE_TAGS = new Set<string>();
const MAX_FINE_TAGS = 512;
const MAX_REMEMBERED_TAG = 600;
const NEEDS_ATTRIBUTES = new Set(['meta', ...ANIMATION_ELEMENTS]);

/**
 * True only when a one-pass scan proves `html` self-contained; false means "not proven here" (the full
 * check decides), never "not self-contained".
 */
export function isPlainlySelfContained(html: string): boolean {
  const doctype = DOCTYPE.exec(html);
  if (doctype === null) return false;
  let at = doctype[0].length;
  let place: Place = 'before-head';
  let cspInHead = false;
  let inTitle = false;
  while (at < html.length) {
    TEXT.lastIndex = at;
    const between = TEXT.exec(html)?.[0] ?? '';
    at += between.length;
    // Before </head>, text other than whitespace (outside <title>) ends the head in a browser, and a
    // CSP after it would not count.
    if (place !== 'after-head' && !inTitle && !WHITESPACE.test(between)) return false;
    if (at >= html.length) break;
    TAG.lastIndex = at;
    const tag = TAG.exec(html);
    if (tag === null) return false;
    at = TAG.lastIndex;
    const [text, closing, name = '', rawAttributes = ''] = tag;
    // A browser reads everything up to </title> as the title's text, tags included.
    if (inTitle) {
      if (closing !== '/' || name !== 'title') return false;
      inTitle = false;
      continue;
    }
    if (name === 'title' && closing !== '/') inTitle = true;
    if (FORBIDDEN_ELEMENTS.has(name) || DIFFERENT_CONTENT.has(name)) return false;
    let attributes: Map<string, string> | undefined;
    if (!FINE_TAGS.has(text)) {
      attributes = attributesOf(name, rawAttributes);
      if (attributes === undefined) return false;
      if (text.length <= MAX_REMEMBERED_TAG && !NEEDS_ATTRIBUTES.has(name)) {
        if (FINE_TAGS.size >= MAX_FINE_TAGS) FINE_TAGS.clear();
        FINE_TAGS.add(text);
      }
    }
    if (closing === '/') {
      if (name === 'head') {
        if (place !== 'head') return false;
        place = 'after-head';
      }
      continue;
    }
    // Before <head> only <html>; in <head> only its own elements (any other would end it, and a CSP
    // after that point would not count); a second <head> is ignored by browsers, so it ends the scan.
    if (place === 'before-head') {
      if (name === 'head') place = 'head';
      else if (name !== 'html') return false;
      continue;
    }
    if (name === 'head' || (place === 'head' && !HEAD_CONTENT.has(name))) return false;
    if (!NEEDS_ATTRIBUTES.has(name)) continue;
    attributes ??= attributesOf(name, rawAttributes);
    if (attributes === undefined) return false;
    const equiv = attributes.get('http-equiv')?.trim().toLowerCase();
    if (name === 'meta' && equiv !== undefined) {
      if (!ALLOWED_HTTP_EQUIV.has(equiv)) return false;
      if (equiv === 'content-security-policy') {
        if (place !== 'head' || attributes.get('content') !== EHR_FORM_CSP) return false;
        cspInHead = true;
      }
    }
    if (ANIMATION_ELEMENTS.has(name) && /href$/i.test(attributes.get('attributename')?.trim() ?? '')) {
      return false;
    }
  }
  return place === 'after-head' && cspInHead;
}

/** Throws NotSelfContainedError listing every problem, unless `html` is self-contained. */
export function assertSelfContained(html: string): void {
  if (typeof (html as unknown) === 'string' && isPlainlySelfContained(html)) return;
  const problems = checkSelfContained(html);
  if (problems.length > 0) throw new NotSelfContainedError(problems);
}
