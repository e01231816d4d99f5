// What each ops request is, for the audit trail and for the write guard: its audit action, whether a
// granted request is audited, and whether it changes the queues. Routes are matched by their pattern
// (bull-board's own, under /admin/queues), never by the raw URL.
import { uuidsIn } from '../../domain/ids.ts';

import { ADMIN_PATH, BOARD_PATH } from '../../render/pages/admin-overview.page.ts';
import {
  LEDGER_EXPORT_PATH,
  LEDGER_PATH,
  LEDGER_REPLAY_PATH,
} from '../../render/pages/ledger-search.page.ts';
const BOARD_API = `${BOARD_PATH}/api/`;
const BOARD_STATIC = `${BOARD_PATH}/static/`;

export type AdminAction =
  | 'admin.overview.read'
  | 'admin.queues.read'
  | 'admin.queues.job.read'
  | 'admin.queues.retry'
  | 'admin.queues.promote'
  | 'admin.queues.remove'
  | 'admin.queues.change'
  | 'admin.ledger.read'
  | 'admin.ledger.export'
  | 'admin.ledger.dry-run'
  | 'admin.ledger.replay';

export interface AdminAccess {
  readonly action: AdminAction;
  /**
   * Whether a granted request is audited by the plugin. The /admin page audits in its handler (it
   * names the referrals it lists); static files and the board's polling reads are not audited: the
   * board polls every few seconds, and those answers hold counts and job IDs, no referral data.
   */
  readonly auditGranted: boolean;
  /** A request that would change the queues. */
  readonly write: boolean;
  /** For a write: whether OPS_DASHBOARD_WRITE=true lets it through. */
  readonly writeAllowed: boolean;
}

// The changes OPS_DASHBOARD_WRITE allows: retry, promote and remove. Adding or editing jobs would let
// a person type data into a queue, and emptying, obliterating or pausing a queue is not a job-level
// repair; those stay closed in every mode.
const WRITES: Readonly<Record<string, AdminAction>> = {
  'PUT /api/queues/:queueName/retry/:queueStatus': 'admin.queues.retry',
  'PUT /api/queues/:queueName/:jobId/retry': 'admin.queues.retry',
  'PUT /api/queues/:queueName/promote': 'admin.queues.promote',
  'PUT /api/queues/:queueName/:jobId/promote': 'admin.queues.promote',
  'PUT /api/queues/:queueName/clean/:queueStatus': 'admin.queues.remove',
  'PUT /api/queues/:queueName/:jobId/clean': 'admin.queues.remove',
};

// Reads of one job: audited, with the referral the job is for.
const JOB_READS: ReadonlySet<string> = new Set([
  '/api/queues/:queueName/:jobId',
  '/api/queues/:queueName/:jobId/logs',
  '/api/queues/:queueName/:jobId/flow',
]);

const READS = new Set(['GET', 'HEAD']);

/** The access a request asks for; `route` is the matched route pattern, `params` its parameters. */
export function accessOf(
  method: string,
  route: string,
  params: Readonly<Record<string, unknown>>,
): AdminAccess {
  const read = READS.has(method);
  if (route === ADMIN_PATH) {
    return { action: 'admin.overview.read', auditGranted: false, write: !read, writeAllowed: false };
  }
  // The ledger search audits in its handlers (with the referrals it shows); its one change, the
  // replay, is a write that OPS_DASHBOARD_WRITE allows, audited by the replay itself.
  if (route === LEDGER_PATH || route === LEDGER_EXPORT_PATH) {
    const action = route === LEDGER_PATH ? 'admin.ledger.read' : 'admin.ledger.export';
    return { action, auditGranted: false, write: !read, writeAllowed: false };
  }
  if (route === LEDGER_REPLAY_PATH) {
    return read
      ? { action: 'admin.ledger.dry-run', auditGranted: false, write: false, writeAllowed: false }
      : { action: 'admin.ledger.replay', auditGranted: false, write: true, writeAllowed: method === 'POST' };
  }
  if (route.startsWith(BOARD_STATIC)) {
    return { action: 'admin.queues.read', auditGranted: false, write: !read, writeAllowed: false };
  }
  if (route.startsWith(BOARD_API)) {
    const local = route.slice(BOARD_PATH.length);
    if (read) {
      const job = JOB_READS.has(local);
      return {
        action: job ? 'admin.queues.job.read' : 'admin.queues.read',
        auditGranted: job,
        write: false,
        writeAllowed: false,
      };
    }
    const action = WRITES[`${method} ${local}`];
    // Retrying completed jobs would only re-run work that is done (processors re-read state first);
    // the board hides the button, and the server refuses it too.
    const allowed =
      action !== undefined &&
      !(action === 'admin.queues.retry' && 'queueStatus' in params && params.queueStatus !== 'failed');
    return {
      action: action ?? 'admin.queues.change',
      auditGranted: true,
      write: true,
      writeAllowed: allowed,
    };
  }
  // The board's page (and its client-side routes): one audited read per page load.
  return { action: 'admin.queues.read', auditGranted: read, write: !read, writeAllowed: false };
}

/** The referral IDs a request names: job IDs (`<referralId>.v3`, `repeat:reminder.<referralId>:…`) carry them. */
export function referralIdsOf(params: Readonly<Record<string, unknown>>): string[] {
  const jobId = params.jobId;
  if (typeof jobId !== 'string') return [];
  return [...new Set(uuidsIn(jobId))].map((id) => id.toLowerCase());
}
