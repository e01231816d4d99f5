// Idempotency-Key on every POST (contract §5). The first request with a key claims it; its response
// is stored for 24 hours and replayed for the same key and body (`Idempotent-Replayed: true`). The
// same key with a different body is 422; while the first request still runs, 409. A 5xx releases
// the key so the client can retry. A claim left behind by a crashed process is taken over after
// two minutes.
//
// One-time link tokens are never stored in clear, not even here: a stored response holds a marker
// naming the link's row, and a replay mints a fresh token for the same referral, action and requester.
import { createHash } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AppError, ValidationError } from '../../errors.ts';
import { idempotencyRepository } from '../../db/idempotency.repository.ts';
import { linkTokenRepository } from '../../db/link-token.repository.ts';
import type { AppContext } from '../../context.ts';
import { actionOf, auditRequest } from '../request-audit.ts';
import { hashLinkToken } from '../../services/link-minter.ts';

declare module 'fastify' {
  interface FastifyRequest {
    idempotencyKey: string | null;
  }
}

const RETENTION_MS = 24 * 3600_000;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const ABANDONED_AFTER_MS = 120_000;
const KEY_PATTERN = /^[\x21-\x7e]{1,255}$/;
const REPLAYED_HEADERS = ['content-type', 'etag', 'location'] as const;

/** The referral IDs a stored response names: a referral, a link upsert's referralId, or a page. */
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
    ? object.data.map((r: unknown) => (r as { id?: unknown } | null)?.id)
    : [object.referralId ?? (typeof object.id === 'string' && 'version' in object ? object.id : undefined)];
  return ids.filter((id): id is string => typeof id === 'string' && UUID.test(id));
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

function requestHash(request: FastifyRequest): string {
  return createHash('sha256')
    .update(
      JSON.stringify(
        canonical([request.method, request.routeOptions.url, request.params, request.query, request.body]),
      ),
    )
    .digest('hex');
}

export function registerIdempotency(app: FastifyInstance, ctx: AppContext): void {
  const repo = idempotencyRepository(ctx.db);
  const linkTokens = linkTokenRepository(ctx.db);
  const tokenUrl = new RegExp(
    `${ctx.config.publicUrl.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}/l/([A-Za-z0-9_-]{43})`,
    'g',
  );
  const marker = /\{\{refhub-link:([0-9a-f-]{36})\}\}/g;

  async function withMarkers(body: string): Promise<string> {
    let out = body;
    for (const [url, token = ''] of body.matchAll(tokenUrl)) {
      const row = await linkTokens.findByHash(hashLinkToken(token));
      if (row) out = out.replace(url, `{{refhub-link:${row.id}}}`);
    }
    return out;
  }

  async function withFreshLinks(body: string): Promise<string> {
    let out = body;
    for (const [text, id = ''] of body.matchAll(marker)) {
      const row = await linkTokens.findById(id);
      if (!row) continue;
      const link = await ctx.linkMinter.mintOne(ctx.db, { ...row }, row.action);
      out = out.replace(text, link.url);
    }
    return out;
  }

  /** A replay hands out referral data (and fresh links) again, so it is audited like the original. */
  function auditReplay(request: FastifyRequest, body: string): Promise<void> {
    return auditRequest(ctx, request, 'success', `${actionOf(request)}.replay`, referralIdsIn(body));
  }

  async function replay(
    request: FastifyRequest,
    reply: FastifyReply,
    stored: { status: number; headers: Record<string, string>; body: string },
  ) {
    const body = await withFreshLinks(stored.body);
    await auditReplay(request, body);
    return reply.code(stored.status).headers(stored.headers).header('Idempotent-Replayed', 'true').send(body);
  }

  app.decorateRequest('idempotencyKey', null);

  app.addHook('preHandler', async (request, reply) => {
    if (request.method !== 'POST' || request.apiKey === null) return;
    const key = request.headers['idempotency-key'];
    if (key === undefined) return;
    if (typeof key !== 'string' || !KEY_PATTERN.test(key)) {
      throw new ValidationError([
        { path: 'header.Idempotency-Key', message: 'must be 1 to 255 visible ASCII characters' },
      ]);
    }
    const apiKeyId = request.apiKey.id;
    const hash = requestHash(request);
    for (let attempt = 0; attempt < 2; attempt++) {
      const now = ctx.clock.now();
      if (await repo.claim(apiKeyId, key, hash, now, new Date(now.getTime() + RETENTION_MS))) {
        request.idempotencyKey = key;
        return;
      }
      const existing = await repo.find(apiKeyId, key);
      if (!existing) continue;
      const abandoned =
        existing.state === 'in-progress' && now.getTime() - existing.createdAt.getTime() > ABANDONED_AFTER_MS;
      if (existing.expiresAt <= now || abandoned) {
        await repo.release(apiKeyId, key, existing.createdAt);
        continue;
      }
      if (existing.requestHash !== hash) {
        throw new AppError(
          'idempotency_key_reused',
          422,
          'Idempotency key reused',
          'This Idempotency-Key was used with a different request. Use a new key for a new request.',
        );
      }
      if (existing.state === 'in-progress') {
        reply.header('Retry-After', '1');
        throw new AppError(
          'idempotency_key_in_use',
          409,
          'Request in progress',
          'A request with this Idempotency-Key is still running. Retry after it finishes.',
        );
      }
      return replay(request, reply, {
        status: existing.responseStatus ?? 200,
        headers: existing.responseHeaders ?? {},
        body: existing.responseBody ?? '',
      });
    }
    throw new AppError('idempotency_key_in_use', 409, 'Request in progress', 'Retry this request.');
  });

  app.addHook('onSend', async (request, reply, payload) => {
    const key = request.idempotencyKey;
    if (key === null || request.apiKey === null) return payload;
    request.idempotencyKey = null;
    if (reply.statusCode >= 500 || typeof payload !== 'string') {
      await repo.release(request.apiKey.id, key);
      return payload;
    }
    const headers: Record<string, string> = {};
    for (const name of REPLAYED_HEADERS) {
      const value = reply.getHeader(name);
      if (value !== undefined) headers[name] = String(value);
    }
    await repo.complete(request.apiKey.id, key, {
      status: reply.statusCode,
      headers,
      body: await withMarkers(payload),
    });
    return payload;
  });
}
