// Field-level encryption of patient data (envelope encryption). Each value of a column that holds
// patient data is sealed with AES-256-GCM under a data key, with the table, column and row as
// additional authenticated data, so a value copied to another row or column fails to open. Data keys
// are random, kept in the database only wrapped by a key-encryption key (KEK) that never is: the key
// ring (`KeyEncryptionKeys`) is DATA_KEYS or a key file today, and a KMS or Vault can stand behind the
// same interface. Equality lookups (the list filter by patient, the access report) use a blind index,
// an HMAC-SHA-256 of the normalised value under a key of its own, never the plaintext.
import { createCipheriv, createDecipheriv, createHmac, randomBytes, type KeyObject } from 'node:crypto';

export {
  KeyRingError,
  keyFileText,
  localKeyRing,
  newSecretKey,
  parseKeyEncryptionKeys,
  parseKeyFile,
  type KeyEncryptionKeys,
  type LocalKeyEncryptionKey,
} from './key-ring.ts';

/** A sealed text value: `rh1:<data key ID>:<base64url of IV, ciphertext and tag>`. */
const TEXT_PREFIX = 'rh1:';
const IV_BYTES = 12;
const TAG_BYTES = 16;

/** A data key's ID: 12 hex digits, named in every value it sealed. */
export function newDataKeyId(): string {
  return randomBytes(6).toString('hex');
}

/** Where a value lives: its additional authenticated data. `row` is the row's key, as text. */
export interface FieldPlace {
  readonly table: string;
  readonly column: string;
  readonly row: string;
}

function aad(place: FieldPlace): Buffer {
  return Buffer.from(`${place.table}\u0000${place.column}\u0000${place.row}`, 'utf8');
}

/** A value names a data key this process has not loaded: another process has made one since. */
export class UnknownDataKeyError extends Error {
  readonly keyId: string;
  constructor(keyId: string) {
    super(`data_key_unknown: ${keyId}`);
    this.keyId = keyId;
    this.name = 'UnknownDataKeyError';
  }
}

/** A sealed value did not open: it was changed, or moved from the place it was sealed for. */
export class FieldTamperedError extends Error {
  constructor(place: FieldPlace) {
    // The place names a table, a column and a row ID: never a value.
    super(`field_not_authentic: ${place.table}.${place.column} of row ${place.row}`);
    this.name = 'FieldTamperedError';
  }
}

/** Whether `value` is sealed (rather than plaintext written before encryption was turned on). */
export function isSealed(value: string): boolean {
  return value.startsWith(TEXT_PREFIX);
}

/** The data key a sealed value names; undefined for plaintext. */
export function sealedKeyId(value: string): string | undefined {
  if (!isSealed(value)) return undefined;
  const end = value.indexOf(':', TEXT_PREFIX.length);
  return end === -1 ? undefined : value.slice(TEXT_PREFIX.length, end);
}

/** The SQL `LIKE` pattern of the values sealed under `keyId`. */
export function sealedUnderPattern(keyId: string): string {
  return `${TEXT_PREFIX}${keyId}:%`;
}

/** Seals and opens field values, and computes blind indexes: what repositories use. */
export interface FieldCipher {
  /** The ID of the data key new values are sealed with. */
  readonly activeKeyId: string;
  seal(value: string, place: FieldPlace): string;
  /** The plaintext of a sealed value; plaintext (written before encryption) is returned as it is. */
  open(value: string, place: FieldPlace): string;
  openOptional<T extends string | null>(value: T, place: FieldPlace): T;
  /** The blind index of a value that is looked up by equality. */
  blindIndex(kind: BlindIndexKind, value: string): string;
  /** Bytes sealed under the active key, in the chunked format below. */
  sealBytes(value: Uint8Array, place: FieldPlace): Buffer;
  /** Seals bytes given a piece at a time, under the active key: for bytes read a piece at a time. */
  bytesSealer(place: FieldPlace): BytesSealer;
  /**
   * The plaintext of chunk `index` (`sealed`, its bytes as stored) of sealed bytes laid out as
   * `layout`; `last` says whether the reader expects it to be the last, which the chunk proves.
   */
  openChunk(
    layout: SealedBytesLayout,
    index: number,
    last: boolean,
    sealed: Uint8Array,
    place: FieldPlace,
  ): Buffer;
}

