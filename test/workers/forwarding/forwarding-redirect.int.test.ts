// A redirect forwards twice: the redirected referral's final version (as a cancel does) and its
// successor's first (as a submit does), each under its own message ID, by the outbox rows the redirect
// wrote in its statement; the forward worker sends them (real Redis, the sandbox EHR as a separate
// process, the store on both engines). The successor's form carries the files it took over (the same
// bytes) and names where it came from.
import { createHash } from 'node:crypto';
import * as cheerio from 'cheerio';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { APP_ENGINES } from '../../support/engines.ts';
import { createBridgeApp, eventually, startEhr, type BridgeApp } from '../../support/bridge.ts';
import type { SandboxEhrProcess } from '../../support/sandbox-ehr-process.ts';
import { call, createDraft, type ReferralJson } from '../../support/scenarios.ts';

const sha256 = (bytes: string | Buffer) => createHash('sha256').update(bytes).digest('hex');
const ECG = 'ECG 12-lead: sinus rhythm, rate 72. QTc 410 ms. No ST changes.';

interface Forwarded extends ReferralJson {
  ehrForm: string;
  redirectedTo?: string;
  ehrForwarding: { state: string; attempts: number; sha256?: string };
}

interface LedgerRow {
  id: string;
  outcome: string;
  version: number;
  messageId: string;
}

// A forward's attempts may each take EHR_ATTEMPT_TIMEOUT_SECONDS: a wait for a delivery is bounded by
// the attempts and their backoff (t.forwardWithinMs), and the test by its three forwards.
const SETTINGS = { EHR_MAX_ATTEMPTS: '3', EHR_ATTEMPT_TIMEOUT_SECONDS: '10' };
const TIMEOUT = { timeout: 3 * 3 * (10_000 + 1_000) + 30_000 };

describe.each(APP_ENGINES)('forwarding a redirect on %s', (engine) => {
  let ehr: SandboxEhrProcess;
  let t: BridgeApp;

  beforeAll(async () => {
    ehr = await startEhr();
  });
  afterAll(async () => {
    await ehr.stop();
  });
  afterEach(async () => {
    await t.close();
    await ehr.reset();
  });

  const url = (id: string, op: string) => `/api/v1/referrals/${id}/${op}`;
  const asSender = 'institutionIdType=hci&institutionId=S1234A';
  const read = async (id: string) =>
    (await call(
      t,
      t.sender,
      'GET',
      `/api/v1/referrals/${id}?requesterIdentifier=dr.lim@example.org&${asSender}&additionalField=ehrForm`,
    )) as Forwarded;
  const ledger = async (id: string) =>
    (
      (await call(t, t.sender, 'GET', `${url(id, 'ehr-submissions')}?${asSender}`)) as unknown as {
        data: LedgerRow[];
      }
    ).data;
  const sentForm = async (id: string, attemptId: string) =>
    (await call(t, t.sender, 'GET', `${url(id, 'ehr-submissions')}/${attemptId}/form?${asSender}`)) as {
      ehrForm: string;
      version: number;
      attachments: { messageId: string; attachmentId: string; number: number }[];
    };
  /** Waits until the forward of `version` is delivered and recorded. */
  const deliveredAt = (id: string, version: number) =>
    eventually(
      `the delivery of ${id} v${version}`,
      async () => {
        const row = (await ledger(id)).find((r) => r.version === version && r.outcome === 'delivered');
        if (row === undefined) return undefined;
        const referral = await read(id);
        return referral.ehrForwarding.state === 'forwarded' && referral.version === version ? row : undefined;
      },
      t.forwardWithinMs,
    );

  it(
    "sends the redirected referral's final form and its successor's first, with the file it carries",
    TIMEOUT,
    async () => {
      t = await createBridgeApp(engine, ehr, { env: SETTINGS });
      const draft = await createDraft(t);
      const res = await t.request(t.sender, {
        method: 'POST',
        url: url(draft.id, 'attachments'),
        query: { ...t.sender.institution },
        headers: { 'content-type': 'text/plain', 'content-disposition': 'attachment; filename="ecg.txt"' },
        payload: ECG,
      });
      expect(res.statusCode, res.body).toBe(201);
      const file = res.json<{ id: string; number: number }>();
      const submitted = (await call(t, t.sender, 'POST', url(draft.id, 'submit'), {})) as ReferralJson;
      t.startBackground();
      await deliveredAt(draft.id, submitted.version);

      const redirected = (await call(t, t.provider, 'POST', url(draft.id, 'redirect'), {
        offeringId: 'erh-cardio',
        reasonCode: 'wrong-service',
        comment: 'Cardiology should see him first.',
      })) as Forwarded;
      expect(redirected.status).toBe('redirected');
      const successorId = redirected.redirectedTo!;

      // The redirected referral's final version goes to the EHR, as a cancel's does.
      const last = await deliveredAt(draft.id, redirected.version);
      expect(last.messageId).toBe(`${draft.id}.v${redirected.version}`);
      const $old = cheerio.load((await sentForm(draft.id, last.id)).ehrForm);
      expect($old('[data-field="status"]').first().text()).toBe('Redirected to another service');
      expect($old('[data-field="redirectedTo"]').text()).toBe(successorId);

      // The successor's first version goes too, with the file it carries: the same bytes.
      const first = await deliveredAt(successorId, 1);
      const form = `${successorId}.v1`;
      expect(first.messageId).toBe(form);
      const sent = await sentForm(successorId, first.id);
      const deliveries = await ehr.deliveries({ referralId: successorId });
      expect(deliveries.find((d) => d.messageId === form)?.sha256).toBe(sha256(sent.ehrForm));
      expect(sent.attachments).toEqual([
        expect.objectContaining({ number: file.number, messageId: `${form}.a${file.number}` }),
      ]);
      expect(sent.attachments[0]?.attachmentId).not.toBe(file.id);
      expect(deliveries.find((d) => d.messageId === `${form}.a${file.number}`)).toMatchObject({
        sha256: sha256(ECG),
      });
      const $ = cheerio.load(sent.ehrForm);
      expect($('[data-field="redirectedFrom"]').text()).toBe(draft.id);
      expect($('[data-field="status"]').first().text()).toBe('Submitted, awaiting acceptance');
      // What a client reads at that version is what the EHR received.
      expect((await read(successorId)).ehrForm).toBe(sent.ehrForm);
    },
  );
});
