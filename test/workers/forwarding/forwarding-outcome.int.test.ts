// A completed referral goes to the national EHR again: the provider's `complete` makes the new version
// due, the forward worker sends it (real Redis, the sandbox EHR as a separate process, the store on both
// engines), and the form the EHR received carries the Outcome section with the outcome's documents.
// The sender's acknowledgement sends nothing.
import { createHash } from 'node:crypto';
import * as cheerio from 'cheerio';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { APP_ENGINES } from '../../support/engines.ts';
import { createBridgeApp, eventually, startEhr, type BridgeApp } from '../../support/bridge.ts';
import type { SandboxEhrProcess } from '../../support/sandbox-ehr-process.ts';
import type { TestParty } from '../../support/test-app.ts';
import { call, createDraft, type ReferralJson } from '../../support/scenarios.ts';
import { onePage } from '../../support/fixtures/pdf-files.ts';

const sha256 = (bytes: string | Buffer) => createHash('sha256').update(bytes).digest('hex');

/** A consultation letter: a real PDF, since a PDF is read whole before it is kept. */
const CONSULT_LETTER = onePage('');
const SUMMARY = 'Gastroscopy normal.\nNo follow-up needed; continue omeprazole for four weeks.';

interface Forwarded extends ReferralJson {
  ehrForm: string;
  ehrForwarding: { state: string; attempts: number; sha256?: string };
}

interface LedgerRow {
  id: string;
  outcome: string;
  version: number;
  messageId: string;
}

// A forward's attempts may each take EHR_ATTEMPT_TIMEOUT_SECONDS: a wait for a delivery is bounded by
// the attempts and their backoff (t.forwardWithinMs), and the test by its two forwards.
const SETTINGS = { EHR_MAX_ATTEMPTS: '3', EHR_ATTEMPT_TIMEOUT_SECONDS: '10' };
const TIMEOUT = { timeout: 2 * 3 * (10_000 + 1_000) + 30_000 };

describe.each(APP_ENGINES)('forwarding a completed referral on %s', (engine) => {
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
      `the delivery of v${version}`,
      async () => {
        const row = (await ledger(id)).find((r) => r.version === version && r.outcome === 'delivered');
        if (row === undefined) return undefined;
        const referral = await read(id);
        return referral.ehrForwarding.state === 'forwarded' ? row : undefined;
      },
      t.forwardWithinMs,
    );
  const attach = async (who: TestParty, id: string, bytes: Buffer, fileName: string) => {
    const res = await t.request(who, {
      method: 'POST',
      url: url(id, 'attachments'),
      query: { ...who.institution },
      headers: {
        'content-type': 'application/octet-stream',
        'content-disposition': `attachment; filename="${fileName}"`,
      },
      payload: bytes,
    });
    expect(res.statusCode, res.body).toBe(201);
    return res.json<{ id: string; number: number }>();
  };

  it(
    'sends the version the provider completed, whose form carries the Outcome section',
    TIMEOUT,
    async () => {
      t = await createBridgeApp(engine, ehr, { env: SETTINGS });
      const draft = await createDraft(t);
      const submitted = (await call(t, t.sender, 'POST', url(draft.id, 'submit'), {})) as ReferralJson;
      t.startBackground();
      const first = await deliveredAt(draft.id, submitted.version);
      expect(
        cheerio.load((await sentForm(draft.id, first.id)).ehrForm)('h2:contains("Outcome")'),
      ).toHaveLength(0);

      await call(t, t.provider, 'POST', url(draft.id, 'accept'), {});
      const letter = await attach(t.provider, draft.id, CONSULT_LETTER, 'consult letter.pdf');
      const completed = (await call(t, t.provider, 'POST', url(draft.id, 'complete'), {
        outcomeCode: 'seen-discharged',
        summary: SUMMARY,
        attachmentIds: [letter.id],
        completedByName: 'Dr Tan Wei Ming',
      })) as ReferralJson;
      expect(completed.status).toBe('completed');

      // `complete` makes the new version due; the worker delivers it, with the outcome's file.
      const attempt = await deliveredAt(draft.id, completed.version);
      const form = `${draft.id}.v${completed.version}`;
      expect(attempt.messageId).toBe(form);
      const deliveries = await ehr.deliveries({ referralId: draft.id });
      const sent = await sentForm(draft.id, attempt.id);
      expect(deliveries.find((d) => d.messageId === form)?.sha256).toBe(sha256(sent.ehrForm));
      expect(deliveries.find((d) => d.messageId === `${form}.a${letter.number}`)).toMatchObject({
        sha256: sha256(CONSULT_LETTER),
        document: { formMessageId: form, number: letter.number },
      });
      expect(sent.attachments).toEqual([
        expect.objectContaining({ attachmentId: letter.id, messageId: `${form}.a${letter.number}` }),
      ]);

      // The bytes the EHR received are the ehrForm a client reads at that version.
      const after = await read(draft.id);
      expect(after.version).toBe(completed.version);
      expect(after.ehrForm).toBe(sent.ehrForm);

      const $ = cheerio.load(sent.ehrForm);
      const text = (field: string) => $(`[data-field="${field}"]`).first().text();
      expect($('h2:contains("Outcome")')).toHaveLength(1);
      expect(text('status')).toBe('Completed, outcome awaiting acknowledgement');
      expect(text('outcome.display')).toBe('Seen and discharged to the referring clinic');
      expect(text('outcome.code')).toBe('seen-discharged');
      expect(text('outcome.summary')).toBe(SUMMARY);
      expect(text('outcome.completedByName')).toBe('Dr Tan Wei Ming');
      expect(text('outcome.completedAt')).toMatch(/^\w{3} \d{1,2} \w{3} \d{4}, \d{2}:\d{2} SGT$/);
      expect(text('outcome.attachment.number')).toBe(String(letter.number));
      expect(text('outcome.attachment.fileName')).toBe('consult letter.pdf');

      // The sender's acknowledgement is no reason to forward: nothing becomes due.
      const acknowledged = (await call(
        t,
        t.sender,
        'POST',
        url(draft.id, 'acknowledge-outcome'),
        {},
      )) as Forwarded;
      expect(acknowledged.status).toBe('outcome-acknowledged');
      expect((await read(draft.id)).ehrForwarding.state).toBe('forwarded');
    },
  );
});