/*
 * Sealed bytes (an attachment's content), read a piece at a time without the rest of the file:
 *
 *   header  'RHB1' | plaintext bytes per chunk (uint32, big-endian) | key ID length (1 byte) | key ID
 *   chunks  chunk 0 | chunk 1 | …, each its own IV (12 bytes) | ciphertext | tag (16 bytes)
 *
 * Every chunk but the last holds a whole chunk of plaintext; the last holds the rest, 0 bytes only for
 * an empty file. So a file of n bytes has max(1, ceil(n / chunk)) chunks, and where each starts follows
 * from n (which the attachment's row keeps), without reading the ones before it. Each chunk is sealed
 * with AES-256-GCM under the key the header names, its additional data the value's place, the chunk
 * size, the chunk's index and whether it is the last: a chunk moved to another index or another file,
 * chunks dropped from the end (the new last one was not sealed as last) or cut short do not open.
 */
const BYTES_MAGIC = Buffer.from('RHB1', 'latin1');
/** Plaintext bytes per chunk: a piece a reader holds at once, with 28 bytes of IV and tag each. */
export const SEALED_CHUNK_BYTES = 64 * 1024;
/** What a chunk adds to its plaintext: its IV and its tag. */
export const SEALED_CHUNK_OVERHEAD = IV_BYTES + TAG_BYTES;
const HEADER_FIXED = BYTES_MAGIC.length + 4 + 1;
const BYTES_KEY_ID = /^[A-Za-z0-9._-]{1,64}$/;
/** The most plaintext a header may put in one chunk: what a reader holds is bounded, whatever it reads. */
const MAX_CHUNK_BYTES = 16 * 1024 * 1024;
/** The longest a header can be: what a reader reads first to find one. */
export const SEALED_BYTES_HEADER_MAX = HEADER_FIXED + 64;

/** What a header says: the key the chunks are sealed under, and how they are laid out. */
export interface SealedBytesLayout {
  readonly keyId: string;
  /** Plaintext bytes per chunk. */
  readonly chunkBytes: number;
  /** The header's own length: where chunk 0 starts. */
  readonly headerBytes: number;
}

/** The header sealed bytes under `keyId` begin with (a sweep looks for those that begin otherwise). */
export function sealedBytesHeader(keyId: string, chunkBytes = SEALED_CHUNK_BYTES): Buffer {
  if (!BYTES_KEY_ID.test(keyId)) throw new Error(`data key ID ${keyId} cannot name sealed bytes`);
  const header = Buffer.alloc(HEADER_FIXED + keyId.length);
  BYTES_MAGIC.copy(header, 0);
  header.writeUInt32BE(chunkBytes, BYTES_MAGIC.length);
  header.writeUInt8(keyId.length, BYTES_MAGIC.length + 4);
  header.write(keyId, HEADER_FIXED, 'latin1');
  return header;
}

/**
 * The layout the header at the start of `head` names; undefined when `head` does not begin with one
 * (bytes stored before field encryption).
 */
export function sealedBytesLayout(head: Uint8Array): SealedBytesLayout | undefined {
  const bytes = Buffer.from(head.buffer, head.byteOffset, head.byteLength);
  if (bytes.length < HEADER_FIXED || !bytes.subarray(0, BYTES_MAGIC.length).equals(BYTES_MAGIC)) {
    return undefined;
  }
  const chunkBytes = bytes.readUInt32BE(BYTES_MAGIC.length);
  const headerBytes = HEADER_FIXED + bytes.readUInt8(BYTES_MAGIC.length + 4);
  if (chunkBytes === 0 || chunkBytes > MAX_CHUNK_BYTES || bytes.length < headerBytes) return undefined;
  const keyId = bytes.toString('latin1', HEADER_FIXED, headerBytes);
  return BYTES_KEY_ID.test(keyId) ? { keyId, chunkBytes, headerBytes } : undefined;
}

