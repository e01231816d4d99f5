// The key ring that wraps the data keys (domain/key-ring.ts): DATA_KEYS, or the key file
// DATA_KEYS_FILE names. Outside production, with neither set, refhub keeps a key file of its own in
// DATA_DIR, made on first start, so that a development installation seals patient data as production
// does; production refuses to start without a key ring (config.ts).
import { linkSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { ConfigError, type Config } from '../config.ts';
import {
  keyFileText,
  localKeyRing,
  newSecretKey,
  parseKeyFile,
  type KeyEncryptionKeys,
} from '../domain/key-ring.ts';

/** The key file a development installation makes for itself. */
export function developmentKeyFile(config: Pick<Config, 'dataDir'>): string {
  return path.join(config.dataDir, 'data-keys.json');
}

export function keyRingOf(config: Pick<Config, 'dataKeys' | 'dataKeysFile' | 'dataDir'>): KeyEncryptionKeys {
  if (config.dataKeys !== undefined) return localKeyRing(config.dataKeys);
  const file = config.dataKeysFile ?? developmentKeyFile(config);
  if (config.dataKeysFile === undefined) makeOnce(file);
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new ConfigError(
      'DATA_KEYS_FILE',
      `cannot be read (${(error as NodeJS.ErrnoException).code ?? 'error'})`,
    );
  }
  try {
    // Messages name the setting, or for the file refhub made itself, the file.
    return localKeyRing(parseKeyFile(text), config.dataKeysFile === undefined ? file : 'DATA_KEYS_FILE');
  } catch (error) {
    throw new ConfigError('DATA_KEYS_FILE', (error as Error).message);
  }
}

/**
 * Makes the development key file unless it exists. Written aside, then linked into place, so that
 * processes starting together end with one file, never two keys.
 */
function makeOnce(file: string): void {
  mkdirSync(path.dirname(file), { recursive: true });
  const aside = `${file}.${randomUUID()}`;
  writeFileSync(aside, keyFileText([{ id: 'development', key: newSecretKey() }]), { mode: 0o600 });
  try {
    linkSync(aside, file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  } finally {
    rmSync(aside, { force: true });
  }
}
