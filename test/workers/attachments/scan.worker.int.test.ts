// Scanning attachments against a real ClamAV daemon: a clean file becomes available, EICAR is rejected
// with its signature, a scan done is never done again, an attachment removed meanwhile is left alone,
// and a scanner that cannot be reached leaves the attachment waiting and the job to retry. Then the
// queue: a scan queued twice runs once, and the worker records it.
import type { QueueBackend } from '../../../src/queue/backend.ts';
import type { Worker } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { attachmentRepository, type AttachmentRecord } from '../../../src/db/attachments.repository.ts';
import { startBackground } from '../../../src/composition/background.ts';
import { attachmentScanJobId } from '../../../src/queue/registry.ts';
import { createClamdClient, ScannerError } from '../../../src/workers/attachments/clamd-client.ts';
import { scanAttachment, startAttachmentScanWorker } from '../../../src/workers/attachments/scan.worker.ts';
import { createQueueApp, eventually, type QueueApp } from '../../support/bridge.ts';
import { EICAR, EICAR_SIGNATURE, startClamd, type ClamdServer } from '../../support/clamd-server.ts';
import { APP_ENGINES } from '../../support/engines.ts';
import { freePort, LOOPBACK } from '../../support/free-port.ts';
import { createDraft } from '../../support/scenarios.ts';
import { deleteAttachment, storedAttachment } from '../../support/stored-attachments.ts';
import { createTestApp, type TestApp } from '../../support/test-app.ts';
import { onePage } from '../../support/fixtures/pdf-files.ts';

/** A consultation letter: a real PDF, since a PDF is read whole before it is kept. */
const LETTER = onePage('');

const addAttachment = (t: TestApp, content: Buffer) => storedAttachment(t, content);

let clamd: ClamdServer;
beforeAll(async () => {
  clamd = await startClamd();
}, 60_000);
afterAll(async () => {
  await clamd.stop();
});

describe.each(APP_ENGINES)('scanning an attachment on %s', (engine) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp(engine);
  });
  afterAll(async () => {
    await t.close();
  });
  const deps = () => ({
    stores: t.ctx.stores,
    clock: t.ctx.clock,
    logger: t.ctx.logger,
    scanner: createClamdClient({ host: clamd.host, port: clamd.port, timeoutMs: 10_000 }),
  });
  const stateOf = async (a: AttachmentRecord) =>
    (await attachmentRepository(t.ctx.db, t.ctx.dataKeys).find(a.referralId, a.id))?.scanState;

  it('makes a clean file available, once', async () => {
    const a = await addAttachment(t, LETTER);
    expect(await scanAttachment(deps(), { attachmentId: a.id, referralId: a.referralId })).toBe('available');
    expect(await stateOf(a)).toBe('available');
    expect(await scanAttachment(deps(), { attachmentId: a.id, referralId: a.referralId })).toBe(
      'already-scanned',
    );
  });

  it('rejects EICAR and keeps the signature for operators', async () => {
    const a = await addAttachment(t, EICAR);
    expect(await scanAttachment(deps(), { attachmentId: a.id, referralId: a.referralId })).toBe('rejected');
    const found = await attachmentRepository(t.ctx.db, t.ctx.dataKeys).find(a.referralId, a.id);
    expect(found).toMatchObject({ scanState: 'rejected', scanSignature: `${EICAR_SIGNATURE}.UNOFFICIAL` });
  });

  it('leaves alone an attachment that is gone, and one of another referral', async () => {
    const a = await addAttachment(t, LETTER);
    const other = await createDraft(t);
    expect(await scanAttachment(deps(), { attachmentId: a.id, referralId: other.id })).toBe('gone');
    await deleteAttachment(t.ctx.db, a.referralId, a.id);
    expect(await scanAttachment(deps(), { attachmentId: a.id, referralId: a.referralId })).toBe('gone');
  });

  it('throws the scanner’s code when it cannot be reached, and the attachment keeps waiting', async () => {
    const a = await addAttachment(t, LETTER);
    const unreachable = {
      ...deps(),
      scanner: createClamdClient({ host: LOOPBACK, port: await freePort(), timeoutMs: 10_000 }),
    };
    let thrown: unknown;
    try {
      await scanAttachment(unreachable, { attachmentId: a.id, referralId: a.referralId });
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(ScannerError);
    expect((thrown as ScannerError).message).toBe('scanner_unreachable');
    expect(await stateOf(a)).toBe('pending-scan');
  });
});