/** How many chunks `plainBytes` of plaintext take (an empty file takes one, empty, last chunk). */
export function sealedChunkCount(layout: SealedBytesLayout, plainBytes: number): number {
  return Math.max(1, Math.ceil(plainBytes / layout.chunkBytes));
}

/** The stored length of chunk `index` of `plainBytes` sealed. */
export function sealedChunkLength(layout: SealedBytesLayout, plainBytes: number, index: number): number {
  const last = sealedChunkCount(layout, plainBytes) - 1;
  const plain = index < last ? layout.chunkBytes : plainBytes - last * layout.chunkBytes;
  return plain + SEALED_CHUNK_OVERHEAD;
}

/** Where chunk `index` starts in the stored bytes (0-based). */
export function sealedChunkOffset(layout: SealedBytesLayout, index: number): number {
  return layout.headerBytes + index * (layout.chunkBytes + SEALED_CHUNK_OVERHEAD);
}

/** The stored length of `plainBytes` sealed: always more than `plainBytes`. */
export function sealedBytesLength(layout: SealedBytesLayout, plainBytes: number): number {
  return layout.headerBytes + plainBytes + sealedChunkCount(layout, plainBytes) * SEALED_CHUNK_OVERHEAD;
}

/** Seals bytes handed over a piece at a time (the pieces are kept, not copied, until their chunk fills). */
export interface BytesSealer {
  /** The header, which the sealed bytes begin with. */
  readonly header: Buffer;
  /** The chunks `piece` fills, sealed, in order (the chunk that ends the bytes only once `end` says so). */
  push(piece: Uint8Array): Buffer[];
  /** The last chunk, sealed: the sealer is done. */
  end(): Buffer;
}

/** A chunk's additional data: the value's place, then the chunk size, its index and whether it is last. */
function chunkAad(place: FieldPlace, chunkBytes: number, index: number, last: boolean): Buffer {
  const where = aad(place);
  const aadBytes = Buffer.alloc(BYTES_MAGIC.length + 1 + where.length + 9);
  let at = BYTES_MAGIC.copy(aadBytes, 0);
  at = aadBytes.writeUInt8(0, at);
  at += where.copy(aadBytes, at);
  at = aadBytes.writeUInt32BE(chunkBytes, at);
  at = aadBytes.writeUInt32BE(index, at);
  aadBytes.writeUInt8(last ? 1 : 0, at);
  return aadBytes;
}

/** What is looked up by equality without its plaintext. */
export type BlindIndexKind = 'patient-uin' | 'keyed-request';

/** Normalises before indexing, so that equal values as people write them index the same. */
const NORMALISE: Record<BlindIndexKind, (value: string) => string> = {
  'patient-uin': (uin) => uin.trim().toUpperCase(),
  // A keyed write's request (api/plugins/idempotency.ts), compared whole: a plain hash of a body that
  // names a patient could be reversed by trying every UIN.
  'keyed-request': (request) => request,
};

