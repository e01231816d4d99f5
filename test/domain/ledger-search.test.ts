// The ledger export's CSV fields: RFC 4180 quoting (a comma, a quote, a line break or edge space
// quoted, quotes doubled, CRLF between records) and the formula guard that makes a cell a spreadsheet
// would run as a formula plain text.
import { describe, expect, it } from 'vitest';
import { csvField, csvRecord } from '../../src/domain/ledger-search.ts';

describe('csvField', () => {
  it('writes plain text, numbers and null as they are, null as an empty field', () => {
    expect(csvField('delivered')).toBe('delivered');
    expect(csvField(503)).toBe('503');
    expect(csvField(-1)).toBe('-1');
    expect(csvField(null)).toBe('');
  });

  it.each([
    ['a,b', '"a,b"'],
    ['say "hi"', '"say ""hi"""'],
    ['line\nbreak', '"line\nbreak"'],
    ['cr\rlf', '"cr\rlf"'],
    [' leading', '" leading"'],
    ['trailing ', '"trailing "'],
  ])('quotes %j as RFC 4180 says', (value, expected) => {
    expect(csvField(value)).toBe(expected);
  });

  it.each([
    ['=1+1', "'=1+1"],
    ['+cmd', "'+cmd"],
    ['-2', "'-2"],
    ['@SUM(A1)', "'@SUM(A1)"],
    ['=HYPERLINK("x","y")', `"'=HYPERLINK(""x"",""y"")"`],
    ['\t=1', "'\t=1"],
  ])('makes %j text a spreadsheet shows rather than runs', (value, expected) => {
    expect(csvField(value)).toBe(expected);
  });

  it('leaves a formula character inside a value alone', () => {
    expect(csvField('a=b')).toBe('a=b');
    expect(csvField('x-y@z')).toBe('x-y@z');
  });

  it('ends a record with CRLF, its fields joined by commas', () => {
    expect(csvRecord(['id', 'a,b', null, 7])).toBe('id,"a,b",,7\r\n');
  });
});
