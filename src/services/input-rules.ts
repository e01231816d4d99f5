// The rules every request value obeys, whatever its field, so that a new field gets them without
// anyone remembering to ask (docs/api.md, "Bad input"):
//
// - Text is text the store can hold as sent: no NUL character (PostgreSQL refuses U+0000 in text)
//   and no unpaired surrogate (it would be stored as U+FFFD, so not as sent).
// - Text that must hold at least one character must also say something: whitespace alone is refused.
// - Text shows what it says: no control character (C0, DEL, C1) and no bidirectional control, which
//   would hide or reorder what a clinician reads (after a right-to-left override, the screen shows
//   the characters in another order than the store holds them). Text of several lines, which a
//   schema marks with `x-multiline`, may hold line breaks (LF, CR) and tabs; any other string is one
//   line. Whitespace alone is the blank rule's to judge: it shows nothing to misread.
// - A timestamp is one `Date` represents as sent and ISO 8601 writes back: a real calendar instant
//   (no leap second, no 30 February, no offset `Date` cannot read) in the years 0001–9999 UTC.
//
// `withInputRules` copies a request schema and marks every string in it; `addInputRules` teaches an
// Ajv those marks. The route schemas themselves stay as written, so the OpenAPI document is unchanged.
import type { Ajv, ErrorObject, FormatDefinition, FuncKeywordDefinition, SchemaValidateFunction } from 'ajv';
import formats from 'ajv-formats';

export const INPUT_RULE_MESSAGES = {
  nul: 'must not contain the NUL character (U+0000)',
  surrogate: 'must be well-formed Unicode text (it holds an unpaired surrogate)',
  blank: 'must contain more than whitespace',
  control: 'must not contain control characters (tabs and line breaks included: it is one line)',
  controlInLines: 'must not contain control characters other than line breaks and tabs',
  bidi: 'must not contain bidirectional control characters (U+061C, U+200E, U+200F, U+202A–U+202E, U+2066–U+2069)',
} as const;

/**
 * `x-multiline: true` on a string: text of several lines (clinical information, notes, reasons),
 * which may hold line breaks and tabs. An extension keyword, so the OpenAPI document tells clients
 * which fields take them; every other string is one line.
 */
export const MULTILINE = 'x-multiline';

const STORABLE = 'storableText';
const NOT_BLANK = 'notBlank';
const PLAIN_TEXT = 'plainText';

/** Keywords whose value is a map of names to schemas, a list of schemas, or one schema. */
const SCHEMA_MAPS = ['properties', 'patternProperties', '$defs', 'definitions', 'dependentSchemas'];
const SCHEMA_LISTS = ['anyOf', 'oneOf', 'allOf', 'prefixItems'];
const SCHEMA_ONE = [
  'items',
  'additionalItems',
  'additionalProperties',
  'unevaluatedItems',
  'unevaluatedProperties',
  'contains',
  'propertyNames',
  'not',
  'if',
  'then',
  'else',
];

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

function acceptsStrings(schema: Record<string, unknown>): boolean {
  const { type } = schema;
  return type === 'string' || (Array.isArray(type) && type.includes('string'));
}

/**
 * A copy of a request schema in which every string is held to the text rules, and every string
 * that needs at least one character is held to saying something.
 */
export function withInputRules<T>(schema: T): T {
  if (Array.isArray(schema)) return schema.map((s: unknown) => withInputRules(s)) as T;
  if (!isObject(schema)) return schema;
  const copy: Record<string, unknown> = { ...schema };
  for (const key of SCHEMA_MAPS) {
    const map = copy[key];
    if (isObject(map)) {
      copy[key] = Object.fromEntries(Object.entries(map).map(([name, s]) => [name, withInputRules(s)]));
    }
  }
  for (const key of SCHEMA_LISTS) {
    if (Array.isArray(copy[key])) copy[key] = withInputRules(copy[key]);
  }
  for (const key of SCHEMA_ONE) {
    if (isObject(copy[key]) || Array.isArray(copy[key])) copy[key] = withInputRules(copy[key]);
  }
  if (acceptsStrings(copy)) {
    copy[STORABLE] = true;
    if (typeof copy.minLength === 'number' && copy.minLength >= 1) copy[NOT_BLANK] = true;
    copy[PLAIN_TEXT] = copy[MULTILINE] === true ? 'lines' : 'line';
  }
  return copy as T;
}

