// The input rules every request string is held to (docs/api.md, "Bad input"), through the same
// compiler the API and the web form use. Pure: no database, so it runs once.
import fc from 'fast-check';
import { Type } from 'typebox';
import { describe, expect, it } from 'vitest';
import { INPUT_RULE_MESSAGES, MULTILINE, withInputRules } from '../../src/services/input-rules.ts';
import { createRequestSchemaCompiler } from '../../src/services/referrals/fields.ts';

const compile = createRequestSchemaCompiler(false);

/** C0 and C1 control characters but NUL, which has a rule of its own. */
const CONTROLS = [...Array(0x20).keys(), ...Array.from({ length: 0x21 }, (_, i) => 0x7f + i)]
  .filter((c) => c !== 0)
  .map((c) => String.fromCodePoint(c));
/** The characters that change the direction text is shown in (Unicode's Bidi_Control). */
const BIDI_CONTROLS = [
  0x061c, 0x200e, 0x200f, 0x202a, 0x202b, 0x202c, 0x202d, 0x202e, 0x2066, 0x2067, 0x2068, 0x2069,
].map((c) => String.fromCodePoint(c));
const LINE_BREAKS_AND_TAB = ['\n', '\r', '\t'];

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
    // Any code point but NUL and the surrogate range, which fromCodePoint would leave unpaired, and
    // the control and text-direction characters, which the rule below refuses.
    const codePoint = fc
      .oneof(fc.integer({ min: 1, max: 0xd7ff }), fc.integer({ min: 0xe000, max: 0x10ffff }))
      .map((c) => String.fromCodePoint(c))
      .filter((c) => !CONTROLS.includes(c) && !BIDI_CONTROLS.includes(c));
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
  describe('control and text-direction characters', () => {
    const Name = Type.String({ minLength: 1, maxLength: 200 });
    const Optional = Type.String({ maxLength: 200 });
    const Lines = Type.String({ maxLength: 8000, [MULTILINE]: true });
    const hex = (c: string) => `U+${c.codePointAt(0)?.toString(16).padStart(4, '0').toUpperCase()}`;

    it('refuse a right-to-left override and every other text-direction control, in any text', () => {
      for (const bidi of BIDI_CONTROLS) {
        for (const schema of [Name, Optional, Lines]) {
          expect(messagesFor(schema, `Tan ${bidi}Ah Kow`), hex(bidi)).toEqual([INPUT_RULE_MESSAGES.bidi]);
        }
      }
    });

    it('refuse C0 and C1 controls in one-line text, tabs and line breaks included', () => {
      for (const control of CONTROLS) {
        for (const schema of [Name, Optional]) {
          expect(messagesFor(schema, `Tan${control}Ah Kow`), hex(control)).toEqual([
            INPUT_RULE_MESSAGES.control,
          ]);
        }
      }
      expect(messagesFor(Name, 'Tan\u0085Ah Kow')).toEqual([INPUT_RULE_MESSAGES.control]);
    });

    it('take line breaks and tabs in text of several lines, and refuse every other control there', () => {
      expect(messagesFor(Lines, 'Fever.\nCough\r\nfor\tthree days.\r')).toEqual([]);
      for (const control of CONTROLS.filter((c) => !LINE_BREAKS_AND_TAB.includes(c))) {
        expect(messagesFor(Lines, `Fever.${control}Cough`), hex(control)).toEqual([
          INPUT_RULE_MESSAGES.controlInLines,
        ]);
      }
    });

    it('leave whitespace alone to the blank rule, and name the NUL character by its own rule', () => {
      expect(messagesFor(Name, ' \t\r\n ')).toEqual([INPUT_RULE_MESSAGES.blank]);
      expect(messagesFor(Optional, '\t\n')).toEqual([]);
      expect(messagesFor(Name, 'Tan\u0000Ah Kow')).toEqual([INPUT_RULE_MESSAGES.nul]);
    });

    it('mark the strings of a schema as one line unless it says they hold several', () => {
      const ruled = JSON.stringify(withInputRules(Type.Object({ name: Name, notes: Lines })));
      expect(ruled.match(/"plainText":"line"/g)).toHaveLength(1);
      expect(ruled.match(/"plainText":"lines"/g)).toHaveLength(1);
    });
  });
});
