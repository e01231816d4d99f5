import { createSecretKey, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  FieldTamperedError,
  fieldCipher,
  isSealed,
  keyFileText,
  localKeyRing,
  parseKeyEncryptionKeys,
  parseKeyFile,
  sealedKeyId,
  UnknownDataKeyError,
  type FieldPlace,
} from '../../src/domain/data-keys.ts';

const key = () => createSecretKey(randomBytes(32));
const place: FieldPlace = { table: 'referrals', column: 'patient_name', row: '0190-a' };

describe('field cipher', () => {
  const keys = new Map([
    ['aaaaaaaaaaaa', key()],
    ['bbbbbbbbbbbb', key()],
  ]);
  const blind = key();
  const cipher = fieldCipher(keys, 'bbbbbbbbbbbb', blind);

  it('seals under the active key and opens to the same text, whatever its characters', () => {
    for (const text of ['Tan Ah Kow', '', '陈亚九 — ünïcödé 🙂', 'x'.repeat(10_000)]) {
      const sealed = cipher.seal(text, place);
      expect(isSealed(sealed)).toBe(true);
      expect(sealedKeyId(sealed)).toBe('bbbbbbbbbbbb');
      expect(sealed).not.toContain(text === '' ? 'never' : text);
      expect(cipher.open(sealed, place)).toBe(text);
    }
  });

  it('seals the same text differently each time (a fresh IV), so equal values cannot be told apart', () => {
    expect(cipher.seal('S7777777Q', place)).not.toBe(cipher.seal('S7777777Q', place));
  });

  it('opens a value sealed under an older key it still holds', () => {
    const older = fieldCipher(keys, 'aaaaaaaaaaaa', blind);
    expect(cipher.open(older.seal('before the rotation', place), place)).toBe('before the rotation');
  });

  it('refuses a value moved to another row, column or table', () => {
    const sealed = cipher.seal('Tan Ah Kow', place);
    for (const elsewhere of [
      { ...place, row: '0190-b' },
      { ...place, column: 'clinical_info' },
      { ...place, table: 'notes' },
    ]) {
      expect(() => cipher.open(sealed, elsewhere)).toThrow(FieldTamperedError);
    }
  });

  it('refuses a value whose ciphertext was changed or cut, naming the place and never the value', () => {
    const sealed = cipher.seal('Tan Ah Kow', place);
    const body = sealed.slice(sealed.lastIndexOf(':') + 1);
    const flipped = Buffer.from(body, 'base64url');
    flipped[14] = (flipped[14] ?? 0) ^ 1;
    const changed = `${sealed.slice(0, sealed.lastIndexOf(':') + 1)}${flipped.toString('base64url')}`;
    expect(() => cipher.open(changed, place)).toThrow(
      'field_not_authentic: referrals.patient_name of row 0190-a',
    );
    expect(() => cipher.open(sealed.slice(0, 30), place)).toThrow(FieldTamperedError);
  });

  it('names a data key it has not loaded, so that the caller can load the keys again', () => {
    const other = fieldCipher(new Map([['cccccccccccc', key()]]), 'cccccccccccc', blind);
    const sealed = other.seal('made by another process', place);
    expect(() => cipher.open(sealed, place)).toThrow(UnknownDataKeyError);
  });

  it('passes plaintext written before encryption through as it is', () => {
    expect(cipher.open('Tan Ah Kow', place)).toBe('Tan Ah Kow');
    expect(cipher.openOptional(null, place)).toBeNull();
  });

  it('gives one blind index per UIN however it is written, and another under another key', () => {
    const index = cipher.blindIndex('patient-uin', 'S7777777Q');
    expect(cipher.blindIndex('patient-uin', ' s7777777q ')).toBe(index);
    expect(cipher.blindIndex('patient-uin', 'S7777778Q')).not.toBe(index);
    expect(index).not.toContain('7777777');
    expect(fieldCipher(keys, 'bbbbbbbbbbbb', key()).blindIndex('patient-uin', 'S7777777Q')).not.toBe(index);
  });
});

describe('key ring', () => {
  const first = { id: 'kek-2026', key: randomBytes(32) };
  const second = { id: 'kek-2025', key: randomBytes(32) };

  it('wraps with its first key and unwraps with any key it holds', async () => {
    const ring = localKeyRing([first, second]);
    const dataKey = randomBytes(32);
    const wrapped = await ring.wrap('d1', dataKey);
    expect(Buffer.from(wrapped, 'base64url').includes(dataKey)).toBe(false);
    expect(await ring.unwrap('kek-2026', 'd1', wrapped)).toEqual(dataKey);
    const old = await localKeyRing([second]).wrap('d0', dataKey);
    expect(await ring.unwrap('kek-2025', 'd0', old)).toEqual(dataKey);
  });

  it('refuses a wrapped key given for another data key, or a key-encryption key it does not hold', async () => {
    const ring = localKeyRing([first]);
    const wrapped = await ring.wrap('d1', randomBytes(32));
    await expect(ring.unwrap('kek-2026', 'd2', wrapped)).rejects.toThrow('data_key_not_authentic');
    await expect(ring.unwrap('kek-1999', 'd1', wrapped)).rejects.toThrow(
      'key_encryption_key_missing: kek-1999',
    );
  });

  it('reads DATA_KEYS and key files, and says what is wrong without showing a key', () => {
    const text = `${first.id}:${first.key.toString('base64')}, ${second.id}:${second.key.toString('base64url')}`;
    expect(parseKeyEncryptionKeys(text)).toEqual([first, second]);
    expect(parseKeyFile(keyFileText([first, second]))).toEqual([first, second]);
    const short = randomBytes(16).toString('base64');
    expect(() => parseKeyEncryptionKeys(`a:${short}`)).toThrow('key a must be 32 bytes in base64, got 16');
    expect(() => parseKeyEncryptionKeys(first.key.toString('base64'))).toThrow('entry 1 must be id:key');
    expect(() => parseKeyEncryptionKeys(`${text},${first.id}:${first.key.toString('base64')}`)).toThrow(
      'names a key ID twice',
    );
    expect(() => parseKeyEncryptionKeys(' , ')).toThrow('must name at least one key');
    expect(() => parseKeyFile('{"keys": 3}')).toThrow('must hold "keys"');
    expect(() => parseKeyFile('not json')).toThrow('must be JSON');
    try {
      parseKeyEncryptionKeys(`a:${short}`);
    } catch (error) {
      expect(String(error)).not.toContain(short);
    }
  });
});
