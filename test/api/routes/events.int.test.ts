// The event feed over HTTP: what each institution sees (its own referrals; a provider's only once they
// leave draft), no free text that a person wrote, paging with the opaque cursor, long polling, and the
// refusals.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { referralEventRepository } from '../../../src/db/events.repository.ts';
import { FEED_START, type FeedPosition } from '../../../src/domain/events.ts';
import { APP_ENGINES } from '../../support/engines.ts';
import { CANARY, CANARY_MARKERS } from '../../support/fixtures/patients.ts';
import { feedUrl, readFeedPage, readFeedToEnd } from '../../support/event-feed.ts';
import { call, createDraft, referralIn } from '../../support/scenarios.ts';
import { createTestApp, type TestApp } from '../../support/test-app.ts';

describe.each(APP_ENGINES)('event feed on %s', (engine) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp(engine);
  });
  afterAll(async () => {
    await t.close();
  });

  it('gives the sender every event of its referral and the provider those after the draft', async () => {
    const senderStart = (await readFeedToEnd(t, t.sender)).next;
    const providerStart = (await readFeedToEnd(t, t.provider)).next;
    const otherStart = (await readFeedToEnd(t, t.otherProvider)).next;

    const draft = await createDraft(t);
    await call(t, t.sender, 'PATCH', `/api/v1/referrals/${draft.id}`, { isUrgent: true });
    await call(t, t.sender, 'POST', `/api/v1/referrals/${draft.id}/submit`, {});
    await call(t, t.provider, 'POST', `/api/v1/referrals/${draft.id}/notes`, { content: 'Seen.' }, 201);

    const sender = (await readFeedToEnd(t, t.sender, senderStart)).events;
    expect(sender.map((e) => [e.type, e.referralVersion])).toEqual([
      ['referral.created', 1],
      ['referral.updated', 2],
      ['referral.pending-acceptance', 3],
      ['note.created', 4],
    ]);
    expect(sender.every((e) => e.referralId === draft.id)).toBe(true);
    expect(sender[0]?.institution).toEqual({ idType: 'hci', id: 'S1234A' });
    expect(sender[2]?.description).toMatch(/submitted the referral to Central General Hospital/);

    const provider = (await readFeedToEnd(t, t.provider, providerStart)).events;
    expect(provider.map((e) => e.type)).toEqual(['referral.pending-acceptance', 'note.created']);
    expect(provider.map((e) => e.id)).toEqual(sender.slice(2).map((e) => e.id));
    expect(provider[0]?.institution).toEqual({ idType: 'hci', id: 'S9001Z' });

    expect((await readFeedToEnd(t, t.otherProvider, otherStart)).events).toEqual([]);
  });

  it('quotes no free text: the note, the reasons and the location stay on the referral’s timeline', async () => {
    const start = (await readFeedToEnd(t, t.sender)).next;
    const said = (what: string) => `${CANARY.patientName} (${CANARY.patientUin}): ${what}`;
    const accepted = await referralIn(t, 'accepted');
    const url = (id: string, op: string) => `/api/v1/referrals/${id}/${op}`;
    await call(t, t.provider, 'PUT', url(accepted.id, 'appointments/appt-1'), {
      status: 'scheduled',
      startAt: '2030-01-15T01:30:00.000Z',
      location: said('home visit'),
    });
    await call(t, t.provider, 'POST', url(accepted.id, 'cancel'), { cancelNote: said('moved away') });
    const asked = await referralIn(t, 'pending-acceptance');
    await call(t, t.provider, 'POST', url(asked.id, 'request-action'), { reason: said('attach the ECG') });
    const rejected = await referralIn(t, 'pending-acceptance');
    await call(t, t.provider, 'POST', url(rejected.id, 'reject'), { reason: said('out of scope') });

    const events = (await readFeedToEnd(t, t.sender, start)).events;
    const sentence = (id: string, type: string) =>
      events.find((e) => e.referralId === id && e.type === type)?.description;
    expect(sentence(accepted.id, 'appt.scheduled')).toBe(
      'Central General Hospital scheduled an appointment for Tue 15 Jan 2030, 09:30 SGT.',
    );
    expect(sentence(accepted.id, 'referral.cancelled')).toBe(
      'Central General Hospital cancelled the referral.',
    );
    expect(sentence(accepted.id, 'appt.cancelled')).toBe(
      'The appointment on Tue 15 Jan 2030, 09:30 SGT was cancelled.',
    );
    expect(sentence(asked.id, 'referral.sender-action-required')).toBe(
      'Central General Hospital asked the sender to act on the referral.',
    );
    expect(sentence(rejected.id, 'referral.rejected')).toBe(
      'Central General Hospital rejected the referral.',
    );
    const leaks = (text: string) => CANARY_MARKERS.filter((m) => text.includes(m));
    expect(leaks(JSON.stringify(events))).toEqual([]);
    expect(leaks(JSON.stringify((await readFeedToEnd(t, t.provider)).events))).toEqual([]);

    // The referral's own timeline, which its parties read through the API, still quotes them.
    const query = new URLSearchParams({ ...t.sender.institution, requesterIdentifier: 'dr@example.org' });
    const timelineOf = async (id: string) =>
      (
        (await call(t, t.sender, 'GET', `/api/v1/referrals/${id}?${query.toString()}`)) as {
          timelineEvents: { description: string }[];
        }
      ).timelineEvents.map((e) => e.description);
    expect(await timelineOf(accepted.id)).toEqual(
      expect.arrayContaining([
        `Central General Hospital scheduled an appointment for Tue 15 Jan 2030, 09:30 SGT at ${said('home visit')}.`,
        `Central General Hospital cancelled the referral: ${said('moved away')}`,
      ]),
    );
    expect(await timelineOf(asked.id)).toContain(
      `Central General Hospital asked the sender to act on the referral: ${said('attach the ECG')}`,
    );
    expect(await timelineOf(rejected.id)).toContain(
      `Central General Hospital rejected the referral: ${said('out of scope')}`,
    );
  });

  it('keeps a back-to-draft from the provider, whose reads of the draft are 404 too', async () => {
    const start = (await readFeedToEnd(t, t.provider)).next;
    const referral = await referralIn(t, 'pending-acceptance');
    await call(t, t.sender, 'POST', `/api/v1/referrals/${referral.id}/back-to-draft`, {});
    const types = (await readFeedToEnd(t, t.provider, start)).events.map((e) => e.type);
    expect(types).toEqual(['referral.pending-acceptance']);
  });

  it('pages with the cursor: each event once, in order, and an empty page keeps the cursor', async () => {
    const start = (await readFeedToEnd(t, t.sender)).next;
    const a = await referralIn(t, 'accepted');
    const all = (await readFeedToEnd(t, t.sender, start)).events;
    expect(all.map((e) => e.type)).toEqual([
      'referral.created',
      'referral.pending-acceptance',
      'referral.accepted',
    ]);
    expect(new Set(all.map((e) => e.referralId))).toEqual(new Set([a.id]));

    const first = await readFeedPage(t, t.sender, { after: start, limit: 2 });
    expect(first.data.map((e) => e.id)).toEqual(all.slice(0, 2).map((e) => e.id));
    expect(first.metadata.hasMore).toBe(true);
    const second = await readFeedPage(t, t.sender, { after: first.metadata.next, limit: 2 });
    expect(second.data.map((e) => e.id)).toEqual(all.slice(2).map((e) => e.id));
    expect(second.metadata.hasMore).toBe(false);
    const empty = await readFeedPage(t, t.sender, { after: second.metadata.next, limit: 2 });
    expect(empty).toEqual({ data: [], metadata: { next: second.metadata.next, hasMore: false } });
  });

  it('holds an empty page open with wait= until an event arrives', async () => {
    const { next } = await readFeedToEnd(t, t.sender);
    const waiting = readFeedPage(t, t.sender, { after: next, wait: 20 });
    const draft = await createDraft(t);
    const page = await waiting;
    expect(page.data.map((e) => [e.type, e.referralId])).toEqual([['referral.created', draft.id]]);
  });

  it('audits each read with the referrals it named', async () => {
    const { next } = await readFeedToEnd(t, t.sender);
    const draft = await createDraft(t);
    await readFeedPage(t, t.sender, { after: next });
    const rows = await t.ctx.db
      .selectFrom('audit_events')
      .select(['referral_ids', 'institution_id'])
      .where('action', '=', 'events.read')
      .orderBy('seq', 'desc')
      .limit(1)
      .execute();
    expect(rows[0]).toEqual({ referral_ids: [draft.id], institution_id: 'S1234A' });
  });

  it.each([
    ['not base64url', '%%%'],
    ['not a cursor', Buffer.from('hello').toString('base64url')],
    ['a negative position', Buffer.from('1.-2').toString('base64url')],
  ])('refuses a cursor that is %s with 400 naming query.after', async (_what, after) => {
    const res = await t.request(t.sender, { method: 'GET', url: feedUrl(t.sender, { after }) });
    expect(res.statusCode, res.body).toBe(400);
    expect(res.json()).toMatchObject({
      code: 'validation_failed',
      errors: [expect.objectContaining({ path: 'query.after' })],
    });
  });

  it.each([
    ['limit', { limit: 0 }],
    ['limit', { limit: 501 }],
    ['wait', { wait: 31 }],
  ])('refuses a bad %s with 400', async (name, query) => {
    const res = await t.request(t.sender, { method: 'GET', url: feedUrl(t.sender, query) });
    expect(res.statusCode, res.body).toBe(400);
    expect(JSON.stringify(res.json())).toContain(name);
  });

  it('orders events by transaction number, also where the number gains a digit', async () => {
    // Three events of transactions 100, 10 and 9, written in that order (so their positions run the
    // other way): in the feed, and to every page size, they come as 9, 10, 100.
    const { id } = await createDraft(t);
    const institution = { idType: 'hci', id: 'S0000X' };
    const xids = ['100', '10', '9'];
    for (const xid of xids) {
      await t.ctx.db
        .insertInto('referral_events')
        .values({
          xid,
          id: randomUUID(),
          referral_id: id,
          referral_version: 1,
          type: 'referral.updated',
          system: 'refhub',
          description: `transaction ${xid}`,
          // Recent, so that no retention purge could take them away while the test reads.
          occurred_at: t.ctx.clock.now(),
          sender_id_type: institution.idType,
          sender_id: institution.id,
          provider_id_type: null,
          provider_id: null,
        })
        .execute();
    }
    const events = referralEventRepository(t.ctx.db);
    const since = new Date('2000-01-01T00:00:00.000Z');
    const pagers = {
      pageAll: (from: FeedPosition, limit: number) => events.pageAll(from, limit),
      pageFor: (from: FeedPosition, limit: number) => events.pageFor(institution, from, limit),
      occurredSince: (from: FeedPosition, limit: number) => events.occurredSince(since, from, limit),
    };
    for (const [name, page] of Object.entries(pagers)) {
      for (const limit of [1, 2, 3]) {
        const read: string[] = [];
        let from = FEED_START;
        while (read.length < 3) {
          const batch = await page(from, limit);
          expect(batch.length, `${name}, limit ${limit}`).toBeGreaterThan(0);
          read.push(...batch.map((e) => e.at.xid));
          from = batch.at(-1)?.at ?? from;
        }
        expect(read.slice(0, 3), `${name}, limit ${limit}`).toEqual(['9', '10', '100']);
      }
    }
  });

  it('refuses another institution’s feed (403) and ops keys (403)', async () => {
    const other = await t.request(t.sender, { method: 'GET', url: feedUrl(t.otherSender) });
    expect(other.statusCode).toBe(403);
    expect(other.json()).toMatchObject({ code: 'institution_not_permitted' });
    const ops = await t.request(t.ops, { method: 'GET', url: feedUrl(t.sender) });
    expect(ops.statusCode).toBe(403);
    expect(ops.json()).toMatchObject({ code: 'forbidden_role' });
  });

  // PGlite runs one transaction at a time, so no writer can be in flight beside a reader there.
  it.skipIf(engine === 'pglite')(
    'holds back an event committed after a still-open earlier writer until that writer ends',
    async () => {
      const { next } = await readFeedToEnd(t, t.sender);
      const early = await createDraft(t);
      const start = (await readFeedToEnd(t, t.sender, next)).next;
      // A writer that takes its transaction ID first and stays open while another change commits.
      let release: () => void = () => undefined;
      const held = new Promise<void>((resolve) => {
        release = resolve;
      });
      let opened: () => void = () => undefined;
      const isOpen = new Promise<void>((resolve) => {
        opened = resolve;
      });
      const writer = t.ctx.db.transaction().execute(async (trx) => {
        await sql`select pg_current_xact_id()`.execute(trx);
        opened();
        await held;
        await sql`
          insert into referral_events (id, referral_id, referral_version, type, system, description,
            occurred_at, sender_id_type, sender_id)
          values (gen_random_uuid(), ${early.id}, 1, 'test.held', 'HAS', 'Held back.', now(), 'hci', 'S1234A')
        `.execute(trx);
      });
      await isOpen;
      const later = await createDraft(t);
      // The later event is committed, but an older writer is still running: it waits.
      expect((await readFeedToEnd(t, t.sender, start)).events).toEqual([]);
      release();
      await writer;
      const events = (await readFeedToEnd(t, t.sender, start)).events;
      expect(events.map((e) => e.type)).toEqual(['test.held', 'referral.created']);
      expect(events.at(-1)?.referralId).toBe(later.id);
    },
  );
});
