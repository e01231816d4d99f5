// Scans attachments before anyone may read them. A job names an attachment; `scanAttachment` reads it
// again, and if it still waits for its scan, streams its bytes from the database to the scanner a
// piece at a time and records what the scanner found: `available`, or `rejected` with the signature
// (for operators; the log line names the attachment and the signature, never the file). A scanner
// that cannot be reached or fails throws its code and the job is retried (SCAN_ATTEMPTS), the
// attachment waiting meanwhile; a job run again after a crash finds the scan recorded and does nothing.
import type { Job, Worker } from 'bullmq';
import type { QueueBackend } from '../../queue/backend.ts';
import type { Stores } from '../../db/stores.ts';
import type { Clock } from '../../domain/clock.ts';
import type { Logger } from '../../logger.ts';
import {
  ATTACHMENT_SCAN_QUEUE,
  SCAN_WORKER_DEFAULTS,
  type ScanPayload,
  type SettledScan,
} from '../../queue/attachment-scan.queue.ts';
import { logWorkerErrors } from '../worker-errors.ts';
import type { ClamdClient } from './clamd-client.ts';

export type { ScanPayload } from '../../queue/attachment-scan.queue.ts';

export interface ScanDeps {
  /** The attachments: their store opens the sealed bytes, and the scanner gets them opened. */
  readonly stores: Pick<Stores, 'attachments'>;
  readonly clock: Clock;
  readonly scanner: Pick<ClamdClient, 'scan'>;
  readonly logger: Logger;
}

export async function scanAttachment(deps: ScanDeps, payload: ScanPayload): Promise<SettledScan> {
  const attachments = deps.stores.attachments;
  const attachment = await attachments.find(payload.referralId, payload.attachmentId);
  // Removed since it was queued (a draft's attachment), or not this installation's.
  if (attachment === undefined) return 'gone';
  if (attachment.scanState !== 'pending-scan') return 'already-scanned';
  const verdict = await deps.scanner.scan(attachments.content(attachment.id, attachment.sizeBytes));
  const recorded = await attachments.recordScan(attachment.id, verdict, deps.clock.now());
  if (recorded === undefined) return 'already-scanned';
  if (recorded.scanState === 'rejected') {
    deps.logger.warn(
      { referralId: payload.referralId, attachmentId: attachment.id, signature: recorded.scanSignature },
      'an attachment was rejected by the scanner; it can never be read',
    );
    return 'rejected';
  }
  return 'available';
}

export function startAttachmentScanWorker(
  deps: ScanDeps,
  settings: { readonly backend: QueueBackend; readonly concurrency?: number },
): Worker<ScanPayload, SettledScan> {
  const worker = settings.backend.worker<ScanPayload, SettledScan>(
    ATTACHMENT_SCAN_QUEUE,
    (job: Job<ScanPayload>) =>
      scanAttachment({ ...deps, logger: deps.logger.child({ jobId: job.id }) }, job.data),
    {
      ...SCAN_WORKER_DEFAULTS,
      concurrency: settings.concurrency ?? SCAN_WORKER_DEFAULTS.concurrency,
    },
  );
  logWorkerErrors(worker, settings.backend, deps.logger);
  return worker;
}
