// A command on a referral is one read and one statement (and a read of each thing it checks besides
// the referral, for the few that check the catalog or the referral's files: a redirect): the statement is its own transaction (no
// BEGIN or COMMIT round trips) and holds the change, what it leaves behind and a keyed write's stored
// response; the answer is made from the read and the change, never from a second read. So the answer
// must be exactly what a read right after it returns, which this file checks for every route.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LightMyRequestResponse } from 'fastify';
import { sql } from 'kysely';
import { APP_ENGINES } from '../../support/engines.ts';
import { PATIENT } from '../../support/fixtures/patients.ts';
import { REFERRAL_ROUTES, REQUESTER, type ReferralRoute } from '../../support/referral-routes.ts';
import { referralIn } from '../../support/scenarios.ts';
import { statementsOf } from '../../support/statement-counter.ts';
import { createTestApp, type TestApp, type TestParty } from '../../support/test-app.ts';

const WRITES = REFERRAL_ROUTES.filter((r) => r.name !== 'GET /referrals/:id').map(
  (r) => [r.name, r] as const,
);
const KEY_LOOKUP = /\bfrom "api_keys"/;
const TRANSACTION_CONTROL = /^\s*(begin|commit|rollback|start transaction)\b/i;

describe.each(APP_ENGINES)('round trips of a command on %s', (engine) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp(engine);
  });
  afterAll(async () => {
    await t.close();
  });

  const ownerOf = (route: ReferralRoute): TestParty => (route.owner === 'sender' ? t.sender : t.provider);

  async function counted(send: () => Promise<LightMyRequestResponse>) {
    let res: LightMyRequestResponse | undefined;
    const texts = await statementsOf(async () => {
      res = await send();
    });
    if (res === undefined) throw new Error('no response');
    expect(res.statusCode, res.body).toBeLessThan(300);
    expect(texts.filter((text) => TRANSACTION_CONTROL.test(text))).toEqual([]);
    // The API key's lookup is authentication's, reused for a while: not part of what the work costs.
    return { res, texts: texts.filter((text) => !KEY_LOOKUP.test(text)) };
  }

  it.each(WRITES)('%s: the read and one statement', async (_n, route) => {
    const referral = await referralIn(t, route.status);
    const owner = ownerOf(route);
    const { texts } = await counted(() => t.request(owner, route.request(referral.id, owner)));
    expect(texts).toHaveLength(2 + (route.checks ?? 0));
  });

  it.each(WRITES.filter(([name]) => name.startsWith('POST')))(
    '%s with an Idempotency-Key: the key looked up, the read and one statement that stores the answer',
    async (_n, route) => {
      const referral = await referralIn(t, route.status);
      const owner = ownerOf(route);
      const headers = { 'idempotency-key': `round-trips-${referral.id}` };
      const { res, texts } = await counted(() =>
        t.request(owner, route.request(referral.id, owner, headers)),
      );
      expect(texts).toHaveLength(3 + (route.checks ?? 0));
      const replay = await t.request(owner, route.request(referral.id, owner, headers));
      expect(replay.headers['idempotent-replayed']).toBe('true');
      // A replay mints fresh one-time links for the same actions; the rest is the stored answer.
      expect(withoutTokens(replay.body)).toEqual(withoutTokens(res.body));
    },
  );

  it('a create: the catalog read once, and one statement', async () => {
    const { res, texts } = await counted(() =>
      t.request(t.sender, {
        method: 'POST',
        url: '/api/v1/referrals',
        payload: { ...t.sender.institution, offeringId: 'cgh-gastro', ...PATIENT },
      }),
    );
    // The offering and the sender's name in one read, then the statement.
    expect(texts).toHaveLength(2);
    expect(withoutLinks(res.json())).toEqual(
      withoutLinks(await read(t.sender, res.json<{ id: string }>().id)),
    );
  });

  it.each([
    ['draft', 'sender'],
    ['sender-action-required', 'sender'],
    ['accepted', 'sender'],
    ['pending-acceptance', 'provider'],
  ] as const)(
    'a read of a referral in %s by the %s: one statement with its audit row and the links it hands out',
    async (status, side) => {
      const referral = await referralIn(t, status);
      const party = side === 'sender' ? t.sender : t.provider;
      const before = await countOf('link_tokens', referral.id);
      const { res, texts } = await counted(() =>
        t.request(party, {
          method: 'GET',
          url: `/api/v1/referrals/${referral.id}?${new URLSearchParams({ ...party.institution, requesterIdentifier: REQUESTER }).toString()}`,
        }),
      );
      expect(texts).toHaveLength(1);
      const links = res.json<{ links: { type: string; url: string }[] }>().links;
      expect(links.length).toBeGreaterThan(0);
      const audited = await t.ctx.db
        .selectFrom('audit_events')
        .select('action')
        .where(sql<boolean>`referral_ids @> array[${referral.id}]::uuid[]`)
        .orderBy('seq', 'desc')
        .executeTakeFirstOrThrow();
      expect(audited.action).toBe('referral.read');
      // Exactly the links handed out are stored, and each one opens.
      expect((await countOf('link_tokens', referral.id)) - before).toBe(links.length);
      for (const link of links) {
        const opened = await t.request(null, { method: 'GET', url: new URL(link.url).pathname });
        expect(opened.statusCode, `${link.type}: ${opened.body}`).toBeLessThan(400);
      }
    },
  );

  it('a list: one statement with its audit row, which names the page’s referrals', async () => {
    const created = [
      await referralIn(t, 'draft'),
      await referralIn(t, 'draft'),
      await referralIn(t, 'draft'),
    ];
    const { res, texts } = await counted(() =>
      t.request(t.sender, {
        method: 'GET',
        url: `/api/v1/institutions/hci/${t.sender.institution.institutionId}/referrals?pageSize=2&sort=createdAt`,
      }),
    );
    expect(texts).toHaveLength(1);
    const page = res.json<{ data: { id: string }[]; metadata: { hasNext: boolean } }>();
    expect(page.data.map((r) => r.id)).toEqual([created[2]?.id, created[1]?.id]);
    expect(page.metadata.hasNext).toBe(true);
    const audited = await t.ctx.db
      .selectFrom('audit_events')
      .select(['action', 'referral_ids'])
      .where('request_id', '=', String(res.headers['x-request-id']))
      .execute();
    expect(audited).toEqual([{ action: 'referral.list', referral_ids: page.data.map((r) => r.id) }]);
  });

  async function countOf(table: 'link_tokens', referralId: string): Promise<number> {
    const row = await t.ctx.db
      .selectFrom(table)
      .select(sql<number>`count(*)::int`.as('n'))
      .where('referral_id', '=', referralId)
      .executeTakeFirstOrThrow();
    return row.n;
  }

  const read = (party: TestParty, id: string) => readAs(t, party, id);

  it.each(WRITES)('%s answers what a read right after it returns', async (name, route) => {
    const referral = await referralIn(t, route.status);
    const owner = ownerOf(route);
    const res = await t.request(owner, route.request(referral.id, owner));
    expect(res.statusCode, res.body).toBeLessThan(300);
    const answer = res.json<Record<string, unknown>>();
    if (name.startsWith('DELETE')) {
      // The answer is the referral as it was deleted; nobody can read it any more.
      expect(answer).toMatchObject({ id: referral.id, version: referral.version, status: 'draft' });
      return;
    }
    const after = await read(owner, referral.id);
    if (name === 'POST notes') {
      expect((after.notes as unknown[]).at(-1)).toEqual(answer);
    } else if (name.startsWith('POST /links/upsert')) {
      expect(answer).toMatchObject({ referralId: referral.id, type: 'upsert' });
      expect(after.version).toBe(referral.version + 1);
    } else {
      // A summary answer (cancel, back to draft) is a subset of the full referral.
      expect(withoutLinks(after)).toMatchObject(withoutLinks(answer));
      expect(Object.keys(answer).length).toBeGreaterThan(10);
    }
  });

  it('an appointment changed and a note added answer with every part a read returns', async () => {
    await appointmentsAnswerAsRead(t);
  });

  it.runIf(engine === 'postgres')(
    'appointments at the same start are answered in a read’s order where text sorts by language',
    async () => {
      const english = await createTestApp(engine, { store: { icuLocale: 'en-US' } });
      try {
        await appointmentsAnswerAsRead(english);
      } finally {
        await english.close();
      }
    },
  );

  it('an update that changes the offering answers with the new offering and provider', async () => {
    const referral = await referralIn(t, 'draft');
    const res = await t.request(t.sender, {
      method: 'PATCH',
      url: `/api/v1/referrals/${referral.id}`,
      payload: { ...t.sender.institution, offeringId: 'erh-cardio' },
    });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ offering: { id: 'erh-cardio' } });
    expect(withoutLinks(res.json())).toEqual(withoutLinks(await read(t.sender, referral.id)));
  });
});

