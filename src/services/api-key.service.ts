// API keys (contract §2): `rfh_live_` or `rfh_test_` followed by 43 base62 characters (256 bits).
// The key is shown once, when created; only its SHA-256 and an 8-character display prefix are kept.
import { createHash, randomBytes } from 'node:crypto';
import { v7 as uuidv7 } from 'uuid';
import type { InstitutionRef } from '../domain/access.ts';
import type { Clock } from '../domain/clock.ts';
import type { Role } from '../domain/statuses.ts';
import { ValidationError, NotFoundError } from '../errors.ts';
import type { ApiKeyRecord } from '../db/api-key.repository.ts';
import type { CapabilityStores, Stores } from '../db/stores.ts';
import { unknownToCatalog } from './catalog/names.ts';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const KEY_PATTERN = /^rfh_(live|test)_[0-9A-Za-z]{43}$/;

export type KeyEnvironment = 'live' | 'test';

export interface NewKeyRequest {
  readonly system: string;
  readonly role: Role;
  readonly institutions: readonly InstitutionRef[];
  readonly label?: string | undefined;
  readonly environment: KeyEnvironment;
}

export interface CreatedKey {
  readonly key: string;
  readonly record: ApiKeyRecord;
}

function randomBase62(length: number): string {
  let out = '';
  while (out.length < length) {
    for (const byte of randomBytes(64)) {
      // 248 = 4 × 62: rejecting larger bytes keeps every character equally likely.
      if (byte < 248 && out.length < length) out += BASE62.charAt(byte % 62);
    }
  }
  return out;
}

export function hashApiKey(key: string): string {
  return createHash('sha256').update(key).digest('hex');
}

/** Creates a key inside the caller's transaction; the key itself is returned once, here. */
export async function createApiKeyIn(
  tx: Pick<CapabilityStores, 'apiKeys' | 'catalog'>,
  request: NewKeyRequest,
): Promise<CreatedKey> {
  const errors = await unknownToCatalog(tx.catalog, request.system, request.institutions);
  if (request.role !== 'ops' && request.institutions.length === 0) {
    errors.push({
      path: 'institution',
      message: `a ${request.role} key needs at least one institution`,
    });
  }
  if (errors.length > 0) throw new ValidationError(errors);
  const secret = randomBase62(43);
  const key = `rfh_${request.environment}_${secret}`;
  const id = uuidv7();
  await tx.apiKeys.insert({
    id,
    prefix: `rfh_${request.environment}_${secret.slice(0, 8)}`,
    secretHash: hashApiKey(key),
    system: request.system,
    role: request.role,
    label: request.label ?? null,
    institutions: request.institutions,
  });
  const [record] = await tx.apiKeys.findActiveByIdOrPrefix(id);
  if (!record) throw new Error(`API key ${id} vanished while it was created`);
  return { key, record };
}

/**
 * How long a successful key lookup is reused. Every API request authenticates, and without this each
 * one pays a database round trip before any work. The price is a bound on revocation: a key revoked
 * through another process (`refhub keys revoke`, or another API process) stops working within this
 * time; one revoked through this process stops at once. Unknown and revoked keys are never remembered.
 */
export const KEY_LOOKUP_REUSE_MS = 2_000;
/** Enough for every key an installation holds; past it the oldest entries make room. */
const MAX_REMEMBERED_KEYS = 10_000;

export function createApiKeyService(deps: { stores: Pick<Stores, 'apiKeys' | 'transaction'>; clock: Clock }) {
  /** Lookups by key hash; an entry is used until `until` (epoch milliseconds of `deps.clock`). */
  const recent = new Map<string, { readonly record: ApiKeyRecord; readonly until: number }>();
  /** Counts revocations through this process, so a lookup that overlapped one is not remembered. */
  let revocations = 0;

  return {
    create(request: NewKeyRequest): Promise<CreatedKey> {
      return deps.stores.transaction((tx) => createApiKeyIn(tx, request));
    },

    /** The active key for a presented secret, or undefined. */
    async authenticate(presented: string): Promise<ApiKeyRecord | undefined> {
      if (!KEY_PATTERN.test(presented)) return undefined;
      const hash = hashApiKey(presented);
      const now = deps.clock.now().getTime();
      const remembered = recent.get(hash);
      // The window also ends if the clock went back: a lookup is never reused for longer than promised.
      if (
        remembered !== undefined &&
        now < remembered.until &&
        now >= remembered.until - KEY_LOOKUP_REUSE_MS
      ) {
        return remembered.record;
      }
      recent.delete(hash);
      const before = revocations;
      const record = await deps.stores.apiKeys.findActiveByHash(hash);
      if (record !== undefined && revocations === before) {
        if (recent.size >= MAX_REMEMBERED_KEYS) {
          const oldest = recent.keys().next();
          if (oldest.done !== true) recent.delete(oldest.value);
        }
        recent.set(hash, { record, until: now + KEY_LOOKUP_REUSE_MS });
      }
      return record;
    },

    list: () => deps.stores.apiKeys.list(),

    async revoke(idOrPrefix: string): Promise<ApiKeyRecord> {
      const revoked = await deps.stores.transaction(async (tx) => {
        const repo = tx.apiKeys;
        const [match, ...others] = await repo.findActiveByIdOrPrefix(idOrPrefix);
        if (!match) throw new NotFoundError(`No active API key has the ID or prefix ${idOrPrefix}.`);
        if (others.length > 0) {
          throw new ValidationError([
            { path: 'id', message: `prefix ${idOrPrefix} matches several keys; use the ID` },
          ]);
        }
        await repo.revoke(match.id, deps.clock.now());
        return match;
      });
      // Once the revocation is committed, this process stops honouring the key at once: its entry
      // goes, and a lookup that was already under way does not put it back.
      revocations++;
      for (const [hash, entry] of recent) if (entry.record.id === revoked.id) recent.delete(hash);
      return revoked;
    },
  };
}

export type ApiKeyService = ReturnType<typeof createApiKeyService>;
