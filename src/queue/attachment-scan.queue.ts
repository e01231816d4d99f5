// The attachment scan queue: one job per attachment waiting for its malware scan. Its name (the
// outbox topic whose rows queue a referral's waiting files), the job's payload and ID, what a scan
// returns, its attempts, the worker's settings, and the functions that add scans and make sure one
// is live.
import type { JobsOptions, Queue } from 'bullmq';
import { OUTBOX_TOPICS } from '../domain/lifecycle.ts';
import { LIVE_STATES, PROMPT_RECOVERY, type WorkerDefaults } from './job-settings.ts';

/** The scan queue's name: the outbox topic that queues the scans of a referral's waiting files. */
export const ATTACHMENT_SCAN_QUEUE = OUTBOX_TOPICS.attachmentScan;

/** Scan one attachment's bytes, read from the database, before anyone may read them. */
export interface ScanPayload {
  readonly attachmentId: string;
  readonly referralId: string;
}

/**
 * How a scan job ended: what the scan found, or why there was nothing to scan (scanned already, by a
 * job run before; or no such attachment: removed since, or another installation's).
 */
export type SettledScan = 'available' | 'rejected' | 'already-scanned' | 'gone';

/** One scan per attachment: an attachment queued twice (by its upload and the reconciler) is scanned once. */
export function attachmentScanJobId(attachmentId: string): string {
  return `scan.${attachmentId}`;
}

/** A scan's attempts while the scanner is unreachable or fails: about an hour of exponential waits. */
export const SCAN_ATTEMPTS = { attempts: 13, backoff: { type: 'exponential', delay: 1_000 } } as const;

// Each scan holds one piece of a file and waits on the scanner, which does the work.
export const SCAN_WORKER_DEFAULTS = { concurrency: 4, ...PROMPT_RECOVERY } as const satisfies WorkerDefaults;

export type ScanQueue = Queue<ScanPayload>;

/** A scan job's options: one job per attachment, under its deterministic ID. */
function scanOptions(payload: ScanPayload): JobsOptions {
  return {
    jobId: attachmentScanJobId(payload.attachmentId),
    ...SCAN_ATTEMPTS,
  };
}

/**
 * Adds a scan job per attachment, in one round trip; an attachment whose scan job is still in the
 * queue (waiting, running, finished or failed) is not added again.
 */
export async function enqueueScans(queue: ScanQueue, payloads: readonly ScanPayload[]): Promise<void> {
  await queue.addBulk(
    payloads.map((payload) => ({ name: 'scan', data: payload, opts: scanOptions(payload) })),
  );
}

/** Whether the attachment's scan job waits, is delayed or runs; it only reads. */
export async function scanIsLive(queue: ScanQueue, attachmentId: string): Promise<boolean> {
  const job = await queue.getJob(attachmentScanJobId(attachmentId));
  return job !== undefined && LIVE_STATES.has(await job.getState());
}

/**
 * Makes sure a scan job is live for the attachment: does nothing when one is waiting, delayed or
 * running; otherwise removes what is left of an earlier one (a job that failed for good, or
 * finished) and adds it under the same ID. Returns whether it added one.
 */
export async function ensureScan(queue: ScanQueue, payload: ScanPayload): Promise<boolean> {
  const leftover = await queue.getJob(attachmentScanJobId(payload.attachmentId));
  if (leftover !== undefined) {
    if (LIVE_STATES.has(await leftover.getState())) return false;
    await leftover.remove();
  }
  await queue.add('scan', payload, scanOptions(payload));
  return true;
}
