// What counts as text on the wire: a body in UTF-8 and a query in percent-encoded UTF-8, refused
// rather than decoded with U+FFFD in place of what was sent. Pure: the API's use of them is in
// validation.int.test.ts, the web form's in web/form.int.test.ts.
import { describe, expect, it } from 'vitest';
import { decodeUtf8, isPercentEncodedUtf8 } from '../../src/api/request-encoding.ts';

describe('request encoding', () => {
  it('decodes UTF-8 as sent, a byte order mark included, and refuses anything else', () => {
    expect(decodeUtf8(Buffer.from('陳大文 café 😷', 'utf8'))).toBe('陳大文 café 😷');
    expect(decodeUtf8(Buffer.from([0xef, 0xbb, 0xbf, 0x7b, 0x7d]))).toBe('\ufeff{}');
    expect(decodeUtf8(Buffer.from([0xef, 0xbf, 0xbd]))).toBe('\ufffd');
    for (const bad of [
      [0xff],
      [0x80],
      [0xe2, 0x82],
      [0xc0, 0xaf],
      [0xed, 0xa0, 0x80],
      [0xf4, 0x90, 0x80, 0x80],
    ]) {
      expect(decodeUtf8(Buffer.from(bad)), bad.join(' ')).toBeUndefined();
    }
  });

  it('takes a query whose every escape is two hex digits of UTF-8, and refuses any other', () => {
    for (const good of ['', 'a=b', 'a=%E9%99%B3&b=c+d', 'a=%00', 'a=%f0%9f%98%b7', '%3D=%26']) {
      expect(isPercentEncodedUtf8(good), good).toBe(true);
    }
    for (const bad of [
      'a=%ZZ',
      'a=%',
      'a=%4',
      'a=%ED%A0%80',
      'a=%E2%82',
      'a=%E2%82&b=%AC',
      'a=%C0%AF',
      'a=%FF',
    ]) {
      expect(isPercentEncodedUtf8(bad), bad).toBe(false);
    }
  });
});
