// Copies made in SQL stand for API-made referrals in the growth scenario only if they are the same
// rows but for what tells referrals apart. On both engines: copies of an API-made draft and of an
// API-submitted referral have the template's columns, timeline, audit and outbox rows (but for IDs,
// times and the patient), read the same through the API, and go on through the lifecycle.
import { openColumns } from '../../../src/db/data-keys/data-keys.repository.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cloneReferral } from '../../../bench/bulk-seed.ts';
import { BENCH_REQUESTER, typicalReferralFields } from '../../../bench/seed.ts';
import { ENGINES } from '../../support/engines.ts';
import { createTestApp, type TestApp } from '../../support/test-app.ts';

const VARYING = new Set([
  'id',
  'seq',
  'referral_id',
  'referral_ids',
  'request_id',
  'created_at',
  'updated_at',
  'submitted_at',
  'produced_at',
  'occurred_at',
  'available_at',
  'patient_uin',
  'patient_uin_index',
  'patient_name',
]);

function shape(row: object): Record<string, unknown> {
  return Object.fromEntries(Object.entries(row).filter(([key]) => !VARYING.has(key)));
}

describe.each(ENGINES)('bulk copies of a referral on %s', (engine) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp(engine);
  });
  afterAll(async () => {
    await t.close();
  });

  const acting = { institutionIdType: 'hci', institutionId: 'S1234A' } as const;
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
        await t.ctx.db
          .selectFrom('timeline_events')
          .selectAll()
          .where('referral_id', '=', id)
          .orderBy('seq')
          .execute()
      ).map((row) => openColumns('timeline_events', row, cipher)),
      audit: await t.ctx.db
        .selectFrom('audit_events')
        .selectAll()
        .where((eb) => eb(eb.val(id), '=', eb.fn.any('referral_ids')))
        .orderBy('seq')
        .execute(),
      outbox: await t.ctx.db
        .selectFrom('outbox')
        .selectAll()
        .where('referral_id', '=', id)
        .where('processed_at', 'is', null)
        .orderBy('id')
        .execute(),
    };
  };
  const create = async (i: number) => {
    const res = await t.request(t.sender, {
      method: 'POST',
      url: '/api/v1/referrals',
      payload: { ...acting, ...typicalReferralFields(i) },
    });
    expect(res.statusCode, res.body).toBe(201);
    return res.json<{ id: string }>().id;
  };
  const copiesOf = async (templateId: string, salt: number) => {
    const rows = await t.ctx.db
      .selectFrom('referrals')
      .select(['id', 'created_at'])
      .where('id', '!=', templateId)
      .where('patient_name', 'like', 'Tan Ah Kow %')
      .orderBy('id')
      .execute();
    // Copies of this template carry its salt in their IDs.
    return rows.filter((r) => r.id.slice(15, 18) === salt.toString(16).padStart(3, '0')).map((r) => r.id);
  };

  it('copies a draft with its rows, and a copy reads and submits like an API-made draft', async () => {
    const template = await create(1);
    await cloneReferral(t.ctx.db, await t.ctx.dataKeys.cipher(t.ctx.db), {
      templateId: template,
      count: 3,
      firstNumber: 10,
      newest: new Date(),
      salt: 1,
    });
    const copies = await copiesOf(template, 1);
    expect(copies).toHaveLength(3);
    const original = await rowsOf(template);
    for (const id of copies) {
      const copy = await rowsOf(id);
      expect(shape(copy.referral)).toEqual(shape(original.referral));
      expect(copy.referral.patient_uin).toMatch(/^S1\d{6}D$/);
      expect(copy.timeline.map(shape)).toEqual(original.timeline.map(shape));
      expect(copy.audit.map(shape)).toEqual(original.audit.map(shape));
      expect(copy.audit.map((a) => a.referral_ids)).toEqual([[id]]);
      expect(copy.outbox).toEqual([]);
    }
    // Distinct patients and times, one second apart; IDs in time order, as the API's are.
    const referrals = await Promise.all(copies.map(async (id) => (await rowsOf(id)).referral));
    expect(new Set(referrals.map((r) => r.patient_uin)).size).toBe(3);
    const times = referrals.map((r) => r.created_at.getTime());
    expect(times).toEqual([...times].sort((a, b) => a - b));
    expect(times[1]! - times[0]!).toBe(1000);

    const [first] = copies;
    const query = new URLSearchParams({ ...acting, requesterIdentifier: BENCH_REQUESTER }).toString();
    const read = await t.request(t.sender, { method: 'GET', url: `/api/v1/referrals/${first}?${query}` });
    expect(read.statusCode, read.body).toBe(200);
    expect(read.json<{ status: string; id: string }>()).toMatchObject({ id: first, status: 'draft' });
    const listed = await t.request(t.sender, {
      method: 'GET',
      url: `/api/v1/institutions/hci/S1234A/referrals?pageSize=50`,
    });
    expect(listed.statusCode, listed.body).toBe(200);
    expect(listed.json<{ data: { id: string }[] }>().data.map((r) => r.id)).toEqual(
      expect.arrayContaining(copies),
    );
    const submitted = await t.request(t.sender, {
      method: 'POST',
      url: `/api/v1/referrals/${first}/submit`,
      payload: acting,
    });
    expect(submitted.statusCode, submitted.body).toBe(200);
  });

  it('copies a submitted referral with its forward still due in the outbox', async () => {
    const template = await create(2);
    const submit = await t.request(t.sender, {
      method: 'POST',
      url: `/api/v1/referrals/${template}/submit`,
      payload: acting,
    });
    expect(submit.statusCode, submit.body).toBe(200);
    const original = await rowsOf(template);
    expect(original.outbox.map((o) => o.topic)).toContain('ehr-forward');
    await cloneReferral(t.ctx.db, await t.ctx.dataKeys.cipher(t.ctx.db), {
      templateId: template,
      count: 2,
      firstNumber: 0,
      newest: new Date(),
      salt: 2,
      withOutbox: true,
      spacingMs: 1,
    });
    const copies = await copiesOf(template, 2);
    expect(copies).toHaveLength(2);
    // Recent arrivals, a millisecond apart.
    const [a, b] = await Promise.all(
      copies.map(async (id) => (await rowsOf(id)).referral.created_at.getTime()),
    );
    expect(b! - a!).toBe(1);
    for (const id of copies) {
      const copy = await rowsOf(id);
      expect(shape(copy.referral)).toEqual(shape(original.referral));
      expect(copy.referral.ehr_state).toBe('queued');
      expect(copy.timeline.map(shape)).toEqual(original.timeline.map(shape));
      expect(copy.audit.map(shape)).toEqual(original.audit.map(shape));
      expect(copy.outbox.map((o) => ({ topic: o.topic, version: o.version, attempts: o.attempts }))).toEqual(
        original.outbox.map((o) => ({ topic: o.topic, version: o.version, attempts: 0 })),
      );
    }
  });
});
