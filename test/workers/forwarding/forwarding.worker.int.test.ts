// The forward worker end to end: real Redis, the sandbox EHR as a separate process, and the store on
// both engines. What arrives at the EHR is exactly the ehrForm a client reads at that version.
import { createHash } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { attachmentRepository } from '../../../src/db/attachments.repository.ts';
import { APP_ENGINES } from '../../support/engines.ts';
import { createBridgeApp, eventually, startEhr, type BridgeApp } from '../../support/bridge.ts';
import { CANARY, CANARY_MARKERS } from '../../support/fixtures/patients.ts';
import type { SandboxEhrProcess } from '../../support/sandbox-ehr-process.ts';
import { call, createDraft, type ReferralJson } from '../../support/scenarios.ts';
import { onePage } from '../../support/fixtures/pdf-files.ts';

const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');

describe.each(APP_ENGINES)('forwarding to the EHR on %s', (engine) => {
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

  const open = async (env: Record<string, string> = {}) => {
    t = await createBridgeApp(engine, ehr, { env: { EHR_MAX_ATTEMPTS: '3', ...env } });
    return t;
  };
  const url = (id: string, op: string) => `/api/v1/referrals/${id}/${op}`;
  const read = async (id: string, extra = '') =>
    (await call(
      t,
      t.sender,
      'GET',
      `/api/v1/referrals/${id}?requesterIdentifier=dr.lim@example.org&institutionIdType=hci&institutionId=S1234A${extra}`,
    )) as ReferralJson & {
      ehrForm: string;
      ehrForwarding: { state: string; attempts: number; sha256?: string };
      timelineEvents: { type: string; system: string; description: string }[];
    };
  const ledger = async (id: string) =>
    (await call(
      t,
      t.sender,
      'GET',
      `/api/v1/referrals/${id}/ehr-submissions?institutionIdType=hci&institutionId=S1234A`,
    )) as unknown as {
      data: {
        outcome: string;
        httpStatus?: number;
        errorCode?: string;
        sha256?: string;
        version: number;
        messageId: string;
        attempt: number;
        attemptedAt: string;
      }[];
    };
  const settled = (id: string, state: string) =>
    eventually(`ehrForwarding.state ${state}`, async () => {
      const r = await read(id);
      return r.ehrForwarding.state === state ? r : undefined;
    });

  it('delivers the exact bytes of the ehrForm a client reads at that version', async () => {
    await open();
    const draft = await createDraft(t);
    await call(t, t.sender, 'POST', url(draft.id, 'submit'), {});
    const before = await read(draft.id, '&additionalField=ehrForm');
    expect(before.ehrForwarding.state).toBe('queued');

    t.startBackground();
    const delivered = await eventually('the delivery', async () => {
      const list = await ehr.deliveries({ referralId: draft.id });
      return list.length > 0 ? list : undefined;
    });
    expect(delivered).toHaveLength(1);
    expect(delivered[0]).toMatchObject({
      messageId: `${draft.id}.v${before.version}`,
      version: before.version,
      sha256: sha256(before.ehrForm),
    });

    const after = await settled(draft.id, 'forwarded');
    expect(after.ehrForwarding).toMatchObject({ attempts: 1, sha256: sha256(before.ehrForm) });
    // The forward is the bridge's bookkeeping: its sentence is on the timeline, named as refhub's own
    // step (the submit before it stays the sender's), but the referral did not change: same version,
    // same form.
    expect(after.version).toBe(before.version);
    expect(after.timelineEvents.find((e) => e.type === 'referral.pending-acceptance')?.system).toBe('HAS');
    expect(after.timelineEvents.at(-1)).toMatchObject({
      type: 'ehr.forwarded',
      system: 'refhub',
      description: expect.stringMatching(
        /^The referral form was delivered to the national health record \(reference EHR-/,
      ) as unknown,
    });
    const rows = (await ledger(draft.id)).data;
    expect(rows).toEqual([
      expect.objectContaining({
        messageId: `${draft.id}.v${before.version}`,
        version: before.version,
        attempt: 1,
        outcome: 'delivered',
        httpStatus: 201,
        sha256: sha256(before.ehrForm),
        ehrReference: delivered[0]?.reference,
      }),
    ]);
  });

  it('coalesces a submit and a cancel that come close together, and sends the latest state once', async () => {
    await open();
    const draft = await createDraft(t);
    await call(t, t.sender, 'POST', url(draft.id, 'submit'), {});
    await call(t, t.sender, 'POST', url(draft.id, 'cancel'), { cancelNote: 'Patient recovered' });
    const cancelled = await read(draft.id, '&additionalField=ehrForm');
    t.startBackground();
    await settled(draft.id, 'forwarded');
    const deliveries = await ehr.deliveries({ referralId: draft.id });
    expect(deliveries).toHaveLength(1);
    expect(deliveries[0]).toMatchObject({ version: cancelled.version, sha256: sha256(cancelled.ehrForm) });
  });

  it('retries 503 and 429 with backoff, honouring Retry-After, then delivers', async () => {
    await open();
    await ehr.setBehaviour({ statuses: [503, 429], retryAfterSeconds: 1 });
    const draft = await createDraft(t);
    await call(t, t.sender, 'POST', url(draft.id, 'submit'), {});
    t.startBackground();
    await settled(draft.id, 'forwarded');
    const rows = (await ledger(draft.id)).data;
    expect(rows.map((r) => [r.attempt, r.outcome, r.httpStatus])).toEqual([
      [1, 'retrying', 503],
      [2, 'retrying', 429],
      [3, 'delivered', 201],
    ]);
    // Retry-After: 1 was honoured, although the backoff base is 20 ms.
    const gap = Date.parse(rows[2]?.attemptedAt ?? '') - Date.parse(rows[1]?.attemptedAt ?? '');
    expect(gap).toBeGreaterThanOrEqual(900);
    expect(new Set(rows.map((r) => r.messageId)).size).toBe(1);
  });

  it('retries a connection reset (a network error), then delivers', async () => {
    await open();
    await ehr.setBehaviour({ resets: 1 });
    const draft = await createDraft(t);
    await call(t, t.sender, 'POST', url(draft.id, 'submit'), {});
    t.startBackground();
    await settled(draft.id, 'forwarded');
    const rows = (await ledger(draft.id)).data;
    expect(rows).toHaveLength(2);
    expect(rows[0]).toMatchObject({
      outcome: 'retrying',
      errorCode: expect.stringMatching(/^[A-Z_]+$/) as unknown,
    });
    expect(rows[0]?.httpStatus).toBeUndefined();
    expect(rows[1]).toMatchObject({ outcome: 'delivered', httpStatus: 201 });
  });

  it('treats another 4xx as final: one attempt, ehr.forward-failed on the timeline', async () => {
    await open();
    await ehr.setBehaviour({ statuses: [422] });
    const draft = await createDraft(t);
    await call(t, t.sender, 'POST', url(draft.id, 'submit'), {});
    t.startBackground();
    const failed = await settled(draft.id, 'failed');
    expect(failed.timelineEvents.at(-1)).toMatchObject({
      type: 'ehr.forward-failed',
      description:
        'The referral form could not be delivered to the national health record: the EHR answered HTTP 422, which is final.',
    });
    expect((await ledger(draft.id)).data.map((r) => [r.outcome, r.httpStatus])).toEqual([['failed', 422]]);
    // Nothing more is tried.
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect((await ehr.requests()).total).toBe(1);
  });

  it('forwards a failed referral again when an operator retries it, at its current version', async () => {
    await open();
    await ehr.setBehaviour({ statuses: [422] });
    const draft = await createDraft(t);
    await call(t, t.sender, 'POST', url(draft.id, 'submit'), {});
    t.startBackground();
    const failed = await settled(draft.id, 'failed');
    // Nothing but failed forwards is touched: a draft, or one already forwarded, stays as it is.
    const other = await createDraft(t);
    expect(await t.ctx.ehrForwarding.retryFailed([draft.id, other.id], 'ops.retry.test')).toEqual([draft.id]);
    const forwarded = await settled(draft.id, 'forwarded');
    expect(forwarded.ehrForwarding.attempts).toBe(1);
    // The version the EHR refused is sent again, under its own message ID with the same bytes: the
    // EHR never accepted it, so this is no duplicate.
    const rows = (await ledger(draft.id)).data;
    expect(rows.map((r) => [r.outcome, r.httpStatus, r.version])).toEqual([
      ['failed', 422, failed.version],
      ['delivered', 201, failed.version],
    ]);
    expect(new Set(rows.map((r) => r.messageId)).size).toBe(1);
    expect(new Set(rows.map((r) => r.sha256)).size).toBe(1);
    // The operator's request is audited, and the forward it caused carries its request ID.
    const audit = await t.ctx.db
      .selectFrom('audit_events')
      .select(['action', 'referral_ids', 'api_key_id'])
      .where('request_id', '=', 'ops.retry.test')
      .orderBy('seq')
      .execute();
    expect(audit).toEqual([
      { action: 'ehr.forward.retry-failed', referral_ids: [draft.id], api_key_id: null },
      { action: 'ehr.forward.delivered', referral_ids: [draft.id], api_key_id: null },
    ]);
    expect(await t.ctx.ehrForwarding.retryFailed(undefined, 'ops.retry.none')).toEqual([]);
  });

  // A 400 is the EHR refusing the request itself. A 302 is not a delivery either: the sandbox's staged
  // redirect points back at its own endpoint, so a client that followed it would deliver, visibly.
  it.each([400, 302])(
    'fails permanently after one attempt on HTTP %i, and follows no redirect',
    async (status) => {
      await open();
      await ehr.setBehaviour({ statuses: [status] });
      const draft = await createDraft(t);
      await call(t, t.sender, 'POST', url(draft.id, 'submit'), {});
      t.startBackground();
      const failed = await settled(draft.id, 'failed');
      expect(failed.timelineEvents.at(-1)).toMatchObject({
        type: 'ehr.forward-failed',
        system: 'refhub',
        description: `The referral form could not be delivered to the national health record: the EHR answered HTTP ${status}, which is final.`,
      });
      expect((await ledger(draft.id)).data).toEqual([
        expect.objectContaining({ attempt: 1, outcome: 'failed', httpStatus: status }),
      ]);
      // Nothing more is tried, and nothing was delivered.
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(await ehr.requests()).toMatchObject({ total: 1, byStatus: { [String(status)]: 1 } });
      expect(await ehr.deliveries({ referralId: draft.id })).toEqual([]);
      const job = await t.ctx.queues.queues['ehr-forward'].getJob(`${draft.id}.v${draft.version + 1}`);
      expect(await job?.getState()).toBe('failed');
      expect(job?.attemptsMade).toBe(1);
    },
  );

  it('gives up after EHR_MAX_ATTEMPTS retryable failures', async () => {
    await open();
    await ehr.setBehaviour({ statuses: [500, 502, 503, 504] });
    const draft = await createDraft(t);
    await call(t, t.sender, 'POST', url(draft.id, 'submit'), {});
    t.startBackground();
    const failed = await settled(draft.id, 'failed');
    expect((await ledger(draft.id)).data.map((r) => [r.attempt, r.outcome, r.httpStatus])).toEqual([
      [1, 'retrying', 500],
      [2, 'retrying', 502],
      [3, 'failed', 503],
    ]);
    expect(failed.ehrForwarding.attempts).toBe(3);
    expect(failed.timelineEvents.at(-1)?.description).toBe(
      'The referral form could not be delivered to the national health record: the EHR answered HTTP 503, and 3 attempts were made.',
    );
  });

  it('sends nothing for a referral that went back to draft before its forward ran', async () => {
    await open();
    const draft = await createDraft(t);
    await call(t, t.sender, 'POST', url(draft.id, 'submit'), {});
    await call(t, t.sender, 'POST', url(draft.id, 'back-to-draft'), {});
    t.startBackground();
    await settled(draft.id, 'not-sent');
    expect(await ehr.deliveries({ referralId: draft.id })).toEqual([]);
    expect((await ledger(draft.id)).data).toEqual([]);
  });

  it('keeps patient data out of Redis, job payloads and logs', async () => {
    await open();
    const draft = await createDraft(t, CANARY);
    await call(t, t.sender, 'POST', url(draft.id, 'submit'), {});
    t.startBackground();
    await settled(draft.id, 'forwarded');
    const redis = await t.redisDump();
    expect(redis).toContain(draft.id);
    for (const marker of CANARY_MARKERS) {
      expect(redis).not.toContain(marker);
      expect(t.logs.join('\n')).not.toContain(marker);
    }
    const job = await t.ctx.queues.queues['ehr-forward'].getJob(`${draft.id}.v${draft.version + 1}`);
    // IDs only: the referral, the request, the version and the sending institution's ID.
    expect(Object.keys(job?.data ?? {}).sort()).toEqual([
      'institution',
      'referralId',
      'requestId',
      'version',
    ]);
    expect(job?.data.institution).toBe(
      `${t.sender.institution.institutionIdType}:${t.sender.institution.institutionId}`,
    );
    expect(ehr.output().stdout + ehr.output().stderr).not.toContain(CANARY.patientName);
  });
  describe('with files', () => {
    // A real PDF, since a PDF is read whole before it is kept.
    const LETTER = onePage('');
    const NOTES = Buffer.from('ECG 12-lead: sinus rhythm, rate 72.\n');
    const hex = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');
    const attach = async (id: string, bytes: Buffer, fileName: string) => {
      const res = await t.request(t.sender, {
        method: 'POST',
        url: url(id, 'attachments'),
        query: { ...t.sender.institution },
        headers: {
          'content-type': 'application/octet-stream',
          'content-disposition': `attachment; filename="${fileName}"`,
        },
        payload: bytes,
      });
      expect(res.statusCode, res.body).toBe(201);
      return res.json<{ id: string; number: number; sha256: string }>();
    };

    it('sends each file as a document of its own, byte for byte, listed in the form it goes with', async () => {
      await open();
      const draft = await createDraft(t);
      const letter = await attach(draft.id, LETTER, 'referral letter.pdf');
      const notes = await attach(draft.id, NOTES, 'ecg notes.txt');
      await call(t, t.sender, 'POST', url(draft.id, 'submit'), {});
      const before = await read(draft.id, '&additionalField=ehrForm');
      // The form a client reads lists the files that will go with it.
      for (const file of [letter, notes]) expect(before.ehrForm).toContain(file.sha256);
      expect(before.ehrForm).toContain('referral letter.pdf');

      t.startBackground();
      await settled(draft.id, 'forwarded');
      const deliveries = await ehr.deliveries({ referralId: draft.id });
      const form = `${draft.id}.v${before.version}`;
      expect(deliveries.map((d) => d.messageId)).toEqual([form, `${form}.a1`, `${form}.a2`]);
      expect(deliveries[0]).toMatchObject({ sha256: sha256(before.ehrForm) });
      // The bytes the EHR received are the bytes uploaded: their SHA-256, checked by the EHR on arrival.
      expect(deliveries[1]).toMatchObject({
        sha256: hex(LETTER),
        document: { formMessageId: form, number: 1, mediaType: 'application/pdf', sizeBytes: LETTER.length },
      });
      expect(deliveries[2]).toMatchObject({
        sha256: hex(NOTES),
        document: { formMessageId: form, number: 2, mediaType: 'text/plain', sizeBytes: NOTES.length },
      });

      // The ledger proves them: the attempt's form names the files sent with it.
      const [attempt] = (await ledger(draft.id)).data as unknown as { id: string; outcome: string }[];
      expect(attempt?.outcome).toBe('delivered');
      const proof = (await call(
        t,
        t.sender,
        'GET',
        `${url(draft.id, 'ehr-submissions')}/${attempt?.id}/form?institutionIdType=hci&institutionId=S1234A`,
      )) as { ehrForm: string; attachments: { messageId: string; attachmentId: string; sha256: string }[] };
      expect(proof.ehrForm).toBe(before.ehrForm);
      expect(proof.attachments).toEqual([
        expect.objectContaining({ messageId: `${form}.a1`, attachmentId: letter.id, sha256: hex(LETTER) }),
        expect.objectContaining({ messageId: `${form}.a2`, attachmentId: notes.id, sha256: hex(NOTES) }),
      ]);
    });

    it('retries the form and its files together when a file is refused for now', async () => {
      await open();
      const draft = await createDraft(t);
      await attach(draft.id, LETTER, 'letter.pdf');
      await call(t, t.sender, 'POST', url(draft.id, 'submit'), {});
      // The form is taken, the file is not (503): the attempt is retried as a whole.
      await ehr.setBehaviour({ fileStatuses: [503] });
      t.startBackground();
      await settled(draft.id, 'forwarded');
      const rows = (await ledger(draft.id)).data as unknown as {
        outcome: string;
        httpStatus?: number;
        reason?: string;
      }[];
      expect(rows.map((r) => [r.outcome, r.httpStatus])).toEqual([
        ['retrying', 503],
        ['delivered', 201],
      ]);
      const deliveries = await ehr.deliveries({ referralId: draft.id });
      expect(deliveries.map((d) => d.messageId.slice(-3))).toEqual([
        `.v${deliveries[0]?.version}`.slice(-3),
        '.a1',
      ]);
    });

    it('never sends a file whose stored bytes are not those it was added with', async () => {
      await open();
      const draft = await createDraft(t);
      const letter = await attach(draft.id, LETTER, 'letter.pdf');
      await call(t, t.sender, 'POST', url(draft.id, 'submit'), {});
      await t.ctx.db
        .updateTable('attachment_contents')
        .set({ content: Buffer.from('%PDF-1.7\nSomething else entirely.\n') })
        .where('attachment_id', '=', letter.id)
        .execute();
      t.startBackground();
      const failed = await settled(draft.id, 'failed');
      expect(failed.timelineEvents.at(-1)).toMatchObject({
        type: 'ehr.forward-failed',
        description:
          'The referral form could not be delivered to the national health record: file 1 is not the file that was added.',
      });
      expect((await ledger(draft.id)).data.map((r) => [r.outcome, r.errorCode])).toEqual([
        ['failed', 'attachment_changed'],
      ]);
      const deliveries = await ehr.deliveries({ referralId: draft.id });
      expect(deliveries.map((d) => d.document)).toEqual([undefined]);
    });

    it('waits for a file still being scanned, so that it goes with the form', async () => {
      await open({ ATTACHMENT_SCANNER: 'clamd://127.0.0.1:9' });
      const draft = await createDraft(t);
      const letter = await attach(draft.id, LETTER, 'letter.pdf');
      await call(t, t.sender, 'POST', url(draft.id, 'submit'), {});
      const plan = await t.ctx.ehrForwarding.plan(draft.id);
      expect(plan.kind).toBe('waiting-for-scan');
      // The scan finds it clean: the forward sends it with the form.
      await attachmentRepository(t.ctx.db).recordScan(letter.id, { kind: 'clean' }, t.ctx.clock.now());
      const ready = await t.ctx.ehrForwarding.plan(draft.id);
      expect(ready.kind === 'send' ? ready.source.attachments?.map((a) => a.id) : ready.kind).toEqual([
        letter.id,
      ]);
    });
  });
});
