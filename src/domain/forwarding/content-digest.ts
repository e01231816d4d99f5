// `Content-Digest` (RFC 9530): the sender states the SHA-256 of the exact body bytes it sends, and
// the receiver checks them before it trusts the body. The forwarder and the sandbox EHR share this
// module, so both sides compute the digest the same way.
//
// Verification policy: the header is a Structured Field dictionary that may list several
// algorithms. `sha-256` must be present. Every other *secure* algorithm we know (`sha-512`) is
// checked too when present, since a sender that states two digests claims both. Insecure or
// unknown algorithms (`md5`, `sha`, `unixsum`, ...) are ignored, as RFC 9530 §5 allows. Digests
// are compared in constant time, so a receiver does not leak how much of a guess was right.
import { createHash, timingSafeEqual } from 'node:crypto';
import { parseDictionary, type DictionaryMember } from './structured-fields.ts';

type Algorithm = 'sha256' | 'sha512';

/** The RFC 9530 algorithm keys we verify, with their Node name and digest length in bytes. */
const VERIFIED_ALGORITHMS: ReadonlyMap<string, { readonly hash: Algorithm; readonly bytes: number }> =
  new Map([
    ['sha-256', { hash: 'sha256', bytes: 32 }],
    ['sha-512', { hash: 'sha512', bytes: 64 }],
  ]);

const REQUIRED_ALGORITHM = 'sha-256';

function toBytes(body: Uint8Array | string): Uint8Array {
  return typeof body === 'string' ? Buffer.from(body, 'utf8') : body;
}

function digest(hash: Algorithm, body: Uint8Array | string): Buffer {
  return createHash(hash).update(toBytes(body)).digest();
}

/** The `Content-Digest` header value for `body` (a string is hashed as UTF-8): `sha-256=:<base64>:`. */
export function contentDigest(body: Uint8Array | string): string {
  return `${REQUIRED_ALGORITHM}=:${digest('sha256', body).toString('base64')}:`;
}

/** The lowercase hex SHA-256 of `data` (a string is hashed as UTF-8), as recorded for EHR forms. */
export function sha256Hex(data: Uint8Array | string): string {
  return digest('sha256', data).toString('hex');
}

function matches(member: DictionaryMember, hash: Algorithm, bytes: number, body: Uint8Array): boolean {
  if (member.kind !== 'item' || member.value.type !== 'byte-sequence') return false;
  const stated = member.value.value;
  if (stated.length !== bytes) return false;
  return timingSafeEqual(stated, digest(hash, body));
}

/**
 * Whether `header` (a `Content-Digest` field value, or undefined when absent) proves `body`: it must
 * be a valid Structured Field dictionary with a `sha-256` digest of `body`, and every other verified
 * algorithm it lists must match as well.
 */
export function verifyContentDigest(header: string | undefined, body: Uint8Array | string): boolean {
  if (header === undefined) return false;
  const members = parseDictionary(header);
  if (members === undefined || !members.has(REQUIRED_ALGORITHM)) return false;
  const bytes = toBytes(body);
  let allMatch = true;
  for (const [key, member] of members) {
    const algorithm = VERIFIED_ALGORITHMS.get(key);
    // No early return: every listed digest is computed, so timing does not reveal which one failed.
    if (algorithm !== undefined && !matches(member, algorithm.hash, algorithm.bytes, bytes)) allMatch = false;
  }
  return allMatch;
}
