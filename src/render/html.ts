// Escape-by-construction HTML. `html` is the only way to turn data into markup: every interpolated
// string or number is escaped, and only `SafeHtml` (made by `html` itself or by `trustedHtml` for
// constant markup) passes through as-is.
//
// Escaping alone is safe only where a value lands in text or in a quoted attribute value. So each
// template's static parts are scanned once, and a string placed anywhere else (a tag or attribute
// name, an unquoted value, an `on*` handler, `srcdoc`, a comment, `<script>`/`<style>`) throws at
// render time. SafeHtml may still go there: it is trusted markup by definition. Strings in URL
// attributes are also checked: a scheme other than http(s)/mailto (`javascript:` and friends) is
// replaced by an inert URL rather than failing the whole render over one bad value.

import { URL_ATTRIBUTES } from './document-policy.ts';

class SafeHtmlValue {
  readonly #markup: string;
  constructor(markup: string) {
    this.#markup = markup;
  }
  toString(): string {
    return this.#markup;
  }
}

/** Markup that is safe to insert as-is. Only `html` and `trustedHtml` make one. */
export type SafeHtml = SafeHtmlValue;

export type HtmlValue = SafeHtml | string | number | false | null | undefined | readonly HtmlValue[];

const ESCAPES: Readonly<Record<string, string>> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
  '`': '&#96;',
  // A raw CR would be folded into LF by the parser; the character reference keeps it verbatim.
  '\r': '&#13;',
};

/**
 * Escapes text for HTML text or a quoted attribute value. NUL and lone surrogates cannot survive an
 * HTML parser or UTF-8, so they become U+FFFD; everything else round-trips exactly.
 */
export function escapeHtml(text: string): string {
  return text
    .toWellFormed()
    .replaceAll('\0', '\uFFFD')
    .replace(/[&<>"'`\r]/g, (c) => ESCAPES[c] ?? c);
}

const SAFE_URL = /^(?:https?:|mailto:|[^:]*$|[^:]*[/?#])/i;
const INERT_URL = 'about:invalid#unsafe-url';

type Slot = { kind: 'text' } | { kind: 'url' } | { kind: 'forbidden'; reason: string };

// The HTML tokenizer states that matter for where an interpolation lands.
type ScanState = 'text' | 'tag' | 'double' | 'single' | 'comment' | 'raw';

function scanSlots(strings: readonly string[]): Slot[] {
  const slots: Slot[] = [];
  let state: ScanState = 'text';
  let tag = '';
  let attribute = '';
  let rawEnd = '';
  for (const [index, part] of strings.entries()) {
    for (let i = 0; i < part.length; i++) {
      const c = part.charAt(i);
      if (state === 'text') {
        if (part.startsWith('<!--', i)) [state, i] = ['comment', i + 3];
        else if (c === '<') [state, tag] = ['tag', ''];
      } else if (state === 'tag') {
        if (c === '"' || c === "'") {
          attribute = (/([^\s"'=<>/]+)\s*=\s*$/.exec(tag)?.[1] ?? '').toLowerCase();
          state = c === '"' ? 'double' : 'single';
        } else if (c === '>') {
          const name = /^[a-z]+/i.exec(tag)?.[0].toLowerCase();
          rawEnd = name === 'script' || name === 'style' ? `</${name}` : '';
          state = rawEnd === '' ? 'text' : 'raw';
        } else tag += c;
      } else if (state === 'double' || state === 'single') {
        if (c === (state === 'double' ? '"' : "'")) [state, tag] = ['tag', `${tag}""`];
      } else if (state === 'comment') {
        if (part.startsWith('-->', i)) [state, i] = ['text', i + 2];
      } else if (part.slice(i, i + rawEnd.length).toLowerCase() === rawEnd) {
        state = 'tag';
        tag = '/';
        i += rawEnd.length - 1;
      }
    }
    if (index === strings.length - 1) break;
    slots.push(slotFor(state, tag, attribute));
  }
  return slots;
}

function slotFor(state: ScanState, tag: string, attribute: string): Slot {
  switch (state) {
    case 'text':
      return { kind: 'text' };
    case 'double':
    case 'single':
      if (attribute.startsWith('on') || attribute === 'srcdoc') {
        return { kind: 'forbidden', reason: `inside the "${attribute}" attribute` };
      }
      return URL_ATTRIBUTES.has(attribute) ? { kind: 'url' } : { kind: 'text' };
    case 'tag':
      return {
        kind: 'forbidden',
        reason: /=\s*$/.test(tag) ? 'in an unquoted attribute value' : 'in a tag or attribute name',
      };
    case 'comment':
      return { kind: 'forbidden', reason: 'inside a comment' };
    case 'raw':
      return { kind: 'forbidden', reason: 'inside <script> or <style>' };
  }
}

const slotCache = new WeakMap<TemplateStringsArray, readonly Slot[]>();

// Array.isArray narrows a readonly array to any[]; this keeps the element type.
function isHtmlList(value: unknown): value is readonly HtmlValue[] {
  return Array.isArray(value);
}

function append(value: HtmlValue, slot: Slot, index: number): string {
  if (value instanceof SafeHtmlValue) return value.toString();
  if (value === null || value === undefined || value === false) return '';
  if (slot.kind === 'forbidden' && (typeof value === 'string' || typeof value === 'number')) {
    throw new TypeError(`html: interpolation ${index} is ${slot.reason}, where escaping cannot make it safe`);
  }
  if (typeof value === 'number') return escapeHtml(String(value));
  if (typeof value === 'string') {
    return escapeHtml(slot.kind === 'url' && !SAFE_URL.test(value.trim()) ? INERT_URL : value);
  }
  if (isHtmlList(value)) return value.map((item) => append(item, slot, index)).join('');
  // Only reachable from untyped callers (`true`, plain objects): refuse rather than print "[object Object]".
  throw new TypeError(`html: cannot interpolate a value of type ${typeof value}`);
}

/** Tagged template: `html\`<p>${text}</p>\``. Strings and numbers are escaped; SafeHtml is kept. */
export function html(strings: TemplateStringsArray, ...values: readonly HtmlValue[]): SafeHtml {
  let slots = slotCache.get(strings);
  if (slots === undefined) {
    slots = scanSlots(strings);
    slotCache.set(strings, slots);
  }
  let out = strings[0] ?? '';
  for (const [i, value] of values.entries()) {
    out += append(value, slots[i] ?? { kind: 'text' }, i) + (strings[i + 1] ?? '');
  }
  return new SafeHtmlValue(out);
}

/**
 * Marks constant markup as safe. The type accepts only string literals, so data (typed `string`)
 * cannot be passed by mistake.
 */
export function trustedHtml<T extends string>(markup: string extends T ? never : T): SafeHtml {
  return new SafeHtmlValue(markup);
}