function rule(
  keyword: string,
  schemaType: 'boolean' | 'string',
  problemOf: (text: string, setting: unknown) => string | undefined,
): FuncKeywordDefinition {
  const validate: SchemaValidateFunction = (setting: unknown, data: string) => {
    const message = setting === false ? undefined : problemOf(data, setting);
    if (message === undefined) return true;
    // The message names the rule, never the value: errors end up in problem documents and logs.
    validate.errors = [{ keyword, message, params: {} } satisfies Partial<ErrorObject>];
    return false;
  };
  return { keyword, type: 'string', schemaType, errors: true, validate };
}

const storable = rule(STORABLE, 'boolean', (text) => {
  if (text.includes('\u0000')) return INPUT_RULE_MESSAGES.nul;
  if (!text.isWellFormed()) return INPUT_RULE_MESSAGES.surrogate;
  return undefined;
});

const notBlank = rule(NOT_BLANK, 'boolean', (text) =>
  text.trim() === '' ? INPUT_RULE_MESSAGES.blank : undefined,
);

// The control characters (C0, DEL and C1, U+0085 "next line" among them), but NUL, which the
// storable rule names; in text of several lines, but tab, line feed and carriage return too.
const CONTROL = /[\p{Cc}--[\0]]/v;
const CONTROL_IN_LINES = /[\p{Cc}--[\0\t\n\r]]/v;
/** U+061C, U+200E, U+200F, U+202A–U+202E, U+2066–U+2069: the marks, embeddings, overrides, isolates. */
const BIDI_CONTROL = /\p{Bidi_Control}/u;

const plainText = rule(PLAIN_TEXT, 'string', (text, lines) => {
  if (BIDI_CONTROL.test(text)) return INPUT_RULE_MESSAGES.bidi;
  if (text.trim() === '') return undefined;
  if (lines === 'lines') return CONTROL_IN_LINES.test(text) ? INPUT_RULE_MESSAGES.controlInLines : undefined;
  return CONTROL.test(text) ? INPUT_RULE_MESSAGES.control : undefined;
});

const FIRST_INSTANT = Date.parse('0001-01-01T00:00:00.000Z');
const LAST_INSTANT = Date.parse('9999-12-31T23:59:59.999Z');

/** An instant `Date` reads as written, within the years ISO 8601 writes with four digits. */
function isRepresentable(timestamp: string): boolean {
  const ms = Date.parse(timestamp);
  return !Number.isNaN(ms) && ms >= FIRST_INSTANT && ms <= LAST_INSTANT;
}

/**
 * `x-earliest-date: "1900-01-01"` on a `date` string: the earliest date taken. An extension keyword,
 * so the OpenAPI document carries it as it is (standard JSON Schema has no minimum for a date, and
 * ajv-formats' `formatMinimum` is not a keyword OpenAPI knows).
 */
export const EARLIEST_DATE = 'x-earliest-date';

const earliestDate: FuncKeywordDefinition = {
  keyword: EARLIEST_DATE,
  type: 'string',
  schemaType: 'string',
  errors: true,
  validate: function earliest(earliestAllowed: string, data: string) {
    // YYYY-MM-DD compares as text; a value of another shape is the `format` check's to refuse.
    if (!/^\d{4}-\d{2}-\d{2}$/.test(data) || data >= earliestAllowed) return true;
    (earliest as SchemaValidateFunction).errors = [
      { keyword: EARLIEST_DATE, message: `must be ${earliestAllowed} or later`, params: {} },
    ];
    return false;
  } as SchemaValidateFunction,
};

/**
 * Adds the keywords `withInputRules` marks strings with, `x-multiline` and `x-earliest-date`, and a
 * `date-time` that `Date` can hold.
 */
export function addInputRules(ajv: Ajv): void {
  ajv.addKeyword(storable);
  // Before the control characters: whitespace alone is blank, whatever characters it is made of.
  ajv.addKeyword(notBlank);
  ajv.addKeyword(plainText);
  ajv.addKeyword({ keyword: MULTILINE, type: 'string', schemaType: 'boolean' });
  ajv.addKeyword(earliestDate);
  // RFC 3339 as ajv-formats checks it (a real calendar date and time), and then `Date` must read it
  // as the same instant: it cannot represent a leap second, nor read an offset without minutes.
  const rfc3339 = formats.default.get('date-time');
  if (typeof rfc3339 !== 'object' || !('validate' in rfc3339) || typeof rfc3339.validate !== 'function') {
    throw new Error('ajv-formats has no date-time check to build on');
  }
  const calendar = rfc3339.validate as (text: string) => boolean;
  const compare = rfc3339.compare as FormatDefinition<string>['compare'];
  ajv.addFormat('date-time', {
    type: 'string',
    validate: (text: string) => calendar(text) && isRepresentable(text),
    ...(compare === undefined ? {} : { compare }),
  });
}
