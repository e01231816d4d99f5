// Content-Digest (RFC 9530) and the Structured Field dictionary parser under it: the RFC's own
// example, round trips over arbitrary bytes, tampering, several algorithms, and malformed fields.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  contentDigest,
  sha256Hex,
  verifyContentDigest,
} from '../../../src/domain/forwarding/content-digest.ts';
import { parseDictionary } from '../../../src/domain/forwarding/structured-fields.ts';

// RFC 9530 §2 and Appendix D: the content `{"hello": "world"}` and its digests.
const RFC_BODY = '{"hello": "world"}';
const RFC_SHA_256 = 'sha-256=:X48E9qOokqqrvdts8nOJRJN3OWDUoyWxBf7kbu9DBPE=:';
const RFC_SHA_512 =
  'sha-512=:WZDPaVn/7XgHaAy8pmojAkGWoRx2UFChF41A2svX+TaPm+AbwAgBWnrIiYllu7BNNyealdVLvRwEmTHWXvJwew==:';

const bytes = (text: string) => new TextEncoder().encode(text);

describe('contentDigest', () => {
  it('reproduces the RFC 9530 example', () => {
    expect(contentDigest(RFC_BODY)).toBe(RFC_SHA_256);
    expect(contentDigest(bytes(RFC_BODY))).toBe(RFC_SHA_256);
  });

  it('hashes a string as UTF-8, not as UTF-16 or Latin-1', () => {
    const text = 'Tan Ah Kow 陈亚九 🩺';
    expect(contentDigest(text)).toBe(contentDigest(Buffer.from(text, 'utf8')));
    expect(contentDigest(text)).not.toBe(contentDigest(Buffer.from(text, 'latin1')));
  });

  it('digests the empty body', () => {
    expect(contentDigest('')).toBe('sha-256=:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=:');
  });
});

describe('sha256Hex', () => {
  it('gives the lowercase hex SHA-256 of the UTF-8 bytes', () => {
    expect(sha256Hex('')).toBe('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
    expect(sha256Hex('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    expect(sha256Hex('é')).toBe(sha256Hex(new Uint8Array([0xc3, 0xa9])));
  });
});

describe('verifyContentDigest', () => {
  it('accepts the RFC example, alone and with its sha-512', () => {
    expect(verifyContentDigest(RFC_SHA_256, bytes(RFC_BODY))).toBe(true);
    expect(verifyContentDigest(`${RFC_SHA_256}, ${RFC_SHA_512}`, bytes(RFC_BODY))).toBe(true);
    expect(verifyContentDigest(`${RFC_SHA_512},${RFC_SHA_256}`, bytes(RFC_BODY))).toBe(true);
  });

  it('round-trips any body', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 4096 }), (body) =>
        verifyContentDigest(contentDigest(body), body),
      ),
    );
  });

  it('rejects a body changed in any byte', () => {
    fc.assert(
      fc.property(
        fc.uint8Array({ minLength: 1, maxLength: 512 }),
        fc.nat(),
        fc.integer({ min: 1, max: 255 }),
        (body, at, flip) => {
          const header = contentDigest(body);
          const tampered = Uint8Array.from(body);
          const index = at % body.length;
          tampered[index] = (tampered[index] ?? 0) ^ flip;
          return !verifyContentDigest(header, tampered);
        },
      ),
    );
  });

  it('rejects a body with a byte added or removed', () => {
    const body = bytes(RFC_BODY);
    expect(verifyContentDigest(RFC_SHA_256, bytes(`${RFC_BODY}\n`))).toBe(false);
    expect(verifyContentDigest(RFC_SHA_256, body.subarray(1))).toBe(false);
  });

  it('requires sha-256, even when another secure digest matches', () => {
    expect(verifyContentDigest(RFC_SHA_512, bytes(RFC_BODY))).toBe(false);
  });

  it('rejects a header whose sha-512 disagrees with a matching sha-256', () => {
    const wrong512 = contentDigest('other').replace('sha-256', 'sha-512');
    expect(verifyContentDigest(`${RFC_SHA_256}, ${wrong512}`, bytes(RFC_BODY))).toBe(false);
    // A sha-512 value of sha-256's length is wrong, whatever its bytes.
    expect(
      verifyContentDigest(`${RFC_SHA_256}, ${RFC_SHA_256.replace('sha-256', 'sha-512')}`, bytes(RFC_BODY)),
    ).toBe(false);
  });

  it('ignores insecure and unknown algorithms, whatever they hold', () => {
    const header = `md5=:AAAA:, ${RFC_SHA_256}, unixsum=:AAAAAAAA:, x-custom=?1;p=1`;
    expect(verifyContentDigest(header, bytes(RFC_BODY))).toBe(true);
  });

  it('uses the last of repeated keys, as Structured Fields require', () => {
    const stale = contentDigest('stale');
    expect(verifyContentDigest(`${stale}, ${RFC_SHA_256}`, bytes(RFC_BODY))).toBe(true);
    expect(verifyContentDigest(`${RFC_SHA_256}, ${stale}`, bytes(RFC_BODY))).toBe(false);
  });

  it('accepts a digest with parameters and the whitespace the syntax allows', () => {
    expect(verifyContentDigest(`  ${RFC_SHA_256};note="x" ,\tmd5=:AA==:`, bytes(RFC_BODY))).toBe(true);
  });

  it.each([
    ['absent', undefined],
    ['empty', ''],
    ['a bare hex digest', sha256Hex(RFC_BODY)],
    ['base64 without the colons', `sha-256=${RFC_SHA_256.slice(8, -1)}`],
    ['a quoted string', `sha-256="${RFC_SHA_256.slice(9, -1)}"`],
    ['an uppercase key', RFC_SHA_256.replace('sha-256', 'SHA-256')],
    ['the RFC 3230 Digest syntax', `SHA-256=${RFC_SHA_256.slice(9, -1)}`],
    ['a digest in an inner list', `sha-256=(${RFC_SHA_256.slice(8)})`],
    ['a boolean', 'sha-256'],
    ['a truncated digest', 'sha-256=:X48E9qOokqqrvdts8nOJRJN3OWDUoyWx:'],
    ['a digest that is not base64', 'sha-256=:X48E9qOokqqrvdts8nOJRJN3OWDU*yWxBf7kbu9DBPE=:'],
    ['an unterminated byte sequence', RFC_SHA_256.slice(0, -1)],
    ['a trailing comma', `${RFC_SHA_256},`],
    ['a missing comma', `${RFC_SHA_256} ${RFC_SHA_512}`],
    ['a leading comma', `, ${RFC_SHA_256}`],
    ['garbage after the member', `${RFC_SHA_256}garbage`],
  ])('rejects %s', (_name, header) => {
    expect(verifyContentDigest(header, bytes(RFC_BODY))).toBe(false);
  });
});