/** A cipher over loaded data keys (each an AES-256 secret key) and the blind-index key. */
export function fieldCipher(
  keys: ReadonlyMap<string, KeyObject>,
  activeKeyId: string,
  blindIndexKey: KeyObject,
): FieldCipher {
  const active = keys.get(activeKeyId);
  if (active === undefined) throw new UnknownDataKeyError(activeKeyId);
  const cipher: FieldCipher = {
    activeKeyId,
    seal(value, place) {
      const iv = randomBytes(IV_BYTES);
      const c = createCipheriv('aes-256-gcm', active, iv);
      c.setAAD(aad(place));
      const sealed = Buffer.concat([iv, c.update(value, 'utf8'), c.final(), c.getAuthTag()]);
      return `${TEXT_PREFIX}${activeKeyId}:${sealed.toString('base64url')}`;
    },
    open(value, place) {
      const keyId = sealedKeyId(value);
      if (keyId === undefined) return value;
      const key = keys.get(keyId);
      if (key === undefined) throw new UnknownDataKeyError(keyId);
      const sealed = Buffer.from(value.slice(TEXT_PREFIX.length + keyId.length + 1), 'base64url');
      if (sealed.length < IV_BYTES + TAG_BYTES) throw new FieldTamperedError(place);
      try {
        const d = createDecipheriv('aes-256-gcm', key, sealed.subarray(0, IV_BYTES));
        d.setAAD(aad(place));
        d.setAuthTag(sealed.subarray(sealed.length - TAG_BYTES));
        return Buffer.concat([
          d.update(sealed.subarray(IV_BYTES, sealed.length - TAG_BYTES)),
          d.final(),
        ]).toString('utf8');
      } catch {
        throw new FieldTamperedError(place);
      }
    },
    openOptional(value, place) {
      return (value === null ? null : cipher.open(value, place)) as typeof value;
    },
    blindIndex(kind, value) {
      return createHmac('sha256', blindIndexKey)
        .update(`${kind}\u0000${NORMALISE[kind](value)}`)
        .digest('base64url');
    },
    sealBytes(value, place) {
      const sealer = cipher.bytesSealer(place);
      return Buffer.concat([sealer.header, ...sealer.push(value), sealer.end()]);
    },
    bytesSealer(place) {
      const header = sealedBytesHeader(activeKeyId);
      const chunkBytes = SEALED_CHUNK_BYTES;
      let pending: Buffer[] = [];
      let pendingBytes = 0;
      let index = 0;
      let ended = false;
      const sealChunk = (parts: readonly Buffer[], last: boolean) => {
        const iv = randomBytes(IV_BYTES);
        const c = createCipheriv('aes-256-gcm', active, iv);
        c.setAAD(chunkAad(place, chunkBytes, index, last));
        index += 1;
        const out = [iv, ...parts.map((part) => c.update(part)), c.final(), c.getAuthTag()];
        return Buffer.concat(out);
      };
      return {
        header,
        push(piece) {
          if (ended) throw new Error('sealed bytes pushed to after their end');
          let rest = Buffer.from(piece.buffer, piece.byteOffset, piece.byteLength);
          const sealed: Buffer[] = [];
          // A full chunk is sealed only once more bytes follow it: until then it may be the last.
          while (pendingBytes + rest.length > chunkBytes) {
            const take = chunkBytes - pendingBytes;
            sealed.push(sealChunk([...pending, rest.subarray(0, take)], false));
            pending = [];
            pendingBytes = 0;
            rest = rest.subarray(take);
          }
          if (rest.length > 0) {
            pending.push(rest);
            pendingBytes += rest.length;
          }
          return sealed;
        },
        end() {
          if (ended) throw new Error('sealed bytes ended twice');
          ended = true;
          const last = sealChunk(pending, true);
          pending = [];
          return last;
        },
      };
    },
    openChunk(layout, index, last, sealed, place) {
      const key = keys.get(layout.keyId);
      if (key === undefined) throw new UnknownDataKeyError(layout.keyId);
      const plainBytes = sealed.length - SEALED_CHUNK_OVERHEAD;
      // Every chunk but the last is whole; the last is whole or shorter.
      if (plainBytes < 0 || plainBytes > layout.chunkBytes || (!last && plainBytes !== layout.chunkBytes)) {
        throw new FieldTamperedError(place);
      }
      const bytes = Buffer.from(sealed.buffer, sealed.byteOffset, sealed.byteLength);
      try {
        const d = createDecipheriv('aes-256-gcm', key, bytes.subarray(0, IV_BYTES));
        d.setAAD(chunkAad(place, layout.chunkBytes, index, last));
        d.setAuthTag(bytes.subarray(bytes.length - TAG_BYTES));
        const plain = d.update(bytes.subarray(IV_BYTES, bytes.length - TAG_BYTES));
        // Checks the tag: nothing of the chunk is handed out before it passed.
        d.final();
        return plain;
      } catch {
        throw new FieldTamperedError(place);
      }
    },
  };
  return cipher;
}
