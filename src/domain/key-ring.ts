// The key ring that wraps the data keys (domain/data-keys.ts seals with them): the interface a key
// manager offers, the ring held by this process (DATA_KEYS or a key file), and the text both are
// written in. Nothing here seals a field: configuration and the operator's commands read key rings
// without reaching the field cipher.
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

const IV_BYTES = 12;
const TAG_BYTES = 16;

/**
 * The key ring cannot open a data key in the database: the operator's to fix, in the setting the ring
 * comes from (`source`). Said in one line, naming keys by their IDs only.
 */
export class KeyRingError extends Error {
  constructor(source: string, message: string) {
    super(`${source}: ${message}`);
    this.name = 'KeyRingError';
  }
}

/**
 * The key ring that wraps data keys: the only interface refhub needs from a key manager. A KMS or
 * Vault transit provider implements the same three members (wrap and unwrap are its encrypt and
 * decrypt calls, with the data key's ID as the encryption context).
 */
export interface KeyEncryptionKeys {
  /** The setting the ring comes from (DATA_KEYS, DATA_KEYS_FILE, …), for messages to the operator. */
  readonly source: string;
  /** The key-encryption key new data keys are wrapped with. */
  readonly activeId: string;
  /** Whether the ring holds `id` (a data key wrapped by a key not here cannot be opened). */
  has(id: string): boolean;
  wrap(dataKeyId: string, key: Buffer): Promise<string>;
  unwrap(kekId: string, dataKeyId: string, wrapped: string): Promise<Buffer>;
}

/** A key-encryption key held by this process: DATA_KEYS or a key file. */
export interface LocalKeyEncryptionKey {
  readonly id: string;
  /** 32 bytes. */
  readonly key: Buffer;
}

/** A ring of keys held by the process; the first is active. Wrapping is AES-256-GCM, the data key's ID as AAD. */
export function localKeyRing(
  kekeys: readonly LocalKeyEncryptionKey[],
  source = 'DATA_KEYS',
): KeyEncryptionKeys {
  const [first] = kekeys;
  if (first === undefined) throw new Error('a key ring needs at least one key');
  const byId = new Map(kekeys.map((k) => [k.id, k.key]));
  const keyOf = (id: string) => {
    const key = byId.get(id);
    if (key === undefined) throw new Error(`key_encryption_key_missing: ${id}`);
    return key;
  };
  const context = (dataKeyId: string) => Buffer.from(`refhub data key ${dataKeyId}`, 'utf8');
  return {
    source,
    activeId: first.id,
    has: (id) => byId.has(id),
    // Promises, as a KMS's calls are; here the work is done in the process.
    wrap: (dataKeyId, key) =>
      Promise.resolve().then(() => {
        const iv = randomBytes(IV_BYTES);
        const c = createCipheriv('aes-256-gcm', keyOf(first.id), iv);
        c.setAAD(context(dataKeyId));
        return Buffer.concat([iv, c.update(key), c.final(), c.getAuthTag()]).toString('base64url');
      }),
    unwrap: (kekId, dataKeyId, wrapped) =>
      Promise.resolve().then(() => {
        const sealed = Buffer.from(wrapped, 'base64url');
        const d = createDecipheriv('aes-256-gcm', keyOf(kekId), sealed.subarray(0, IV_BYTES));
        d.setAAD(context(dataKeyId));
        d.setAuthTag(sealed.subarray(sealed.length - TAG_BYTES));
        try {
          return Buffer.concat([d.update(sealed.subarray(IV_BYTES, sealed.length - TAG_BYTES)), d.final()]);
        } catch {
          throw new Error(
            `data_key_not_authentic: ${dataKeyId} does not open with key-encryption key ${kekId}`,
          );
        }
      }),
  };
}

const KEY_ID = /^[A-Za-z0-9._-]{1,64}$/;

/**
 * Key-encryption keys as DATA_KEYS writes them, `id:key` separated by commas, each key 32 bytes in
 * base64 (or base64url); the first is active. Throws a message that names what is wrong, never a key.
 */
export function parseKeyEncryptionKeys(text: string): LocalKeyEncryptionKey[] {
  const keys = text
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '')
    .map((entry, index) => {
      const colon = entry.indexOf(':');
      const id = colon === -1 ? '' : entry.slice(0, colon);
      if (!KEY_ID.test(id)) {
        throw new Error(`entry ${index + 1} must be id:key, the ID of letters, digits, '.', '_' or '-'`);
      }
      const key = Buffer.from(entry.slice(colon + 1), 'base64');
      if (key.length !== 32) throw new Error(`key ${id} must be 32 bytes in base64, got ${key.length}`);
      return { id, key };
    });
  if (keys.length === 0) throw new Error('must name at least one key');
  const ids = new Set(keys.map((k) => k.id));
  if (ids.size !== keys.length) throw new Error('names a key ID twice');
  return keys;
}

/** A key file's text: `{"keys": [{"id": …, "key": …}, …]}`, the first key active. */
export function parseKeyFile(text: string): LocalKeyEncryptionKey[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new Error('must be JSON: {"keys": [{"id": "…", "key": "<32 bytes in base64>"}]}');
  }
  const keys = (parsed as { keys?: unknown }).keys;
  const entry = (k: unknown): k is { id: string; key: string } =>
    typeof (k as { id?: unknown } | null)?.id === 'string' &&
    typeof (k as { key?: unknown }).key === 'string';
  if (!Array.isArray(keys) || !keys.every(entry))
    throw new Error('must hold "keys", a list of {"id", "key"}');
  return parseKeyEncryptionKeys(keys.map((k) => `${k.id}:${k.key}`).join(','));
}

/** A key file's text for `keys`, as parseKeyFile reads it. */
export function keyFileText(keys: readonly LocalKeyEncryptionKey[]): string {
  return `${JSON.stringify({ keys: keys.map((k) => ({ id: k.id, key: k.key.toString('base64') })) }, null, 2)}\n`;
}

/** A new random key of 32 bytes (a data key, a blind-index key, or a key-encryption key). */
export function newSecretKey(): Buffer {
  return randomBytes(32);
}
