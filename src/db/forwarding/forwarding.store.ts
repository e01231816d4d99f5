// The forwarding store: the ledger of attempts with each referral's forwarding state, the forms sent
// under each message ID, the EHR circuit's row, and each institution's backlog of forwards waiting.
// Built with the data keys, it seals the timeline sentence an attempt writes and the forms it keeps,
// and opens them when read.
import type { DataKeys } from '../data-keys/data-keys.repository.ts';
import type { Executor } from '../executor.ts';
import { forwardBacklogRepository } from './backlog.ts';
import { ehrCircuitRepository } from './circuit.ts';
import { ehrFormRepository } from './forms.ts';
import { ehrSubmissionRepository, recordAttempt, type AttemptRecord } from './ledger.ts';

export function createForwardingStore(db: Executor, keys: DataKeys) {
  return {
    ledger: {
      ...ehrSubmissionRepository(db),
      /** Records an attempt and all it settles in one statement (ledger.ts `recordAttempt`). */
      recordAttempt: (attempt: AttemptRecord) => recordAttempt(db, keys, attempt),
    },
    forms: ehrFormRepository(db, keys),
    circuit: ehrCircuitRepository(db),
    backlog: forwardBacklogRepository(db),
  };
}

export type ForwardingStore = ReturnType<typeof createForwardingStore>;