describe('parseDictionary', () => {
  it('parses every item type of RFC 9651', () => {
    const parsed = parseDictionary(
      'a=1, b=-2.5, c="q\\"s", d=tok/en:x, e=:AQID:, f=?0, g, h=@1659578233, i=%"caf%c3%a9", j=(1 "x");k=y',
    );
    expect(parsed).toBeDefined();
    const value = (key: string) => {
      const member = parsed?.get(key);
      return member?.kind === 'item' ? member.value : member;
    };
    expect(value('a')).toEqual({ type: 'integer', value: 1 });
    expect(value('b')).toEqual({ type: 'decimal', value: -2.5 });
    expect(value('c')).toEqual({ type: 'string', value: 'q"s' });
    expect(value('d')).toEqual({ type: 'token', value: 'tok/en:x' });
    expect(value('e')).toEqual({ type: 'byte-sequence', value: new Uint8Array([1, 2, 3]) });
    expect(value('f')).toEqual({ type: 'boolean', value: false });
    expect(value('g')).toEqual({ type: 'boolean', value: true });
    expect(value('h')).toEqual({ type: 'date', value: 1659578233 });
    expect(value('i')).toEqual({ type: 'display-string', value: 'café' });
    const list = parsed?.get('j');
    expect(list?.kind).toBe('inner-list');
    if (list?.kind === 'inner-list') {
      expect(list.items.map((i) => i.value)).toEqual([
        { type: 'integer', value: 1 },
        { type: 'string', value: 'x' },
      ]);
      expect(list.parameters.get('k')).toEqual({ type: 'token', value: 'y' });
    }
  });

  it.each([
    ['an integer of 16 digits', 'a=1234567890123456'],
    ['a decimal with four fraction digits', 'a=1.2345'],
    ['a decimal ending in a dot', 'a=1.'],
    ['a bad escape in a string', 'a="\\n"'],
    ['a control character in a string', 'a="\u0007"'],
    ['a non-ASCII string', 'a="é"'],
    ['a bad boolean', 'a=?2'],
    ['a key starting with a digit', '1a=1'],
    ['an inner list without its closing parenthesis', 'a=(1 2'],
    ['items in an inner list without a space', 'a=(1"x")'],
    ['a display string with uppercase hex', 'a=%"caf%C3%A9"'],
    ['a display string with invalid UTF-8', 'a=%"%ff"'],
  ])('rejects %s', (_name, text) => {
    expect(parseDictionary(text)).toBeUndefined();
  });

  it('accepts an empty field as an empty dictionary', () => {
    expect(parseDictionary('')?.size).toBe(0);
  });
});
