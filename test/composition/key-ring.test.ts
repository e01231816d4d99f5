// Where the key ring comes from: DATA_KEYS, a key file (DATA_KEYS_FILE), or, outside production with
// neither, a key file refhub makes once in DATA_DIR and keeps to itself.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { developmentKeyFile, keyRingOf } from '../../src/composition/key-ring.ts';
import { keyFileText, parseKeyFile } from '../../src/domain/data-keys.ts';
import { testKeyEncryptionKey } from '../support/data-keys.ts';

const dirs: string[] = [];
const tempDir = () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'refhub-key-ring-'));
  dirs.push(dir);
  return dir;
};
afterEach(() => {
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

describe('the key ring', () => {
  it('is DATA_KEYS when it is set, its first key active', () => {
    const [a, b] = [testKeyEncryptionKey('a'), testKeyEncryptionKey('b')];
    const ring = keyRingOf({ dataKeys: [a, b], dataKeysFile: undefined, dataDir: tempDir() });
    expect(ring.activeId).toBe('a');
    expect(ring.has('b')).toBe(true);
    expect(ring.source).toBe('DATA_KEYS');
  });

  it('is read from DATA_KEYS_FILE, and a file that is missing or wrong stops the start naming it', () => {
    const dir = tempDir();
    const file = path.join(dir, 'keys.json');
    fs.writeFileSync(file, keyFileText([testKeyEncryptionKey('2026-11')]));
    const ring = keyRingOf({ dataKeys: undefined, dataKeysFile: file, dataDir: dir });
    expect(ring.activeId).toBe('2026-11');
    expect(ring.source).toBe('DATA_KEYS_FILE');
    const config = (at: string) => ({ dataKeys: undefined, dataKeysFile: at, dataDir: dir });
    expect(() => keyRingOf(config(path.join(dir, 'missing.json')))).toThrow(
      'DATA_KEYS_FILE: cannot be read (ENOENT)',
    );
    fs.writeFileSync(file, '{"keys": [{"id": "x", "key": "c2hvcnQ="}]}');
    expect(() => keyRingOf(config(file))).toThrow('DATA_KEYS_FILE: key x must be 32 bytes in base64, got 5');
    // A file named by the operator is never made: it is theirs.
    expect(fs.existsSync(path.join(dir, 'missing.json'))).toBe(false);
  });

  it('outside production, with neither, is a key file made once in DATA_DIR, readable by its owner only', () => {
    const dir = path.join(tempDir(), 'not-yet-made');
    const config = { dataKeys: undefined, dataKeysFile: undefined, dataDir: dir };
    // Processes starting together end with one file and one key.
    const rings = Array.from({ length: 5 }, () => keyRingOf(config));
    const file = developmentKeyFile(config);
    expect((fs.statSync(file).mode & 0o777).toString(8)).toBe('600');
    const [key] = parseKeyFile(fs.readFileSync(file, 'utf8'));
    expect(key?.id).toBe('development');
    expect(new Set(rings.map((r) => r.activeId))).toEqual(new Set(['development']));
    // A key ring that does not fit the database names the file, since no setting names it.
    expect(new Set(rings.map((r) => r.source))).toEqual(new Set([file]));
    expect(fs.readdirSync(dir)).toEqual(['data-keys.json']);
    // Made once: a later start reads the same key.
    const again = parseKeyFile(fs.readFileSync(developmentKeyFile(config), 'utf8'));
    keyRingOf(config);
    expect(parseKeyFile(fs.readFileSync(file, 'utf8'))).toEqual(again);
  });
});
