// The benchmark seeds drafts in bulk instead of through the API; the figures are honest only if those
// rows are exactly what `POST /api/v1/referrals` writes. On both engines: a draft made by the API and
// one seeded with the same fields have the same referral, timeline and audit rows (but for IDs and
// times), read the same through the API, and go on through the API's lifecycle.
import { BENCH_DATA_KEYS } from '../../../bench/data-keys.ts';
import { openColumns } from '../../../src/db/data-keys/data-keys.repository.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiKeyService } from '../../../src/services/api-key.service.ts';
import { systemClock } from '../../../src/domain/clock.ts';
import {
  BENCH_REQUESTER,
  seedCatalogAndKeys,
  seedDrafts,
  typicalReferralFields,
} from '../../../bench/seed.ts';
import { ENGINES, openTestStore } from '../../support/engines.ts';
import { apiKeyIdOf } from '../../support/store-inspection.ts';
import { createTestApp, type TestApp } from '../../support/test-app.ts';
import { storesOf } from '../../support/stores.ts';

/** Columns and fields that differ between any two referrals, however made: IDs, times, link URLs. */
const VARYING = new Set([
  'id',
  'seq',
  'referral_id',
  'referral_ids',
  'request_id',
  'created_at',
  'updated_at',
  'produced_at',
  'occurred_at',
  'createdAt',
  'updatedAt',
]);

function shape(row: object): Record<string, unknown> {
  return Object.fromEntries(Object.entries(row).filter(([key]) => !VARYING.has(key)));
}

/** A referral as the API shows it, without IDs, times and link URLs. */
function viewShape(view: Record<string, unknown>): Record<string, unknown> {
  return {
    ...shape(view),
    links: (view.links as { type: string; label: string }[]).map(({ type, label }) => ({ type, label })),
    timelineEvents: (view.timelineEvents as { type: string; system: string; description: string }[]).map(
      ({ type, system, description }) => ({ type, system, description }),
    ),
  };
}

describe.each(ENGINES)('benchmark seeding on %s', (engine) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp(engine, { env: { DATA_KEYS: BENCH_DATA_KEYS } });
  });
  afterAll(async () => {
    await t.close();
  });

  const acting = { institutionIdType: 'hci', institutionId: 'S1234A' } as const;
  const read = async (id: string) => {
    const query = new URLSearchParams({ ...acting, requesterIdentifier: BENCH_REQUESTER }).toString();
    const res = await t.request(t.sender, { method: 'GET', url: `/api/v1/referrals/${id}?${query}` });
    expect(res.statusCode, res.body).toBe(200);
    return res.json<Record<string, unknown>>();
  };
  const rowsOf = async (id: string) => {
    const cipher = await t.ctx.dataKeys.cipher(t.ctx.db);
    return {
      // Opened: a sealed value differs from row to row, what it seals must not.
      referral: openColumns(
        'referrals',
        await t.ctx.db.selectFrom('referrals').selectAll().where('id', '=', id).executeTakeFirstOrThrow(),
        cipher,
      ),
      timeline: (
        await t.ctx.db.selectFrom('timeline_events').selectAll().where('referral_id', '=', id).execute()
      ).map((row) => openColumns('timeline_events', row, cipher)),
      audit: await t.ctx.db
        .selectFrom('audit_events')
        .selectAll()
        .where('action', '=', 'referral.create')
        .where((eb) => eb(eb.val(id), '=', eb.fn.any('referral_ids')))
        .execute(),
      links: await t.ctx.db.selectFrom('link_tokens').selectAll().where('referral_id', '=', id).execute(),
    };
  };

  it('writes a draft exactly as the API creates one', async () => {
    const created = await t.request(t.sender, {
      method: 'POST',
      url: '/api/v1/referrals',
      payload: { ...acting, ...typicalReferralFields(7) },
    });
    expect(created.statusCode, created.body).toBe(201);
    const made = created.json<{ id: string }>().id;
    const party = {
      apiKeyId: await apiKeyIdOf(t, t.sender),
      system: 'HAS',
      institution: { idType: 'hci', id: 'S1234A' },
    };
    const seeded = await seedDrafts(t.ctx.db, { party, count: 3, offset: 7 });
    expect(seeded).toHaveLength(3);
    const [first] = seeded;
    if (first === undefined) throw new Error('nothing was seeded');

    const api = await rowsOf(made);
    const bulk = await rowsOf(first);
    expect(shape(bulk.referral)).toEqual(shape(api.referral));
    expect(bulk.timeline.map(shape)).toEqual(api.timeline.map(shape));
    expect(bulk.audit.map(shape)).toEqual(api.audit.map(shape));
    expect(bulk.audit.map((a) => a.referral_ids)).toEqual([[first]]);
    expect(bulk.links).toEqual(api.links);
    // Times and IDs go together, as the API's would: oldest first, IDs in time order.
    const times = await Promise.all(
      seeded.map(async (id) => (await rowsOf(id)).referral.created_at.getTime()),
    );
    expect(times).toEqual([...times].sort((a, b) => a - b));
    expect([...seeded].sort()).toEqual(seeded);

    // Read through the API, the two are the same referral but for IDs and times.
    expect(viewShape(await read(first))).toEqual(viewShape(await read(made)));
    // And a seeded draft goes on through the lifecycle like any other.
    const submitted = await t.request(t.sender, {
      method: 'POST',
      url: `/api/v1/referrals/${first}/submit`,
      payload: acting,
    });
    expect(submitted.statusCode, submitted.body).toBe(200);
    expect(submitted.json<{ status: string }>().status).toBe('pending-acceptance');
  });

  it('loads the catalog and makes keys that authenticate as the institutions they act for', async () => {
    const store = await openTestStore(engine);
    try {
      const parties = await seedCatalogAndKeys(store.db);
      const keys = createApiKeyService({ stores: storesOf(store.db), clock: systemClock });
      for (const party of [parties.reader, parties.writer]) {
        expect(await keys.authenticate(party.key)).toMatchObject({
          id: party.apiKeyId,
          system: party.system,
          role: 'sender',
          institutions: [party.institution],
        });
      }
      expect(parties.reader.institution.id).not.toBe(parties.writer.institution.id);
    } finally {
      await store.close();
    }
  });
});