describe('the attachment scan queue', () => {
  let t: QueueApp;
  let worker: Worker | undefined;
  let backend: QueueBackend | undefined;
  beforeAll(async () => {
    t = await createQueueApp('postgres');
  });
  afterAll(async () => {
    await worker?.close();
    await backend?.close();
    await t.close();
  });

  it('runs a scan queued twice once, and records it', async () => {
    const a = await addAttachment(t, LETTER);
    const payload = { attachmentId: a.id, referralId: a.referralId };
    await t.ctx.queues.enqueueScans([payload]);
    await t.ctx.queues.enqueueScans([payload]);
    const queue = t.ctx.queues.queues['attachment-scan'];
    expect(await queue.getJobCountByTypes('waiting', 'active', 'delayed', 'prioritized')).toBe(1);
    const job = await queue.getJob(attachmentScanJobId(a.id));
    expect(job?.data).toEqual(payload);

    backend = t.ctx.queueBackend('worker');
    worker = startAttachmentScanWorker(
      {
        stores: t.ctx.stores,
        clock: t.ctx.clock,
        logger: t.ctx.logger,
        scanner: createClamdClient({ host: clamd.host, port: clamd.port, timeoutMs: 10_000 }),
      },
      { backend },
    );
    await eventually('the scan job completed', async () =>
      (await queue.getJobCounts('completed')).completed === 1 ? true : undefined,
    );
    expect((await queue.getJob(attachmentScanJobId(a.id)))?.returnvalue).toBe('available');
    expect((await attachmentRepository(t.ctx.db, t.ctx.dataKeys).find(a.referralId, a.id))?.scanState).toBe(
      'available',
    );
  });

  it('scans what a client uploads: EICAR is refused for good, a clean PDF is handed out', async () => {
    const scanned = await createQueueApp('postgres', { env: { ATTACHMENT_SCANNER: clamd.address } });
    const background = startBackground(scanned.ctx, { ehrUrl: 'http://127.0.0.1:9/ehr' });
    try {
      const draft = await createDraft(scanned);
      const url = `/api/v1/referrals/${draft.id}/attachments`;
      const upload = async (bytes: Buffer, fileName: string) => {
        const res = await scanned.request(scanned.sender, {
          method: 'POST',
          url,
          query: { ...scanned.sender.institution },
          headers: {
            'content-type': 'application/octet-stream',
            'content-disposition': `attachment; filename="${fileName}"`,
          },
          payload: bytes,
        });
        expect(res.statusCode, res.body).toBe(201);
        return res.json<{ id: string; scanState: string }>();
      };
      const read = (path: string) =>
        scanned.request(scanned.sender, {
          method: 'GET',
          url: `${url}${path}`,
          query: { ...scanned.sender.institution },
        });
      // EICAR is plain text: refhub accepts its type, and only the scan can tell.
      const eicar = await upload(EICAR, 'eicar.txt');
      const letter = await upload(LETTER, 'letter.pdf');
      expect([eicar.scanState, letter.scanState]).toEqual(['pending-scan', 'pending-scan']);
      expect((await read(`/${letter.id}/content`)).statusCode).toBe(409);
      // The upload's outbox row reaches the relay, the relay queues the scans, the worker records them.
      const stateOf = async (id: string) => (await read(`/${id}`)).json<{ scanState: string }>().scanState;
      await eventually('both scans recorded', async () =>
        (await stateOf(eicar.id)) !== 'pending-scan' && (await stateOf(letter.id)) !== 'pending-scan'
          ? true
          : undefined,
      );
      expect(await stateOf(eicar.id)).toBe('rejected');
      expect(await stateOf(letter.id)).toBe('available');
      expect((await read(`/${eicar.id}/content`)).statusCode).toBe(410);
      const content = await read(`/${letter.id}/content`);
      expect(content.statusCode).toBe(200);
      expect(content.rawPayload.equals(LETTER)).toBe(true);
    } finally {
      await background.stop();
      await scanned.close();
    }
  });

  it('runs in the background of a process whose ATTACHMENT_SCANNER is set', async () => {
    const scanned = await createQueueApp('postgres', { env: { ATTACHMENT_SCANNER: clamd.address } });
    // Forms go nowhere here: nothing is submitted.
    const background = startBackground(scanned.ctx, { ehrUrl: 'http://127.0.0.1:9/ehr' });
    try {
      expect(background.workers.map((w) => w.name)).toContain('attachment-scan');
      const a = await addAttachment(scanned, EICAR);
      await scanned.ctx.queues.enqueueScans([{ attachmentId: a.id, referralId: a.referralId }]);
      await eventually('the scan recorded', async () =>
        (await attachmentRepository(scanned.ctx.db, scanned.ctx.dataKeys).find(a.referralId, a.id))
          ?.scanState === 'rejected'
          ? true
          : undefined,
      );
    } finally {
      await background.stop();
      await scanned.close();
    }
  });
});
