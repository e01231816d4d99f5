// The worklists over the API: the provider's to-triage, overdue and to-book, the sender's needs-action,
// outcomes-to-read and rejected, each with the triage due time the offering's service level gives the
// referral's priority (the demo catalog: cgh-gastro triages routine in 10 working days, urgent in 2,
// two-week wait in 1), judged at the clock's time; the counts; tenancy, audit and bad names.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectProblem } from '../../support/api-assertions.ts';
import { APP_ENGINES } from '../../support/engines.ts';
import { REQUESTER } from '../../support/referral-routes.ts';
import { auditRowsOf } from '../../support/store-inspection.ts';
import { call, referralIn, type ReferralJson } from '../../support/scenarios.ts';
import { createTestApp, type TestApp, type TestParty } from '../../support/test-app.ts';

// Tue 1 Dec 2026, 09:00 in Singapore, the demo's display zone.
const START = new Date('2026-12-01T01:00:00Z');

describe.each(APP_ENGINES)('worklists on %s', (engine) => {
  let t: TestApp;
  let now = START;
  const made: Record<string, ReferralJson> = {};

  beforeAll(async () => {
    t = await createTestApp(engine, { clock: { now: () => now } });
    made.routine = await referralIn(t, 'pending-acceptance', { priority: 'routine' });
    made.tww = await referralIn(t, 'pending-acceptance', { priority: 'two-week-wait' });
    made.urgent = await referralIn(t, 'pending-acceptance', { priority: 'urgent' });
    made.legacy = await referralIn(t, 'pending-acceptance', { isUrgent: false });
    made.accepted = await referralIn(t, 'accepted', { priority: 'urgent' });
    made.scheduled = await referralIn(t, 'scheduled', { priority: 'urgent' });
    made.sentBack = await referralIn(t, 'sender-action-required', { priority: 'routine' });
    made.rejected = await referralIn(t, 'rejected', { priority: 'routine' });
    made.completed = await referralIn(t, 'completed', { priority: 'routine' });
    made.draft = await referralIn(t, 'draft', { priority: 'routine' });
  });
  afterAll(async () => {
    await t.close();
  });

  function worklist(who: TestParty, name: string, query: Record<string, string | number> = {}) {
    return t.request(who, {
      method: 'GET',
      url: `/api/v1/institutions/hci/${who.institution.institutionId}/worklists/${name}`,
      query: {
        requesterIdentifier: REQUESTER,
        ...Object.fromEntries(Object.entries(query).map(([k, v]) => [k, String(v)])),
      },
    });
  }

  async function items(who: TestParty, name: string) {
    const res = await worklist(who, name, { pageSize: 100 });
    expect(res.statusCode, res.body).toBe(200);
    return res.json<{ data: { id: string; dueAt?: string; overdue: boolean }[] }>().data;
  }

  async function counts(who: TestParty) {
    const res = await t.request(who, {
      method: 'GET',
      url: `/api/v1/institutions/hci/${who.institution.institutionId}/worklists`,
    });
    expect(res.statusCode, res.body).toBe(200);
    return Object.fromEntries(
      res.json<{ data: { name: string; count: number }[] }>().data.map((w) => [w.name, w.count]),
    );
  }

  it('lists what waits for triage, most pressing first, each due by its service level in working days', async () => {
    const list = await items(t.provider, 'to-triage');
    expect(list.map((i) => i.id)).toEqual([made.tww?.id, made.urgent?.id, made.routine?.id, made.legacy?.id]);
    expect(list.map((i) => i.dueAt)).toEqual([
      // one working day: the end of Wednesday 2 Dec in Singapore
      '2026-12-02T16:00:00.000Z',
      // two: the end of Thursday
      '2026-12-03T16:00:00.000Z',
      // ten, across two weekends: the end of Tuesday 15 Dec; so for one without a priority, not urgent
      '2026-12-15T16:00:00.000Z',
      '2026-12-15T16:00:00.000Z',
    ]);
    expect(list.every((i) => !i.overdue)).toBe(true);
    expect(await items(t.provider, 'overdue')).toEqual([]);
  });

  it('lists a referral as overdue once its due time has passed, and then only while it waits', async () => {
    now = new Date('2026-12-02T16:00:00Z');
    const overdue = await items(t.provider, 'overdue');
    expect(overdue.map((i) => [i.id, i.overdue])).toEqual([[made.tww?.id, true]]);
    const triage = await items(t.provider, 'to-triage');
    expect(triage.filter((i) => i.overdue).map((i) => i.id)).toEqual([made.tww?.id]);
    now = new Date('2026-12-03T16:00:00Z');
    expect((await items(t.provider, 'overdue')).map((i) => i.id)).toEqual([made.tww?.id, made.urgent?.id]);
    await call(t, t.provider, 'POST', `/api/v1/referrals/${made.tww?.id}/accept`, {});
    expect((await items(t.provider, 'overdue')).map((i) => i.id)).toEqual([made.urgent?.id]);
    const toBook = await items(t.provider, 'to-book');
    expect(toBook.map((i) => i.id).sort()).toEqual([made.accepted?.id, made.tww?.id].sort());
    expect(toBook.every((i) => !i.overdue)).toBe(true);
  });

  it('gives the sender what it must act on, the outcomes to read and what was rejected', async () => {
    expect((await items(t.sender, 'needs-action')).map((i) => i.id)).toEqual([made.sentBack?.id]);
    expect((await items(t.sender, 'outcomes-to-read')).map((i) => i.id)).toEqual([made.completed?.id]);
    expect((await items(t.sender, 'rejected')).map((i) => i.id)).toEqual([made.rejected?.id]);
    // The provider's lists are of what it receives: the sender has none of them.
    expect(await items(t.sender, 'to-triage')).toEqual([]);
    expect(await items(t.provider, 'needs-action')).toEqual([]);
  });

  it('resets the due time when the sender submits again, so its wait does not count', async () => {
    now = new Date('2026-12-07T02:00:00Z'); // Monday
    const id = made.sentBack?.id ?? '';
    await call(t, t.sender, 'POST', `/api/v1/referrals/${id}/submit`, {});
    const item = (await items(t.provider, 'to-triage')).find((i) => i.id === id);
    // ten working days from Monday 7 Dec: Tue 8 … Mon 21 Dec.
    expect(item?.dueAt).toBe('2026-12-21T16:00:00.000Z');
    expect((await items(t.sender, 'needs-action')).map((i) => i.id)).toEqual([]);
  });

  it('counts every list, as its pages do', async () => {
    const provider = await counts(t.provider);
    const sender = await counts(t.sender);
    for (const [who, got] of [
      [t.provider, provider],
      [t.sender, sender],
    ] as const) {
      for (const name of Object.keys(got)) {
        const res = await worklist(who, name, { pageSize: 1 });
        expect(got[name], name).toBe(res.json<{ metadata: { total: number } }>().metadata.total);
      }
    }
    expect(provider).toMatchObject({ 'to-triage': 4, overdue: 1, 'to-book': 2 });
    expect(sender).toMatchObject({ 'needs-action': 0, 'outcomes-to-read': 1, rejected: 1 });
  });

  it('pages, and audits each page naming its referrals', async () => {
    const first = await worklist(t.provider, 'to-triage', { pageSize: 2 });
    expect(first.statusCode, first.body).toBe(200);
    const page = first.json<{ data: { id: string }[]; metadata: Record<string, unknown> }>();
    expect(page.metadata).toEqual({ offset: 0, pageSize: 2, hasNext: true, total: 4 });
    expect(await auditRowsOf(t, first)).toEqual([
      expect.objectContaining({
        action: 'referral.worklist',
        outcome: 'success',
        institution_id: t.provider.institution.institutionId,
        requester_identifier: REQUESTER,
        referral_ids: page.data.map((i) => i.id),
      }),
    ]);
    const last = await worklist(t.provider, 'to-triage', { pageSize: 2, offset: 2 });
    expect(last.json<{ metadata: Record<string, unknown> }>().metadata).toEqual({
      offset: 2,
      pageSize: 2,
      hasNext: false,
      total: 4,
    });
    const past = await worklist(t.provider, 'to-triage', { pageSize: 2, offset: 10 });
    expect(past.json<{ data: unknown[]; metadata: { total: number } }>().metadata.total).toBe(4);
  });

  it('shows another institution none of them', async () => {
    for (const name of ['to-triage', 'overdue', 'to-book'])
      expect(await items(t.otherProvider, name)).toEqual([]);
    for (const name of ['needs-action', 'outcomes-to-read', 'rejected'])
      expect(await items(t.otherSender, name)).toEqual([]);
  });

  it('refuses a name it does not know, and an institution the key may not act for', async () => {
    const unknown = expectProblem(await worklist(t.provider, 'everything'), 400, 'validation_failed');
    expect(unknown.errors?.map((e) => e.path)).toEqual(['path.worklistName']);
    const res = await t.request(t.provider, {
      method: 'GET',
      url: `/api/v1/institutions/hci/${t.otherProvider.institution.institutionId}/worklists/to-triage`,
    });
    expect(res.statusCode).toBe(403);
  });

  it("puts a redirect's successor on its new provider's list, due by its new service's level", async () => {
    now = new Date('2026-12-07T02:00:00Z'); // Monday, 10:00 in Singapore
    const id = made.routine?.id ?? '';
    const answer = await call(t, t.provider, 'POST', `/api/v1/referrals/${id}/redirect`, {
      offeringId: 'erh-cardio',
      reasonCode: 'wrong-service',
    });
    const successor = String(answer.redirectedTo);
    expect((await items(t.provider, 'to-triage')).map((i) => i.id)).not.toContain(id);
    const theirs = await items(t.otherProvider, 'to-triage');
    // Ten working days at Eastside's cardiology from Monday: the end of Monday 21 Dec.
    expect(theirs.find((i) => i.id === successor)?.dueAt).toBe('2026-12-21T16:00:00.000Z');
  });
});
