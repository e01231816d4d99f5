// The bridge's bookkeeping stays off the clinical record. A clinic system reads a referral, waits
// while the bridge delivers its form to the EHR and the provider reminders fire, and then cancels with
// the ETag it read: the delivery and the reminders are on the timeline, but the version, the ETag and
// the ehrForm are what they were, and the form fetched after delivery is byte for byte the one the
// EHR received (its SHA-256 is the ledger's).
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createBridgeApp, eventually, startEhr, type BridgeApp } from '../support/bridge.ts';
import { APP_ENGINES } from '../support/engines.ts';
import type { SandboxEhrProcess } from '../support/sandbox-ehr-process.ts';
import { call, createDraft } from '../support/scenarios.ts';

const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');
const REQUESTER = 'dr.lim@example.org';

describe.each(APP_ENGINES)('bookkeeping and the version on %s', (engine) => {
  let ehr: SandboxEhrProcess;
  let t: BridgeApp;

  beforeAll(async () => {
    ehr = await startEhr();
    t = await createBridgeApp(engine, ehr, {
      env: { REMINDER_AFTER_SECONDS: '1', REMINDER_INTERVAL_SECONDS: '1', REMINDER_MAX: '2' },
    });
  });
  afterAll(async () => {
    await t.close();
    await ehr.stop();
  });

  const get = (id: string, withForm = false) =>
    t.request(t.sender, {
      method: 'GET',
      url: `/api/v1/referrals/${id}?${new URLSearchParams({
        requesterIdentifier: REQUESTER,
        ...t.sender.institution,
        ...(withForm ? { additionalField: 'ehrForm' } : {}),
      }).toString()}`,
    });
  type Read = {
    version: number;
    ehrForm: string;
    ehrForwarding: { state: string; sha256?: string };
    timelineEvents: { type: string }[];
  };

  it('keeps the version, the ETag and the form while deliveries and reminders are recorded', async () => {
    const draft = await createDraft(t);
    await call(t, t.sender, 'POST', `/api/v1/referrals/${draft.id}/submit`, {});
    const first = await get(draft.id, true);
    expect(first.statusCode, first.body).toBe(200);
    const etag = first.headers.etag;
    expect(etag).toMatch(/^W\/"[0-9]+"$/);
    const before = first.json<Read>();

    t.startBackground();
    const after = await eventually(
      'the delivery and two reminders on the timeline',
      async () => {
        const res = await get(draft.id, true);
        const body = res.json<Read>();
        const types = body.timelineEvents.map((e) => e.type);
        const reminders = types.filter((type) => type === 'referral.provider-patient-create-reminder-sent');
        return types.includes('ehr.forwarded') && reminders.length === 2 ? res : undefined;
      },
      30_000,
    );
    const later = after.json<Read>();
    expect(later.version).toBe(before.version);
    expect(after.headers.etag).toBe(etag);
    expect(later.ehrForm).toBe(before.ehrForm);
    expect(later.ehrForwarding).toMatchObject({ state: 'forwarded', sha256: sha256(later.ehrForm) });

    const [delivered] = await ehr.deliveries({ referralId: draft.id });
    expect(delivered).toMatchObject({ version: before.version, sha256: sha256(later.ehrForm) });

    // Afterwards, the ledger proves what was sent: each attempt's form, byte for byte, with its hash.
    const query = new URLSearchParams({ ...t.sender.institution }).toString();
    const ledger = await t.request(t.sender, {
      method: 'GET',
      url: `/api/v1/referrals/${draft.id}/ehr-submissions?${query}`,
    });
    const [attempt] = ledger.json<{ data: { id: string; sha256: string; messageId: string }[] }>().data;
    const sent = await t.request(t.sender, {
      method: 'GET',
      url: `/api/v1/referrals/${draft.id}/ehr-submissions/${attempt!.id}/form?${query}`,
    });
    expect(sent.statusCode, sent.body).toBe(200);
    const proof = sent.json<{ ehrForm: string; sha256: string; messageId: string; version: number }>();
    expect(proof).toMatchObject({
      messageId: attempt!.messageId,
      version: before.version,
      sha256: attempt!.sha256,
    });
    expect(proof.ehrForm).toBe(before.ehrForm);
    expect(sha256(proof.ehrForm)).toBe(proof.sha256);
    // The form is patient data: another institution does not see it, and ops keys do not read it.
    const elsewhere = await t.request(t.otherSender, {
      method: 'GET',
      url: `/api/v1/referrals/${draft.id}/ehr-submissions/${attempt!.id}/form?${new URLSearchParams({ ...t.otherSender.institution }).toString()}`,
    });
    expect(elsewhere.statusCode).toBe(404);
    const ops = await t.request(t.ops, {
      method: 'GET',
      url: `/api/v1/referrals/${draft.id}/ehr-submissions/${attempt!.id}/form?${query}`,
    });
    expect(ops.statusCode).toBe(403);

    // A catalog change after the delivery does not change the form of the version that was sent.
    await t.ctx.db
      .updateTable('offerings')
      .set({ name: 'Renamed clinic' })
      .where('id', '=', 'cgh-gastro')
      .execute();
    const renamed = (await get(draft.id, true)).json<Read>();
    expect(renamed.ehrForm).toBe(before.ehrForm);

    const cancel = await t.request(t.sender, {
      method: 'POST',
      url: `/api/v1/referrals/${draft.id}/cancel`,
      headers: { 'if-match': String(etag) },
      payload: { ...t.sender.institution, cancelNote: 'Patient recovered' },
    });
    expect(cancel.statusCode, cancel.body).toBe(200);
    expect(cancel.json<{ version: number }>().version).toBe(before.version + 1);
    expect(cancel.headers.etag).toBe(`W/"${before.version + 1}"`);
  });
});
