// Each worklist returns exactly the referrals that meet its definition, in its order: a few thousand
// referrals of every status, side, due time and deletion, seeded in bulk, paged through the store and
// compared with a query written here from the definitions in docs/api.md ("Worklists"); the counts
// agree with the pages; and the sweep's reads take exactly the referrals past their due time.
import { sql, type RawBuilder } from 'kysely';
import { v7 as uuidv7 } from 'uuid';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Store } from '../../../src/db/database.ts';
import { newReferralRow } from '../../../src/db/referrals/rows.ts';
import { createStores, type Stores } from '../../../src/db/stores.ts';
import type { InstitutionRef } from '../../../src/domain/access.ts';
import { auditEventOf, systemActor } from '../../../src/domain/audit.ts';
import { STATUSES } from '../../../src/domain/statuses.ts';
import { WORKLIST_NAMES, type WorklistName } from '../../../src/domain/worklists.ts';
import { DEMO_CATALOG_FILE } from '../../../src/composition/demo-setup.ts';
import { EMPTY_CONTENT } from '../../../src/services/referrals/input.ts';
import { createCatalogService } from '../../../src/services/catalog/catalog.service.ts';
import { testDataKeys } from '../../support/data-keys.ts';
import { ENGINES, openTestStore } from '../../support/engines.ts';

const SENDERS: readonly InstitutionRef[] = [
  { idType: 'hci', id: 'S1234A' },
  { idType: 'hci', id: 'S2345B' },
];
// Each offering's provider: Central General Hospital and Eastside Regional Hospital.
const OFFERINGS = [
  { id: 'cgh-gastro', provider: { idType: 'hci', id: 'S9001Z' } },
  { id: 'erh-cardio', provider: { idType: 'hci', id: 'S9002Y' } },
] as const;
const INSTITUTIONS = [...SENDERS, ...OFFERINGS.map((o) => o.provider)];
const COUNT = 3000;
const NOW = new Date('2026-12-10T04:00:00.000Z');

/** A deterministic stream of numbers in [0, 1), so a failure can be run again as it was. */
function random(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state * 1_103_515_245 + 12_345) % 2_147_483_648;
    return state / 2_147_483_648;
  };
}

/** The worklists as docs/api.md defines them, as SQL of the test's own. */
const DEFINITIONS: Readonly<
  Record<WorklistName, { side: 'sender' | 'provider'; where: RawBuilder<unknown>; order: string }>
> = {
  'to-triage': {
    side: 'provider',
    where: sql`status = 'pending-acceptance'`,
    order: 'triage_due_at asc nulls last, submitted_at asc, id asc',
  },
  overdue: {
    side: 'provider',
    where: sql`status = 'pending-acceptance' and triage_due_at <= ${NOW}`,
    order: 'triage_due_at asc nulls last, submitted_at asc, id asc',
  },
  'to-book': {
    side: 'provider',
    where: sql`status = 'accepted'`,
    order: 'triage_due_at asc nulls last, submitted_at asc, id asc',
  },
  'needs-action': {
    side: 'sender',
    where: sql`status = 'sender-action-required'`,
    order: 'updated_at desc, id desc',
  },
  'outcomes-to-read': { side: 'sender', where: sql`status = 'completed'`, order: 'updated_at desc, id desc' },
  rejected: { side: 'sender', where: sql`status = 'rejected'`, order: 'updated_at desc, id desc' },
};

