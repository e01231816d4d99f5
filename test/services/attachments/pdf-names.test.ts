// Reading qpdf's JSON for the names that make a PDF act: a name as a key or as a value, wherever it
// is in the JSON and however the output is cut into pieces; a PDF string or a longer name that only
// begins like one is not one; a long string is read without being kept; and JSON that is cut short
// or broken is told apart from JSON read whole.
import { describe, expect, it } from 'vitest';
import { ACTIVE_NAMES, nameScanner } from '../../../src/services/attachments/pdf-names.ts';

/** Feeds `json` in pieces of `size` bytes; the first name found, and whether the JSON was whole. */
function read(json: string, size = 1 << 16): { found: string | undefined; whole: boolean } {
  const names = nameScanner();
  const bytes = Buffer.from(json);
  let found: string | undefined;
  for (let at = 0; at < bytes.length && found === undefined; at += size) {
    found = names.read(bytes.subarray(at, at + size));
  }
  return { found, whole: found === undefined ? names.finish() : true };
}

const objects = (value: string) =>
  `{"version": 2, "qpdf": [{"jsonversion": 2}, {"obj:1 0 R": {"value": ${value}}, "trailer": {"value": {"/Root": "1 0 R"}}}]}`;

describe('nameScanner', () => {
  it('finds each refused name as a key and as a value, naming what it makes the PDF hold', () => {
    for (const [name, what] of ACTIVE_NAMES) {
      expect(read(objects(`{"/${name}": 1}`)).found, name).toBe(what);
      expect(read(objects(`{"/S": "/${name}"}`)).found, name).toBe(what);
    }
  });

  it('finds a name deep in arrays and dictionaries, and in a stream’s dictionary', () => {
    expect(read(objects('[[[{"/K": [1, {"/A": {"/S": "/Launch"}}]}]]]')).found).toBe('a launch action');
    expect(
      read(objects('{"x": 1}').replace('"value": {"x": 1}', '"stream": {"dict": {"/EF": {}}}')).found,
    ).toBe('an embedded file');
  });

  it('finds a name cut between two pieces of the output, in pieces of any size', () => {
    const json = objects('{"/Type": "/Annot", "/A": {"/S": "/JavaScript", "/JS": "u:x"}}');
    for (const size of [1, 2, 3, 7, 64])
      expect(read(json, size).found, `pieces of ${size}`).toBe('JavaScript');
  });

  it('takes PDF strings, references and longer names for what they are', () => {
    const json = objects(
      '{"/Contents": "u:/JavaScript", "/T": "b:2f4a53", "/P": "3 0 R", "/JavaScriptX": 1, "/XJS": "/EFX", "obj:/JS": 2}',
    );
    expect(read(json)).toEqual({ found: undefined, whole: true });
  });

  it('reads a long string a piece at a time, and still finds a name after it', () => {
    const long = `u:${'x'.repeat(2 * 1024 * 1024)}`;
    expect(read(objects(`{"/Contents": "${long}", "/A": {"/S": "/SubmitForm"}}`), 4096).found).toBe(
      'a form submission action',
    );
  });

  it('tells JSON read whole from JSON cut short or broken', () => {
    expect(read(objects('{"/Type": "/Catalog"}'))).toEqual({ found: undefined, whole: true });
    const json = objects('{"/Type": "/Catalog"}');
    expect(read(json.slice(0, -5))).toEqual({ found: undefined, whole: false });
    expect(read('{"/Type": /Catalog}')).toEqual({ found: undefined, whole: false });
    expect(read('')).toEqual({ found: undefined, whole: false });
  });
});
