// Idempotency-Key on every POST (contract §5). The first request with a key runs; its response is
// stored for 24 hours and replayed for the same key and body (`Idempotent-Replayed: true`). The same
// key with a different body is 422.
//
// Exactly-once: a write claims its key and stores its response in the statement that makes its change
// (db/referrals/change.ts), through the `IdempotentWrite` this plugin hands the service. A crash
// leaves the change with its response, or neither; no claim outlives its statement. A second request
// with the same key waits on the claim (or on the referral's row) until the first statement ends, then
// replays its response, or runs if the first rolled back; past a short bound it gets 409 with
// Retry-After.
//
// A keyed request that writes nothing (a search, or a refusal such as 409 invalid_transition) has its
// response recorded after it is sent. A 5xx is never stored, so the client can retry.
//
// One-time link tokens are never stored in clear, not even here: a stored response holds a marker
// naming the link's row, and a replay mints a fresh token for the same referral, action and requester.
// A secret shown once (a webhook signing secret: the route names its field in `shownOnce`) is not
// stored at all: a replay answers without it and with `secretShown: false`. It cannot be minted
// again like a link, since the one in use is the one the first answer showed.
import { createHash } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { IdempotencyKeyInUseError, IdempotencyKeyReusedError, ValidationError } from '../../errors.ts';
import { isUuid } from '../../domain/ids.ts';
import type {
  IdempotentWrite,
  KeyClaim,
  StoredKey,
  StoredResponse,
} from '../../db/idempotency.repository.ts';
import type { NewLinkToken } from '../../db/links.repository.ts';
import type { ApiDeps } from '../api-deps.ts';
import { actionOf, auditRequest, type RequestAuditDeps } from '../request-audit.ts';
import { hashLinkToken } from '../../services/links/minter.ts';
import { responseHeadersOf } from '../http.ts';

/** The Idempotency-Key of a request, and whether its write stored the response itself. */
export interface KeyedRequest extends IdempotentWrite {
  readonly claimOf: KeyClaim;
  /** The write stored its response in its own statement. */
  readonly stored: boolean;
  /** Answers with the response of the request that took the key first (see IdempotencyKeyTaken). */
  replayTaken(reply: FastifyReply): Promise<FastifyReply>;
}

declare module 'fastify' {
  interface FastifyRequest {
    idempotency: KeyedRequest | null;
  }
  interface FastifyContextConfig {
    /**
     * The top-level field of the success body that holds a secret shown only in the live answer. A
     * stored response omits it and carries `secretShown: false` instead.
     */
    shownOnce?: string;
  }
}

/**
 * Thrown when a write's key turns out to be taken by a request that committed first; the write's
 * statement rolled back, and the error handler replays that request's response.
 */
export class IdempotencyKeyTaken extends Error {
  override readonly name = 'IdempotencyKeyTaken';
}

const RETENTION_MS = 24 * 3600_000;
/** How long a request waits for another one with the same key before it answers 409. */
const CLAIM_WAIT_MS = 5_000;
const KEY_PATTERN = /^[\x21-\x7e]{1,255}$/;
const JSON_TYPE = 'application/json; charset=utf-8';
const NOT_STORED: ReadonlySet<string> = new Set(['idempotency_key_in_use', 'idempotency_key_reused']);

/**
 * The referral IDs a stored response names: a referral, a link upsert's referralId, or a page (of
 * referrals, or of entries that name their referral, as a patient's access report does).
 */
function referralIdsIn(body: string): string[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return [];
  }
  if (parsed === null || typeof parsed !== 'object') return [];
  const object = parsed as { id?: unknown; referralId?: unknown; data?: unknown };
  const ids: unknown[] = Array.isArray(object.data)
    ? object.data.map((r: unknown) => {
        const item = r as { id?: unknown; referralId?: unknown } | null;
        return item?.referralId ?? item?.id;
      })
    : [object.referralId ?? (typeof object.id === 'string' && 'version' in object ? object.id : undefined)];
  return ids.filter((id): id is string => typeof id === 'string' && isUuid(id));
}