describe.each(ENGINES)('worklists over %i seeded referrals on %s'.replace('%i', String(COUNT)), (engine) => {
  let store: Store;
  let stores: Stores;

  beforeAll(async () => {
    store = await openTestStore(engine);
    const keys = testDataKeys();
    stores = createStores(store.db, keys);
    await createCatalogService({ stores }).loadFile(DEMO_CATALOG_FILE);
    await store.db
      .insertInto('institutions')
      .values({ id_type: 'hci', id: 'S2345B', name: 'Tampines Medical Centre' })
      .onConflict((oc) => oc.doNothing())
      .execute();
    const next = random(36);
    const cipher = await keys.cipher(store.db);
    const rows = [];
    for (let i = 0; i < COUNT; i++) {
      const sender = SENDERS[Math.floor(next() * SENDERS.length)]!;
      const offering = OFFERINGS[Math.floor(next() * OFFERINGS.length)]!;
      const status = STATUSES[Math.floor(next() * STATUSES.length)]!;
      // Minutes around NOW: many due before it, many after, some with no due time at all, and ties.
      const minutes = (span: number) => Math.floor((next() - 0.5) * span) * 60_000;
      const created = new Date(NOW.getTime() - 30 * 86_400_000 + minutes(20_000));
      const submitted = status === 'draft' ? null : new Date(created.getTime() + Math.abs(minutes(600)));
      const due = submitted === null || next() < 0.15 ? null : new Date(NOW.getTime() + minutes(40) * 60);
      const id = uuidv7();
      rows.push({
        ...newReferralRow(
          {
            ...EMPTY_CONTENT,
            offeringId: offering.id,
            providerIdType: offering.provider.idType,
            providerId: offering.provider.id,
            patientName: `Canary Patient ${i}`,
            id,
            sender,
            senderSystem: 'HAS',
            now: created,
          },
          cipher,
        ),
        status,
        submitted_at: submitted,
        updated_at: new Date(created.getTime() + Math.abs(minutes(3000))),
        triage_due_at: due,
        deleted_at: next() < 0.05 ? NOW : null,
      });
    }
    for (let start = 0; start < rows.length; start += 500) {
      await store.db
        .insertInto('referrals')
        .values(rows.slice(start, start + 500))
        .execute();
    }
  }, 120_000);
  afterAll(async () => {
    await store.close();
  });

  async function expected(name: WorklistName, inst: InstitutionRef): Promise<string[]> {
    const { side, where, order } = DEFINITIONS[name];
    const party =
      side === 'sender'
        ? sql`sender_id_type = ${inst.idType} and sender_id = ${inst.id}`
        : sql`provider_id_type = ${inst.idType} and provider_id = ${inst.id} and status <> 'draft'`;
    const result = await sql<{ id: string }>`select id from referrals
      where deleted_at is null and ${party} and ${where}
      order by ${sql.raw(order)}`.execute(store.db);
    return result.rows.map((r) => r.id);
  }

  async function paged(name: WorklistName, inst: InstitutionRef): Promise<{ ids: string[]; total: number }> {
    const ids: string[] = [];
    for (let offset = 0; ; offset += 97) {
      const page = await stores.referrals.worklist(
        { institution: inst, name, now: NOW, offset, pageSize: 97 },
        auditEventOf(systemActor('worklist-test'), 'referral.worklist', [], NOW),
      );
      ids.push(...page.records.map((r) => r.id));
      if (!page.hasNext) return { ids, total: page.total };
    }
  }

  it.each(WORKLIST_NAMES)(
    '%s has exactly the referrals of its definition, in its order, for every institution',
    async (name) => {
      let seen = 0;
      for (const inst of INSTITUTIONS) {
        const want = await expected(name, inst);
        const got = await paged(name, inst);
        expect(got.ids, `${name} of ${inst.id}`).toEqual(want);
        expect(got.total).toBe(want.length);
        seen += want.length;
      }
      // The seed reaches every list.
      expect(seen).toBeGreaterThan(0);
    },
  );

  it('counts every list as its pages do', async () => {
    for (const inst of INSTITUTIONS) {
      const counts = await stores.referrals.worklistCounts(
        inst,
        NOW,
        auditEventOf(systemActor('worklist-test'), 'referral.worklists', [], NOW),
      );
      for (const { name, total } of counts)
        expect(total, `${name} of ${inst.id}`).toBe((await expected(name, inst)).length);
    }
  });

  it('gives the sweep exactly the referrals past their due time not yet said overdue, earliest first', async () => {
    const due = await stores.referrals.triageOverdueDue(NOW, COUNT);
    const want = await store.db
      .selectFrom('referrals')
      .select('id')
      .where('deleted_at', 'is', null)
      .where('status', '=', 'pending-acceptance')
      .where('triage_due_at', '<=', NOW)
      .where('triage_overdue_at', 'is', null)
      .orderBy('triage_due_at')
      .execute();
    expect(new Set(due)).toEqual(new Set(want.map((r) => r.id)));
    expect(due.length).toBeGreaterThan(0);
  });
});
