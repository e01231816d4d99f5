// Property: while referrals change concurrently, a client that pages through its feed with any page
// sizes reads every event it may see exactly once, in the feed's order, and nothing it may not see.
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENGINES } from '../../support/engines.ts';
import { readFeedPage, readFeedToEnd, type FeedEvent } from '../../support/event-feed.ts';
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
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.integer({ min: 0, max: STEPS.length }), { minLength: 2, maxLength: 6 }),
        fc.array(fc.integer({ min: 1, max: 4 }), { minLength: 1, maxLength: 8 }),
        async (walks, pageSizes) => {
          const readers: TestParty[] = [t.sender, t.provider];
          const starts = await Promise.all(readers.map(async (p) => (await readFeedToEnd(t, p)).next));
          const seen: FeedEvent[][] = readers.map(() => []);
          const cursors = [...starts];
          let writing = true;
          let turn = 0;
          const readOnce = async (r: number, reader: TestParty) => {
            const limit = pageSizes[turn++ % pageSizes.length] ?? 1;
            const page = await readFeedPage(t, reader, { after: cursors[r], limit });
            seen[r]?.push(...page.data);
            cursors[r] = page.metadata.next;
            return page.metadata.hasMore;
          };
          // Readers page while the referrals change, all at once.
          const reading = Promise.all(
            readers.map(async (reader, r) => {
              while (writing) {
                await readOnce(r, reader);
                await new Promise((resolve) => setTimeout(resolve, 5));
              }
            }),
          );
          const ids = await Promise.all(walks.map((steps) => walk(t, steps)));
          writing = false;
          await reading;
          for (const [r, reader] of readers.entries()) while (await readOnce(r, reader));

          for (const [r, reader] of readers.entries()) {
            const institution = reader.institution.institutionId;
            const truth = await t.ctx.db
              .selectFrom('referral_events')
              .select(['id', 'referral_id'])
              .where('referral_id', 'in', ids)
              .where((eb) => eb.or([eb('sender_id', '=', institution), eb('provider_id', '=', institution)]))
              .orderBy('xid')
              .orderBy('position')
              .execute();
            const got = seen[r] ?? [];
            expect(got.every((e) => ids.includes(e.referralId))).toBe(true);
            expect(got.map((e) => e.id)).toEqual(truth.map((e) => e.id));
            expect(new Set(got.map((e) => e.id)).size).toBe(got.length);
          }
        },
      ),
      { numRuns: 8 },
    );
  }, 240_000);
});