/** `body` without the secret in `field`, saying so with `secretShown: false`; as it was if it has none. */
function withoutSecret(body: string, field: string | undefined): string {
  if (field === undefined) return body;
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return body;
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) return body;
  if (!Object.hasOwn(parsed, field)) return body;
  const kept = Object.entries(parsed).filter(([name]) => name !== field);
  return JSON.stringify({ ...Object.fromEntries(kept), secretShown: false });
}

function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical);
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value as Record<string, unknown>)
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([k, v]) => [k, canonical(v)]),
    );
  }
  return value;
}

/**
 * What makes two requests the same: the route, the path, the query and the body. A body of bytes (a
 * file) counts by its SHA-256, with the type and name it was sent with.
 */
function requestText(request: FastifyRequest): string {
  const body = Buffer.isBuffer(request.body)
    ? {
        sha256: createHash('sha256').update(request.body).digest('hex'),
        type: request.headers['content-type'] ?? null,
        disposition: request.headers['content-disposition'] ?? null,
      }
    : request.body;
  return JSON.stringify(
    canonical([request.method, request.routeOptions.url, request.params, request.query, body]),
  );
}

/**
 * Whether a stored request hash is this request's. Records kept before the digest was keyed (a plain
 * SHA-256 in hex, for at most their 24 hours) are compared as they were made.
 */
function sameRequest(stored: string, request: FastifyRequest, claim: KeyClaim): boolean {
  if (stored === claim.requestHash) return true;
  return (
    /^[0-9a-f]{64}$/.test(stored) &&
    stored === createHash('sha256').update(requestText(request)).digest('hex')
  );
}

/** The success status the route declares (201 for a create, else 200). */
function successStatusOf(request: FastifyRequest): number {
  const declared = Object.keys(request.routeOptions.schema?.response ?? {}).find((s) => /^2\d\d$/.test(s));
  return declared === undefined ? 200 : Number(declared);
}

export type IdempotencyDeps = Pick<ApiDeps, 'config' | 'stores' | 'clock' | 'linkMinter'> & RequestAuditDeps;

