// Idempotency-Key on POST (contract §5): a retry with the same key and body replays the stored
// response and creates nothing new; a different body is 422; a key whose first request still runs is
// 409. Keys belong to one API key, expire after 24 h, and stored responses never hold a link token.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { sql } from 'kysely';
import { openColumns } from '../../../src/db/data-keys/data-keys.repository.ts';
import { isSealed } from '../../../src/domain/data-keys.ts';
import { hashLinkToken } from '../../../src/services/links/minter.ts';
import { APP_ENGINES } from '../../support/engines.ts';
import { PATIENT } from '../../support/fixtures/patients.ts';
import { REQUESTER } from '../../support/referral-routes.ts';
import { referralIn } from '../../support/scenarios.ts';
import { apiKeyIdOf, countRows, tokenOf } from '../../support/store-inspection.ts';
import { createTestApp, type TestApp, type TestParty } from '../../support/test-app.ts';

let sequence = 0;
/** A key no other test uses. */
const freshKey = (label: string) => `${label}-${process.pid}-${++sequence}`;

function withKey(options: InjectOptions, key: string): InjectOptions {
  return { ...options, headers: { ...options.headers, 'idempotency-key': key } };
}

describe.each(APP_ENGINES)('Idempotency-Key on %s', (engine) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp(engine);
  });
  afterAll(async () => {
    await t.close();
  });

  const createReferral = (
    who: TestParty = t.sender,
    fields: Record<string, unknown> = {},
  ): InjectOptions => ({
    method: 'POST',
    url: '/api/v1/referrals',
    payload: { ...who.institution, offeringId: 'cgh-gastro', ...PATIENT, ...fields },
  });
  const addNote = (id: string, content = 'Patient prefers mornings.'): InjectOptions => ({
    method: 'POST',
    url: `/api/v1/referrals/${id}/notes`,
    payload: { ...t.sender.institution, content },
  });
  const upsertLink = (fields: Record<string, unknown> = {}): InjectOptions => ({
    method: 'POST',
    url: '/api/v1/links/upsert',
    payload: { ...t.sender.institution, requesterIdentifier: REQUESTER, ...PATIENT, ...fields },
  });

  async function notesOf(referralId: string): Promise<number> {
    const rows = await t.ctx.db
      .selectFrom('notes')
      .select('id')
      .where('referral_id', '=', referralId)
      .execute();
    return rows.length;
  }

  function expectReplayOf(replay: LightMyRequestResponse, first: LightMyRequestResponse) {
    expect(replay.statusCode).toBe(first.statusCode);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(first.headers['idempotent-replayed']).toBeUndefined();
    expect(replay.headers['content-type']).toBe(first.headers['content-type']);
  }

  describe('a retry with the same key and body', () => {
    it('replays a create: same status, body, ETag and Location, and only one referral', async () => {
      const key = freshKey('create');
      const before = await countRows(t, 'referrals');
      const first = await t.request(t.sender, withKey(createReferral(), key));
      expect(first.statusCode, first.body).toBe(201);
      const replay = await t.request(t.sender, withKey(createReferral(), key));
      expectReplayOf(replay, first);
      expect(replay.json()).toEqual(first.json());
      expect(replay.headers.etag).toBe(first.headers.etag);
      expect(replay.headers.location).toBe(first.headers.location);
      expect(await countRows(t, 'referrals')).toBe(before + 1);
    });

    it('replays a note: the same note, created once', async () => {
      const referral = await referralIn(t, 'pending-acceptance');
      const key = freshKey('note');
      const first = await t.request(t.sender, withKey(addNote(referral.id), key));
      expect(first.statusCode, first.body).toBe(201);
      const replays = [
        await t.request(t.sender, withKey(addNote(referral.id), key)),
        await t.request(t.sender, withKey(addNote(referral.id), key)),
      ];
      for (const replay of replays) {
        expectReplayOf(replay, first);
        expect(replay.json()).toEqual(first.json());
      }
      expect(await notesOf(referral.id)).toBe(1);
    });

    it('audits every replay, naming the referral, since a replay hands out its data again', async () => {
      const referral = await referralIn(t, 'pending-acceptance');
      const key = freshKey('audited');
      const first = await t.request(t.sender, withKey(addNote(referral.id), key));
      expect(first.statusCode, first.body).toBe(201);
      const replay = await t.request(t.sender, {
        ...withKey(addNote(referral.id), key),
        headers: { 'idempotency-key': key, 'x-request-id': `replay-${key}` },
      });
      expect(replay.headers['idempotent-replayed']).toBe('true');
      const rows = await t.ctx.db
        .selectFrom('audit_events')
        .select(['action', 'outcome', 'referral_ids', 'institution_id', 'api_key_id'])
        .where('request_id', '=', `replay-${key}`)
        .execute();
      expect(rows).toEqual([
        {
          action: 'referral.add-note.replay',
          outcome: 'success',
          referral_ids: [referral.id],
          institution_id: t.sender.institution.institutionId,
          api_key_id: await apiKeyIdOf(t, t.sender),
        },
      ]);
    });

    it('replays a transition without running it twice', async () => {
      const referral = await referralIn(t, 'pending-acceptance');
      const key = freshKey('cancel');
      const cancel: InjectOptions = {
        method: 'POST',
        url: `/api/v1/referrals/${referral.id}/cancel`,
        payload: { ...t.sender.institution, cancelNote: 'Patient recovered' },
      };
      const first = await t.request(t.sender, withKey(cancel, key));
      expect(first.statusCode, first.body).toBe(200);
      const replay = await t.request(t.sender, withKey(cancel, key));
      expectReplayOf(replay, first);
      expect(replay.json()).toEqual(first.json());
      const events = await t.ctx.db
        .selectFrom('timeline_events')
        .select('type')
        .where('referral_id', '=', referral.id)
        .where('type', '=', 'referral.cancelled')
        .execute();
      expect(events).toHaveLength(1);
      // Without the key, the same request is a new one, and cancelling twice is not allowed.
      expect((await t.request(t.sender, cancel)).statusCode).toBe(409);
    });

    it('replays an error response as it was', async () => {
      const referral = await referralIn(t, 'draft');
      const key = freshKey('invalid');
      const cancel: InjectOptions = {
        method: 'POST',
        url: `/api/v1/referrals/${referral.id}/cancel`,
        payload: { ...t.sender.institution, cancelNote: 'Too early' },
      };
      const first = await t.request(t.sender, withKey(cancel, key));
      expect(first.json()).toMatchObject({ status: 409, code: 'invalid_transition' });
      const replay = await t.request(t.sender, withKey(cancel, key));
      expectReplayOf(replay, first);
      expect(replay.json()).toEqual(first.json());
    });
  });

  describe('the request a key is kept with', () => {
    const storedHash = async (key: string) =>
      (
        await t.ctx.db
          .selectFrom('idempotency_keys')
          .select('request_hash')
          .where('key', '=', key)
          .executeTakeFirstOrThrow()
      ).request_hash;

    it('is a keyed digest, which no one can reverse by hashing every UIN', async () => {
      const key = freshKey('digest');
      const first = await t.request(t.sender, withKey(createReferral(), key));
      expect(first.statusCode).toBe(201);
      // An HMAC-SHA-256 under the blind-index key (base64url), not a SHA-256 of the request (hex).
      expect(await storedHash(key)).toMatch(/^[A-Za-z0-9_-]{43}$/);
      expectReplayOf(await t.request(t.sender, withKey(createReferral(), key)), first);
    });

    it('kept as a plain SHA-256 (before the digest was keyed) still refuses another request', async () => {
      const key = freshKey('legacy');
      expect((await t.request(t.sender, withKey(createReferral(), key))).statusCode).toBe(201);
      await t.ctx.db
        .updateTable('idempotency_keys')
        .set({ request_hash: 'ab'.repeat(32) })
        .where('key', '=', key)
        .execute();
      const reused = await t.request(t.sender, withKey(createReferral(), key));
      expect(reused.statusCode).toBe(422);
      expect(reused.json()).toMatchObject({ code: 'idempotency_key_reused' });
    });
  });

  describe('a key reused for another request', () => {
    it('with a different body → 422 idempotency_key_reused, and nothing is created', async () => {
      const key = freshKey('reused');
      expect((await t.request(t.sender, withKey(createReferral(), key))).statusCode).toBe(201);
      const before = await countRows(t, 'referrals');
      const reused = await t.request(t.sender, withKey(createReferral(t.sender, { isUrgent: true }), key));
      expect(reused.statusCode).toBe(422);
      expect(reused.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(reused.json()).toMatchObject({ status: 422, code: 'idempotency_key_reused' });
      expect(await countRows(t, 'referrals')).toBe(before);
    });

    it('on another referral (same body, other path) → 422', async () => {
      const [a, b] = [await referralIn(t, 'draft'), await referralIn(t, 'draft')];
      const key = freshKey('other-path');
      expect((await t.request(t.sender, withKey(addNote(a.id), key))).statusCode).toBe(201);
      const reused = await t.request(t.sender, withKey(addNote(b.id), key));
      expect(reused.json()).toMatchObject({ status: 422, code: 'idempotency_key_reused' });
      expect(await notesOf(b.id)).toBe(0);
    });

    it('by another API key is a different key: both requests run', async () => {
      const key = freshKey('shared');
      const before = await countRows(t, 'referrals');
      const mine = await t.request(t.sender, withKey(createReferral(t.sender), key));
      const theirs = await t.request(t.otherSender, withKey(createReferral(t.otherSender), key));
      for (const res of [mine, theirs]) {
        expect(res.statusCode, res.body).toBe(201);
        expect(res.headers['idempotent-replayed']).toBeUndefined();
      }
      expect(mine.json<{ id: string }>().id).not.toBe(theirs.json<{ id: string }>().id);
      expect(await countRows(t, 'referrals')).toBe(before + 2);
    });
  });

  describe('a key whose first request is still running', () => {
    /**
     * Makes notes on the referral `referralId` slow to write: the note's insert sleeps, inside the
     * request's transaction, so a second request with the same key arrives while the first still
     * runs. (By the referral: a note's content is sealed, and so never equal to its text.)
     */
    async function slowNotes(referralId: string, seconds: number): Promise<() => Promise<void>> {
      await sql`create function idempotency_test_slow() returns trigger language plpgsql as $$
        begin
          if new.referral_id = ${sql.lit(referralId)} then perform pg_sleep(${sql.lit(seconds)}); end if;
          return new;
        end $$`.execute(t.ctx.db);
      await sql`create trigger idempotency_test_slow before insert on notes
        for each row execute function idempotency_test_slow()`.execute(t.ctx.db);
      return async () => {
        await sql`drop trigger idempotency_test_slow on notes`.execute(t.ctx.db);
        await sql`drop function idempotency_test_slow()`.execute(t.ctx.db);
      };
    }

    it('a retry waits for the first request and replays its response; another body is 422', async () => {
      const referral = await referralIn(t, 'pending-acceptance');
      const key = freshKey('in-flight');
      const content = `Slow note ${key}`;
      const undo = await slowNotes(referral.id, 1);
      try {
        const first = t.request(t.sender, withKey(addNote(referral.id, content), key));
        await new Promise((resolve) => setTimeout(resolve, 300));
        const [retry, other] = await Promise.all([
          t.request(t.sender, withKey(addNote(referral.id, content), key)),
          t.request(t.sender, withKey(addNote(referral.id, 'Something else'), key)),
        ]);
        const original = await first;
        expect(original.statusCode, original.body).toBe(201);
        expectReplayOf(retry, original);
        expect(retry.json()).toEqual(original.json());
        expect(other.statusCode, other.body).toBe(422);
        expect(other.json()).toMatchObject({ status: 422, code: 'idempotency_key_reused' });
      } finally {
        await undo();
      }
      expect(await notesOf(referral.id)).toBe(1);
    });

    it.runIf(engine === 'postgres')(
      'a retry that would wait past the bound → 409 idempotency_key_in_use with Retry-After, nothing written',
      async () => {
        const referral = await referralIn(t, 'pending-acceptance');
        const key = freshKey('long-flight');
        const content = `Very slow note ${key}`;
        const undo = await slowNotes(referral.id, 7);
        try {
          const first = t.request(t.sender, withKey(addNote(referral.id, content), key));
          await new Promise((resolve) => setTimeout(resolve, 300));
          const res = await t.request(t.sender, withKey(addNote(referral.id, content), key));
          expect(res.statusCode, res.body).toBe(409);
          expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
          expect(res.json()).toMatchObject({ status: 409, code: 'idempotency_key_in_use' });
          expect(res.headers['retry-after']).toBe('1');
          expect((await first).statusCode).toBe(201);
        } finally {
          await undo();
        }
        expect(await notesOf(referral.id)).toBe(1);
      },
      20_000,
    );

    it('N identical requests at once create exactly one referral', async () => {
      const key = freshKey('burst');
      const before = await countRows(t, 'referrals');
      const responses = await Promise.all(
        Array.from({ length: 8 }, () => t.request(t.sender, withKey(createReferral(), key))),
      );
      const originals = responses.filter((r) => r.statusCode === 201 && !r.headers['idempotent-replayed']);
      const replays = responses.filter((r) => r.headers['idempotent-replayed'] === 'true');
      const inUse = responses.filter((r) => r.statusCode === 409);
      expect(originals).toHaveLength(1);
      expect(originals.length + replays.length + inUse.length).toBe(responses.length);
      for (const replay of replays) {
        expect(replay.statusCode).toBe(201);
        expect(replay.json()).toEqual(originals[0]!.json());
      }
      for (const res of inUse) expect(res.json()).toMatchObject({ code: 'idempotency_key_in_use' });
      expect(await countRows(t, 'referrals')).toBe(before + 1);
    });

    it('N identical notes at once create exactly one note', async () => {
      const referral = await referralIn(t, 'accepted');
      const key = freshKey('burst-note');
      const responses = await Promise.all(
        Array.from({ length: 6 }, () => t.request(t.sender, withKey(addNote(referral.id), key))),
      );
      for (const res of responses) {
        expect([201, 409], res.body).toContain(res.statusCode);
        if (res.statusCode === 409) expect(res.json()).toMatchObject({ code: 'idempotency_key_in_use' });
      }
      expect(responses.filter((r) => r.statusCode === 201 && !r.headers['idempotent-replayed'])).toHaveLength(
        1,
      );
      expect(await notesOf(referral.id)).toBe(1);
    });
  });

  describe('a crash between the command and its stored response', () => {
    /**
     * Storing the response for keys starting with `prefix` fails, as if the process died right after
     * the command's own writes: a real trigger refuses the write that records the response.
     */
    async function responsesRefused(prefix: string): Promise<() => Promise<void>> {
      await sql`create function idempotency_test_crash() returns trigger language plpgsql as $$
        begin
          if new.key like ${sql.lit(`${prefix}%`)} and new.response_body is not null then
            raise exception 'the process stopped here';
          end if;
          return new;
        end $$`.execute(t.ctx.db);
      await sql`create trigger idempotency_test_crash before insert or update on idempotency_keys
        for each row execute function idempotency_test_crash()`.execute(t.ctx.db);
      return async () => {
        await sql`drop trigger idempotency_test_crash on idempotency_keys`.execute(t.ctx.db);
        await sql`drop function idempotency_test_crash()`.execute(t.ctx.db);
      };
    }

    it('leaves everything or nothing: the retry creates exactly one referral, at once', async () => {
      const prefix = freshKey('crash');
      const key = `${prefix}-create`;
      const before = await countRows(t, 'referrals');
      const undo = await responsesRefused(prefix);
      try {
        const first = await t.request(t.sender, withKey(createReferral(), key));
        expect(first.statusCode, first.body).toBeGreaterThanOrEqual(500);
      } finally {
        await undo();
      }
      // The command's writes went with the response: nothing was created, and the key is free.
      expect(await countRows(t, 'referrals')).toBe(before);
      const retry = await t.request(t.sender, withKey(createReferral(), key));
      expect(retry.statusCode, retry.body).toBe(201);
      expect(retry.headers['idempotent-replayed']).toBeUndefined();
      expect(await countRows(t, 'referrals')).toBe(before + 1);
      const replay = await t.request(t.sender, withKey(createReferral(), key));
      expectReplayOf(replay, retry);
    });

    it('a transition: the retry runs it once, and the timeline has one event', async () => {
      const referral = await referralIn(t, 'pending-acceptance');
      const prefix = freshKey('crash');
      const key = `${prefix}-cancel`;
      const cancel: InjectOptions = {
        method: 'POST',
        url: `/api/v1/referrals/${referral.id}/cancel`,
        payload: { ...t.sender.institution, cancelNote: 'Patient recovered' },
      };
      const undo = await responsesRefused(prefix);
      try {
        expect((await t.request(t.sender, withKey(cancel, key))).statusCode).toBeGreaterThanOrEqual(500);
      } finally {
        await undo();
      }
      const retry = await t.request(t.sender, withKey(cancel, key));
      expect(retry.statusCode, retry.body).toBe(200);
      expect(retry.json()).toMatchObject({ status: 'cancelled' });
      const events = await t.ctx.db
        .selectFrom('timeline_events')
        .select('type')
        .where('referral_id', '=', referral.id)
        .where('type', '=', 'referral.cancelled')
        .execute();
      expect(events).toHaveLength(1);
    });
  });

  describe('link upserts', () => {
    async function expectLiveToken(url: string, referralId: string, action: string) {
      const row = await t.ctx.db
        .selectFrom('link_tokens')
        .selectAll()
        .where('token_hash', '=', hashLinkToken(tokenOf(url)))
        .executeTakeFirstOrThrow();
      expect(row).toMatchObject({
        referral_id: referralId,
        action,
        requester_identifier: REQUESTER,
        institution_id: t.sender.institution.institutionId,
        used_at: null,
      });
      expect(row.expires_at.getTime()).toBeGreaterThan(Date.now());
    }

    /** The stored responses, opened (each is sealed: the store holds none in the clear). */
    async function storedResponses(): Promise<string> {
      const rows = await t.ctx.db
        .selectFrom('idempotency_keys')
        .select(['api_key_id', 'key', 'response_body'])
        .execute();
      expect(rows.every((r) => r.response_body === null || isSealed(r.response_body))).toBe(true);
      const opened = await t.ctx.dataKeys.reading(t.ctx.db, (cipher) =>
        rows.map((r) => openColumns('idempotency_keys', r, cipher)),
      );
      return opened.map((r) => r.response_body ?? '').join('\n');
    }

    it('a replayed create hands out a new, working one-time URL for the same referral', async () => {
      const key = freshKey('link-create');
      const before = await countRows(t, 'referrals');
      const first = await t.request(t.sender, withKey(upsertLink(), key));
      expect(first.statusCode, first.body).toBe(200);
      const replay = await t.request(t.sender, withKey(upsertLink(), key));
      expectReplayOf(replay, first);
      const [a, b] = [first.json<Record<string, string>>(), replay.json<Record<string, string>>()];
      expect(b).toMatchObject({ referralId: a.referralId, type: 'upsert' });
      expect(tokenOf(b.url!)).not.toBe(tokenOf(a.url!));
      await expectLiveToken(a.url!, a.referralId!, 'edit');
      await expectLiveToken(b.url!, a.referralId!, 'edit');
      expect(await countRows(t, 'referrals')).toBe(before + 1);

      const stored = await storedResponses();
      expect(stored).toContain('{{refhub-link:');
      for (const url of [a.url!, b.url!]) expect(stored).not.toContain(tokenOf(url));
    });

    it('a replayed update of an existing referral does the same, and changes the referral once', async () => {
      const referral = await referralIn(t, 'sender-action-required');
      const key = freshKey('link-update');
      const request = upsertLink({ referralId: referral.id, clinicalInfo: 'ECG attached' });
      const first = await t.request(t.sender, withKey(request, key));
      expect(first.statusCode, first.body).toBe(200);
      const replay = await t.request(t.sender, withKey(request, key));
      expectReplayOf(replay, first);
      const [a, b] = [first.json<Record<string, string>>(), replay.json<Record<string, string>>()];
      expect(b.referralId).toBe(referral.id);
      expect(tokenOf(b.url!)).not.toBe(tokenOf(a.url!));
      await expectLiveToken(b.url!, referral.id, 'respond');
      const row = await t.ctx.db
        .selectFrom('referrals')
        .select('version')
        .where('id', '=', referral.id)
        .executeTakeFirstOrThrow();
      expect(row.version).toBe(referral.version + 1);
      const stored = await storedResponses();
      for (const url of [a.url!, b.url!]) expect(stored).not.toContain(tokenOf(url));
    });

    it('a replayed create with links[] (requesterIdentifier given) mints fresh links too', async () => {
      const key = freshKey('create-links');
      const request = createReferral(t.sender, { requesterIdentifier: REQUESTER });
      const first = await t.request(t.sender, withKey(request, key));
      const replay = await t.request(t.sender, withKey(request, key));
      expectReplayOf(replay, first);
      type WithLinks = { id: string; links: { type: string; url: string }[] };
      const [a, b] = [first.json<WithLinks>(), replay.json<WithLinks>()];
      expect(a.links.map((l) => l.type)).toEqual(['edit', 'view']);
      expect(b.links.map((l) => l.type)).toEqual(a.links.map((l) => l.type));
      expect({ ...b, links: [] }).toEqual({ ...a, links: [] });
      for (const [i, link] of b.links.entries()) {
        expect(tokenOf(link.url)).not.toBe(tokenOf(a.links[i]!.url));
        await expectLiveToken(link.url, a.id, link.type);
      }
      const stored = await storedResponses();
      for (const link of [...a.links, ...b.links]) expect(stored).not.toContain(tokenOf(link.url));
    });
  });

  it('a request that fails on our side (5xx) releases its key, so the retry runs', async () => {
    const referral = await referralIn(t, 'pending-acceptance');
    const refused = 'audit-refused@example.org';
    const key = freshKey('server-error');
    const request = addNote(referral.id);
    const failing = { ...request, payload: { ...(request.payload as object), requesterIdentifier: refused } };
    // A real constraint makes the request's audit insert fail, so the whole request fails with a 500.
    await sql`alter table audit_events add constraint idempotency_test_refuses check (requester_identifier is distinct from ${sql.lit(refused)})`.execute(
      t.ctx.db,
    );
    try {
      const first = await t.request(t.sender, withKey(failing, key));
      expect(first.statusCode, first.body).toBe(500);
    } finally {
      await sql`alter table audit_events drop constraint idempotency_test_refuses`.execute(t.ctx.db);
    }
    const stored = await t.ctx.db
      .selectFrom('idempotency_keys')
      .select('key')
      .where('api_key_id', '=', await apiKeyIdOf(t, t.sender))
      .where('key', '=', key)
      .execute();
    expect(stored).toEqual([]);
    const retry = await t.request(t.sender, withKey(failing, key));
    expect(retry.statusCode, retry.body).toBe(201);
    expect(retry.headers['idempotent-replayed']).toBeUndefined();
    expect(await notesOf(referral.id)).toBe(1);
  });

  describe('expiry and validation', () => {
    it('an expired record is treated as a new request', async () => {
      const key = freshKey('expired');
      const first = await t.request(t.sender, withKey(createReferral(), key));
      expect(first.statusCode).toBe(201);
      await t.ctx.db
        .updateTable('idempotency_keys')
        .set({ expires_at: new Date(Date.now() - 1000) })
        .where('api_key_id', '=', await apiKeyIdOf(t, t.sender))
        .where('key', '=', key)
        .execute();
      const before = await countRows(t, 'referrals');
      // Even a different body: the old record no longer binds the key.
      const again = await t.request(t.sender, withKey(createReferral(t.sender, { isUrgent: true }), key));
      expect(again.statusCode, again.body).toBe(201);
      expect(again.headers['idempotent-replayed']).toBeUndefined();
      expect(again.json<{ id: string }>().id).not.toBe(first.json<{ id: string }>().id);
      expect(await countRows(t, 'referrals')).toBe(before + 1);
      // And the new record is what a retry now replays.
      const replay = await t.request(t.sender, withKey(createReferral(t.sender, { isUrgent: true }), key));
      expectReplayOf(replay, again);
      expect(replay.json()).toEqual(again.json());
    });

    it.each([
      ['300 characters', 'k'.repeat(300)],
      ['a space', 'two words'],
      ['a non-ASCII character', 'clé'],
    ])('a key with %s → 400 naming header.Idempotency-Key', async (_label, key) => {
      const before = await countRows(t, 'referrals');
      const res = await t.request(t.sender, withKey(createReferral(), key));
      expect(res.statusCode, res.body).toBe(400);
      expect(res.json()).toMatchObject({
        code: 'validation_failed',
        errors: [expect.objectContaining({ path: 'header.Idempotency-Key' })],
      });
      expect(await countRows(t, 'referrals')).toBe(before);
    });
  });
});
