// The input rules every request string is held to (docs/api.md, "Bad input"), through the same
// compiler the API and the web form use. Pure: no database, so it runs once.
import fc from 'fast-check';
import { Type } from 'typebox';
import { describe, expect, it } from 'vitest';
import { INPUT_RULE_MESSAGES, withInputRules } from '../../src/services/input-rules.ts';
import { createRequestSchemaCompiler } from '../../src/services/referral-fields.ts';

const compile = createRequestSchemaCompiler(false);

const compiled = new Map<object, ReturnType<typeof compile>>();

/** The messages a value earns, or [] when it is valid. */
function messagesFor(schema: object, value: unknown): string[] {
  const validate = compiled.get(schema) ?? compile(schema);
  compiled.set(schema, validate);
  return validate(value) ? [] : (validate.errors ?? []).map((e) => e.message ?? '');
}

describe('input rules', () => {
  const Nested = Type.Object({
    name: Type.String({ minLength: 1, maxLength: 50 }),
    note: Type.Optional(Type.Union([Type.String({ maxLength: 50 }), Type.Null()])),
    tags: Type.Array(Type.String({ minLength: 1, maxLength: 10 }), { maxItems: 3 }),
    kind: Type.Enum(['a', 'b']),
  });

  it('reach every string of a schema, however deep, and leave the schema given unchanged', () => {
    const before = JSON.stringify(Nested);
    const ruled = JSON.stringify(withInputRules(Nested));
    expect(JSON.stringify(Nested)).toBe(before);
    expect(ruled.match(/storableText/g)).toHaveLength(3);
    expect(ruled.match(/notBlank/g)).toHaveLength(2);
    // The null branch of the union fails too; the string branch says why the text was refused.
    expect(messagesFor(Nested, { name: 'x', note: 'a\u0000b', tags: [], kind: 'a' })).toContain(
      INPUT_RULE_MESSAGES.nul,
    );
    expect(messagesFor(Nested, { name: 'x', tags: ['ok', '  '], kind: 'a' })).toEqual([
      INPUT_RULE_MESSAGES.blank,
    ]);
  });

  it('refuse NUL and unpaired surrogates anywhere in a string, and accept any other well-formed text', () => {
    const Text = Type.String({ maxLength: 100 });
    // Any code point but NUL and the surrogate range, which fromCodePoint would leave unpaired.
    const codePoint = fc
      .oneof(fc.integer({ min: 1, max: 0xd7ff }), fc.integer({ min: 0xe000, max: 0x10ffff }))
      .map((c) => String.fromCodePoint(c));
    const text = fc.string({ unit: codePoint, maxLength: 20 });
    fc.assert(
      fc.property(text, text, (a, b) => {
        expect(messagesFor(Text, `${a}${b}`)).toEqual([]);
        expect(messagesFor(Text, `${a}\u0000${b}`)).toEqual([INPUT_RULE_MESSAGES.nul]);
        for (const lone of ['\ud83d', '\ude00']) {
          const mixed = `${a}${lone}x${b}`;
          expect(messagesFor(Text, mixed)).toEqual([INPUT_RULE_MESSAGES.surrogate]);
        }
      }),
    );
  });

  it('refuse whitespace alone only where at least one character is required', () => {
    for (const blank of [' ', '\t\n', '\u00a0', '\u2003\u3000', '\ufeff']) {
      expect(messagesFor(Type.String({ minLength: 1, maxLength: 9 }), blank)).toEqual([
        INPUT_RULE_MESSAGES.blank,
      ]);
      expect(messagesFor(Type.String({ maxLength: 9 }), blank)).toEqual([]);
    }
    expect(messagesFor(Type.String({ minLength: 1, maxLength: 9 }), ' a ')).toEqual([]);
  });

  it('take as date-time only instants Date reads as written, in years 0001–9999', () => {
    const Instant = Type.String({ format: 'date-time', maxLength: 40 });
    for (const good of [
      '2026-11-23T08:00:00Z',
      '2026-11-23T08:00:00.123456789Z',
      '2026-11-23t08:00:00z',
      '2026-11-23T16:00:00+08:00',
      '0001-01-01T00:00:00Z',
      '9999-12-31T23:59:59.999Z',
    ]) {
      expect(messagesFor(Instant, good), good).toEqual([]);
    }
    for (const bad of [
      '0000-01-01T00:00:00Z',
      '0001-01-01T00:00:00+01:00',
      '9999-12-31T23:59:59-00:01',
      '2026-12-31T23:59:60Z',
      '2026-02-29T08:00:00Z',
      '2026-11-23T24:00:00Z',
      '2026-11-23T08:00:00+08',
      '+010000-01-01T00:00:00Z',
      '2026-11-23',
    ]) {
      expect(messagesFor(Instant, bad), bad).toEqual(['must match format "date-time"']);
    }
  });
});