export function registerIdempotency(app: FastifyInstance, deps: IdempotencyDeps): void {
  const { idempotency: keys, links } = deps.stores;
  const tokenUrl = new RegExp(
    `${deps.config.publicUrl.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}/l/([A-Za-z0-9_-]{43})`,
    'g',
  );
  const marker = /\{\{refhub-link:([0-9a-f-]{36})\}\}/g;

  /** `body` with no secret shown once, and each link URL whose token `rowOf` knows as a marker. */
  function storable(request: FastifyRequest, body: string, rowOf: ReadonlyMap<string, string>): string {
    let out = withoutSecret(body, request.routeOptions.config.shownOnce);
    for (const [url, token = ''] of out.matchAll(tokenUrl)) {
      const id = rowOf.get(hashLinkToken(token));
      if (id !== undefined) out = out.replace(url, `{{refhub-link:${id}}}`);
    }
    return out;
  }

  /** What is stored of a response whose links were minted elsewhere: their rows are looked up. */
  async function storedBodyOf(request: FastifyRequest, body: string): Promise<string> {
    const rowOf = new Map<string, string>();
    for (const [, token = ''] of body.matchAll(tokenUrl)) {
      const hash = hashLinkToken(token);
      const row = await links.findByHash(hash);
      if (row) rowOf.set(hash, row.id);
    }
    return storable(request, body, rowOf);
  }

  async function withFreshLinks(body: string): Promise<string> {
    let out = body;
    for (const [text, id = ''] of body.matchAll(marker)) {
      const row = await links.findById(id);
      if (!row) continue;
      const link = await deps.linkMinter.mintOne(links, { ...row }, row.action);
      out = out.replace(text, link.url);
    }
    return out;
  }

  /** A replay hands out referral data (and fresh links) again, so it is audited like the original. */
  async function replay(request: FastifyRequest, reply: FastifyReply, stored: StoredResponse) {
    const body = await withFreshLinks(stored.body);
    await auditRequest(deps, request, 'success', `${actionOf(request)}.replay`, referralIdsIn(body));
    return reply.code(stored.status).headers(stored.headers).header('Idempotent-Replayed', 'true').send(body);
  }

  /** Answers a request whose key another request holds: its response, or 422 for another request. */
  async function answerFromRecord(request: FastifyRequest, reply: FastifyReply, claim: KeyClaim) {
    const existing = await keys.find(claim.apiKeyId, claim.key);
    if (existing === undefined) throw new IdempotencyKeyInUseError();
    if (!sameRequest(existing.requestHash, request, claim)) throw new IdempotencyKeyReusedError();
    if (existing.response === null) throw new IdempotencyKeyInUseError();
    return replay(request, reply, existing.response);
  }

  function keyedRequest(request: FastifyRequest, reply: FastifyReply, claim: KeyClaim): KeyedRequest {
    let stored = false;
    return {
      claimOf: claim,
      get stored() {
        return stored;
      },
      replayTaken: (to) => answerFromRecord(request, to, claim),
      storedKey(result: unknown, links: readonly NewLinkToken[]): StoredKey {
        const status = successStatusOf(request);
        // The route's own serializer, so the stored body is the bytes the live response carries.
        const body = String(
          reply.serializeInput(result as Record<string, unknown>, String(status), 'application/json'),
        );
        return {
          claim,
          waitMs: CLAIM_WAIT_MS,
          response: {
            status,
            headers: { 'content-type': JSON_TYPE, ...responseHeadersOf(request, result) },
            body: storable(request, body, new Map(links.map((link) => [link.tokenHash, link.id]))),
          },
        };
      },
      committed() {
        stored = true;
      },
      refusal(error: unknown) {
        const failure = keys.claimFailure(error);
        if (failure === 'held') return new IdempotencyKeyInUseError();
        if (failure === 'taken') return new IdempotencyKeyTaken();
        return undefined;
      },
      async replayIfTaken() {
        const taken = await keys.find(claim.apiKeyId, claim.key);
        if (taken !== undefined) {
          throw new IdempotencyKeyTaken();
        }
      },
    };
  }

  app.decorateRequest('idempotency', null);

  app.addHook('preHandler', async (request, reply) => {
    if (request.method !== 'POST' || request.apiKey === null) return;
    const key = request.headers['idempotency-key'];
    if (key === undefined) return;
    if (typeof key !== 'string' || !KEY_PATTERN.test(key)) {
      throw new ValidationError([
        { path: 'header.Idempotency-Key', message: 'must be 1 to 255 visible ASCII characters' },
      ]);
    }
    const now = deps.clock.now();
    const claim: KeyClaim = {
      apiKeyId: request.apiKey.id,
      key,
      requestHash: await keys.requestHash(requestText(request)),
      now,
      expiresAt: new Date(now.getTime() + RETENTION_MS),
    };
    const existing = await keys.find(claim.apiKeyId, key);
    if (existing !== undefined && existing.expiresAt <= now) {
      await keys.release(claim.apiKeyId, key, existing.createdAt);
    } else if (existing !== undefined) {
      return answerFromRecord(request, reply, claim);
    }
    request.idempotency = keyedRequest(request, reply, claim);
  });

  app.addHook('onSend', async (request, reply, payload) => {
    const keyed = request.idempotency;
    if (keyed === null || keyed.stored) return payload;
    request.idempotency = null;
    if (reply.statusCode >= 500 || typeof payload !== 'string' || reply.hasHeader('idempotent-replayed')) {
      return payload;
    }
    const code = reply.statusCode >= 400 ? problemCodeOf(payload) : undefined;
    if (code !== undefined && NOT_STORED.has(code)) return payload;
    await keys.record(keyed.claimOf, {
      status: reply.statusCode,
      headers: { 'content-type': String(reply.getHeader('content-type') ?? JSON_TYPE) },
      body: await storedBodyOf(request, payload),
    });
    return payload;
  });
}

function problemCodeOf(payload: string): string | undefined {
  try {
    const parsed = JSON.parse(payload) as { code?: unknown };
    return typeof parsed.code === 'string' ? parsed.code : undefined;
  } catch {
    return undefined;
  }
}
