// Property: while referrals change concurrently, a client that pages through its feed with any page
// sizes reads every event it may see exactly once, in the feed's order, and nothing it may not see.
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENGINES } from '../../support/engines.ts';
import { readFeedPage, type FeedEvent } from '../../support/event-feed.ts';
import { call, createDraft } from '../../support/scenarios.ts';
import { createTestApp, type TestApp, type TestParty } from '../../support/test-app.ts';

/** The steps one referral takes, each a request; every step is allowed after the ones before it. */
const STEPS = ['submit', 'note', 'accept', 'book', 'cancel'] as const;
type Step = (typeof STEPS)[number];

async function walk(t: TestApp, steps: number): Promise<string> {
  const { id } = await createDraft(t);
  const url = (op: string) => `/api/v1/referrals/${id}/${op}`;
  const run: Record<Step, () => Promise<unknown>> = {
    submit: () => call(t, t.sender, 'POST', url('submit'), {}),
    note: () => call(t, t.provider, 'POST', url('notes'), { content: 'Noted.' }, 201),
    accept: () => call(t, t.provider, 'POST', url('accept'), {}),
    book: () =>
      call(t, t.provider, 'PUT', url('appointments/a1'), {
        status: 'scheduled',
        startAt: '2030-01-15T01:30:00.000Z',
        location: 'Clinic 3B',
      }),
    cancel: () => call(t, t.provider, 'POST', url('cancel'), { cancelNote: 'No longer needed' }),
  };
  for (const step of STEPS.slice(0, steps)) await run[step]();
  return id;
}

describe.each(ENGINES)('event feed under concurrent writes on %s', (engine) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp(engine, { env: { RATE_LIMIT_PER_MINUTE: '1000000' } });
  });
  afterAll(async () => {
    await t.close();
  });

  it('hands every visible event out exactly once, in order, whatever the page sizes', async () => {
    const readers: TestParty[] = [t.sender, t.provider];
    // Everything each reader has been handed since the feed began, across every run of the property.
    const handed: FeedEvent[][] = readers.map(() => []);
    const cursors: (string | undefined)[] = readers.map(() => undefined);
    let turn = 0;
    const readOnce = async (r: number, reader: TestParty, limit: number, wait = 0) => {
      const page = await readFeedPage(t, reader, { after: cursors[r], limit, wait });
      handed[r]?.push(...page.data);
      cursors[r] = page.metadata.next;
      return page.metadata.hasMore;
    };
    /** The events a reader may see, committed, in the feed's order: what the database says. */
    const truthFor = (reader: TestParty) => {
      const institution = reader.institution.institutionId;
      return t.ctx.db
        .selectFrom('referral_events')
        .select(['id', 'referral_id'])
        .where((eb) => eb.or([eb('sender_id', '=', institution), eb('provider_id', '=', institution)]))
        .orderBy('xid')
        .orderBy('position')
        .execute();
    };

    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.integer({ min: 0, max: STEPS.length }), { minLength: 2, maxLength: 6 }),
        fc.array(fc.integer({ min: 1, max: 4 }), { minLength: 1, maxLength: 8 }),
        async (walks, pageSizes) => {
          let writing = true;
          // Readers page while the referrals change, all at once.
          const reading = Promise.all(
            readers.map(async (reader, r) => {
              while (writing) {
                await readOnce(r, reader, pageSizes[turn++ % pageSizes.length] ?? 1);
                await new Promise((resolve) => setTimeout(resolve, 5));
              }
            }),
          );
          await Promise.all(walks.map((steps) => walk(t, steps)));
          writing = false;
          await reading;

          for (const [r, reader] of readers.entries()) {
            const truth = await truthFor(reader);
            // The feed holds events back while an older transaction anywhere on the server still
            // runs (another database's, on a shared server), and hands them out once it ends: read
            // until every committed event has come, each empty page held open for the next.
            const has = () => new Set(handed[r]?.map((e) => e.id));
            while (truth.some((e) => !has().has(e.id))) await readOnce(r, reader, 4, 1);
            const got = handed[r] ?? [];
            expect(got.map((e) => e.id)).toEqual(truth.map((e) => e.id));
            expect(new Set(got.map((e) => e.id)).size).toBe(got.length);
          }
        },
      ),
      { numRuns: 8 },
    );
  }, 240_000);
});
