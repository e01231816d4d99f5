// The guard that an HTML document is self-contained (contract §7): it runs nothing and fetches
// nothing. The renderer's tests use it, and the forwarder calls it on the exact bytes before each
// send, so it must hold against any input, not only against our own templates.
//
// It parses with cheerio (parse5, the HTML standard's algorithm) so it sees what a browser sees:
// entities in attributes are decoded, elements inside <svg>, <math> and <template> are visited.
// Problems name elements and attributes but never quote values, which may carry patient data.
import * as cheerio from 'cheerio';
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

function elementProblems($: cheerio.CheerioAPI, report: (problem: string) => void): void {
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

function hasRequiredCsp($: cheerio.CheerioAPI): boolean {
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
  let $: cheerio.CheerioAPI;
  try {
    $ = cheerio.load(html);
  } catch {
    return [...problems, 'it could not be parsed as HTML'];
  }
  if (!hasRequiredCsp($)) {
    report(`<head> lacks <meta http-equiv="Content-Security-Policy" content="${EHR_FORM_CSP}">`);
  }
  elementProblems($, report);
  return [...problems];
}

/** Throws NotSelfContainedError listing every problem, unless `html` is self-contained. */
export function assertSelfContained(html: string): void {
  const problems = checkSelfContained(html);
  if (problems.length > 0) throw new NotSelfContainedError(problems);
}
