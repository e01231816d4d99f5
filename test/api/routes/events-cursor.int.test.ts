// The event feed's cursor is the client's to hold but not to make: one that is not a position the
// types can hold is refused 400 naming `query.after` (never a 500 from the database), and an empty
// page answers with the last real position at or before the cursor sent, never with a forged one.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENGINES } from '../../support/engines.ts';
import { feedUrl, readFeedPage, readFeedToEnd } from '../../support/event-feed.ts';
import { createDraft, referralIn } from '../../support/scenarios.ts';
import { createTestApp, type TestApp } from '../../support/test-app.ts';

const cursorOf = (text: string) => Buffer.from(text, 'utf8').toString('base64url');
/** The cursor of the feed's start, before every event. */
const START = cursorOf('0.0');
const XID8_MAX = '18446744073709551615';
const BIGINT_MAX = '9223372036854775807';

describe.each(ENGINES)('the event feed’s cursor on %s', (engine) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp(engine);
  });
  afterAll(async () => {
    await t.close();
  });

  it.each([
    ['a position past bigint', `1.${BigInt(BIGINT_MAX) + 1n}`],
    ['a position of 20 nines', `1.${'9'.repeat(19)}`],
    ['a transaction past xid8', `${BigInt(XID8_MAX) + 1n}.1`],
    ['a transaction of 20 nines', `${'9'.repeat(20)}.1`],
  ])('%s → 400 naming query.after, not 500', async (_label, text) => {
    const after = cursorOf(text);
    const logsBefore = t.logs.length;
    const res = await t.request(t.sender, { method: 'GET', url: feedUrl(t.sender, { after }) });
    expect(res.statusCode, res.body).toBe(400);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(res.json()).toMatchObject({ code: 'validation_failed', errors: [{ path: 'query.after' }] });
    expect(res.body).not.toContain(after);
    expect(t.logs.slice(logsBefore).join('\n')).not.toContain('a defect in refhub');
  });

  it('refuses the forged cursor of the report (1.9223372036854775808)', async () => {
    const res = await t.request(t.sender, {
      method: 'GET',
      url: feedUrl(t.sender, { after: 'MS45MjIzMzcyMDM2ODU0Nzc1ODA4' }),
    });
    expect(res.statusCode, res.body).toBe(400);
    expect(res.json()).toMatchObject({ errors: [{ path: 'query.after' }] });
  });

  it('answers an empty page after a cursor beyond the end with the last real position', async () => {
    // Nothing for this institution yet: the last real position is the feed's start.
    const nothing = await readFeedPage(t, t.otherProvider, { after: cursorOf(`${XID8_MAX}.${BIGINT_MAX}`) });
    expect(nothing).toEqual({ data: [], metadata: { next: START, hasMore: false } });

    await referralIn(t, 'accepted');
    const { events, next } = await readFeedToEnd(t, t.sender);
    expect(events.length).toBeGreaterThan(0);
    for (const forged of [`${XID8_MAX}.${BIGINT_MAX}`, `${XID8_MAX}.0`, `${BigInt(XID8_MAX) / 2n}.1`]) {
      const page = await readFeedPage(t, t.sender, { after: cursorOf(forged) });
      expect(page, forged).toEqual({ data: [], metadata: { next, hasMore: false } });
    }
    // A cursor the feed handed out is handed back as it was.
    expect(await readFeedPage(t, t.sender, { after: next })).toEqual({
      data: [],
      metadata: { next, hasMore: false },
    });
    // Read on from the cursor handed back: the next event is the next one, nothing skipped.
    const later = await createDraft(t);
    const page = await readFeedPage(t, t.sender, { after: next });
    expect(page.data.map((e) => [e.referralId, e.type])).toEqual([[later.id, 'referral.created']]);
  });

  it('refuses a cursor that is not text of digits (leading sign, spaces, decimals)', async () => {
    for (const text of ['-1.1', '1.-1', ' 1.1', '1.1.1', '1e3.1', '0x1.1']) {
      const res = await t.request(t.sender, {
        method: 'GET',
        url: feedUrl(t.sender, { after: cursorOf(text) }),
      });
      expect(res.statusCode, `${text}: ${res.body}`).toBe(400);
      expect(res.json()).toMatchObject({ errors: [{ path: 'query.after' }] });
    }
  });
});
