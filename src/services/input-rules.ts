// The rules every request value obeys, whatever its field, so that a new field gets them without
// anyone remembering to ask (docs/api.md, "Bad input"):
//
// - Text is text the store can hold as sent: no NUL character (PostgreSQL refuses U+0000 in text)
//   and no unpaired surrogate (it would be stored as U+FFFD, so not as sent).
// - Text that must hold at least one character must also say something: whitespace alone is refused.
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
} as const;

const STORABLE = 'storableText';
const NOT_BLANK = 'notBlank';

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
  }
  return copy as T;
}

function rule(keyword: string, problemOf: (text: string) => string | undefined): FuncKeywordDefinition {
  const validate: SchemaValidateFunction = (applies: boolean, data: string) => {
    const message = applies ? problemOf(data) : undefined;
    if (message === undefined) return true;
    // The message names the rule, never the value: errors end up in problem documents and logs.
    validate.errors = [{ keyword, message, params: {} } satisfies Partial<ErrorObject>];
    return false;
  };
  return { keyword, type: 'string', schemaType: 'boolean', errors: true, validate };
}

const storable = rule(STORABLE, (text) => {
  if (text.includes('\u0000')) return INPUT_RULE_MESSAGES.nul;
  if (!text.isWellFormed()) return INPUT_RULE_MESSAGES.surrogate;
  return undefined;
});

const notBlank = rule(NOT_BLANK, (text) => (text.trim() === '' ? INPUT_RULE_MESSAGES.blank : undefined));

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

/** Adds the keywords `withInputRules` marks strings with, and a `date-time` that `Date` can hold. */
export function addInputRules(ajv: Ajv): void {
  ajv.addKeyword(storable);
  ajv.addKeyword(notBlank);
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