function withoutTokens(body: string): unknown {
  return JSON.parse(body.replace(/\/l\/[A-Za-z0-9_-]{43}/g, '/l/<token>'));
}

function withoutLinks(view: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(view).filter(([field]) => field !== 'links'));
}

/** Three appointments (one moved, two at the same start) and a note: each answer is what a read returns. */
async function appointmentsAnswerAsRead(t: TestApp): Promise<void> {
  const read = (party: TestParty, id: string) => readAs(t, party, id);
  const referral = await referralIn(t, 'accepted');
  const url = `/api/v1/referrals/${referral.id}`;
  const first = await t.request(t.provider, {
    method: 'PUT',
    url: `${url}/appointments/appt-b`,
    payload: {
      ...t.provider.institution,
      status: 'scheduled',
      startAt: '2030-03-01T02:00:00.000Z',
      location: 'B',
    },
  });
  expect(first.statusCode, first.body).toBe(200);
  // An earlier appointment, then the first one moved: the answer lists them in the read's order.
  // Then one at the same start as another: by ID, in the same order whatever the collation.
  for (const [id, startAt] of [
    ['appt-a', '2030-02-01T02:00:00.000Z'],
    ['appt-b', '2030-01-15T02:00:00.000Z'],
    ['APPT-C', '2030-02-01T02:00:00.000Z'],
  ] as const) {
    const res = await t.request(t.provider, {
      method: 'PUT',
      url: `${url}/appointments/${id}`,
      payload: { ...t.provider.institution, status: 'scheduled', startAt, location: `Room ${id}` },
    });
    expect(res.statusCode, res.body).toBe(200);
    expect(withoutLinks(res.json())).toEqual(withoutLinks(await read(t.provider, referral.id)));
  }
  const note = await t.request(t.provider, {
    method: 'POST',
    url: `${url}/notes`,
    payload: { ...t.provider.institution, content: 'Seen in clinic.', authorName: ' Dr Lim ' },
  });
  expect(note.statusCode, note.body).toBe(201);
  expect((await read(t.provider, referral.id)).notes).toContainEqual(note.json());
}

/** The referral as `party` reads it, with links for the requester. */
async function readAs(t: TestApp, party: TestParty, id: string): Promise<Record<string, unknown>> {
  const res = await t.request(party, {
    method: 'GET',
    url: `/api/v1/referrals/${id}?${new URLSearchParams({ ...party.institution, requesterIdentifier: REQUESTER }).toString()}`,
  });
  expect(res.statusCode, res.body).toBe(200);
  return res.json();
}
