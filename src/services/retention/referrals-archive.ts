// Archiving referrals (docs/operations.md, "Archiving referrals"): a referral in a final status
// untouched for REFERRAL_ARCHIVE_AFTER_MONTHS is written, whole, to an archive in
// RETENTION_ARCHIVE_DIR; once the archive is written, synced and read back against its manifest, the
// referral's clinical content is purged from the live tables and it becomes `archived`, with a
// `referral.archived` step on its timeline. Its identifiers, hashes, status history (without the
// sentences, which may quote people) and the figures read by wait times and the worklists stay.
//
// The order is the guarantee: nothing is purged before the archive that holds it is verified on disk,
// and each referral is purged in its own transaction only if it is still as its record was read (no
// step since, its delivery still ended), so a failure anywhere leaves the referral as it was. A
// referral changed in between stays live; its record in this archive is then stale, and a later run
// archives it again. Which archive holds a referral's record is its row's `archive_name`.
//
// The archive is services/retention/archive.ts's `refhub-archive/1`, of kind `referrals`. What it
// holds is sealed (db/referrals-archive.repository.ts): every value under the data key it was sealed
// with, and the wrapped data keys beside it, so an operator with the key ring opens it
// (`openArchivedReferrals` below) without this database (docs/security.md). Nothing here logs or
// prints a value: IDs, names and counts only.
import { randomUUID } from 'node:crypto';
import { readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import type { Config } from '../../config.ts';
import { auditEventOf, systemActor } from '../../domain/audit.ts';
import type { KeyEncryptionKeys } from '../../domain/key-ring.ts';
import { decide, REFHUB_SYSTEM } from '../../domain/lifecycle.ts';
import { isStatus } from '../../domain/statuses.ts';
import { timeline } from '../../domain/timeline.ts';
import {
  openArchivedRecords,
  type ArchivedContentLine,
  type OpenedArchivedReferral,
} from '../../db/referrals-archive-open.ts';
import type {
  ArchivedDataKey,
  ArchivedReferral,
  ArchivedState,
} from '../../db/referrals-archive.repository.ts';
import type { Stores } from '../../db/stores.ts';
import { timelineEventsOf } from '../referrals/mutation.ts';
import { createArchive, referralsArchiveName, verifyArchive } from './archive.ts';

export interface ReferralsArchiveDeps {
  readonly stores: Pick<Stores, 'referralsArchive' | 'referrals' | 'transaction'>;
  readonly config: Pick<Config, 'retentionArchiveDir' | 'referralArchiveAfterMonths'>;
}

/** Where a run is: `done` of `total` referrals written to the archive, then purged. */
export interface ReferralsArchiveProgress {
  readonly phase: 'writing' | 'purging';
  readonly done: number;
  readonly total: number;
}

export interface ArchiveStaleReferralsOptions {
  /** The time of the run: referrals untouched since REFERRAL_ARCHIVE_AFTER_MONTHS before it are due. */
  readonly now: Date;
  readonly onProgress?: (progress: ReferralsArchiveProgress) => void;
  /** The audit rows' request ID; one of its own by default. */
  readonly requestId?: string;
}

/** The archive's files, as its manifest lists them. */
export const REFERRALS_ARCHIVE_FILES = {
  referrals: 'referrals.ndjson',
  contents: 'attachment-contents.ndjson',
  dataKeys: 'data-keys.ndjson',
} as const;

/** Referrals looked up at a time when the due ones are gathered. */
const DUE_BATCH = 500;

/** `now` less `months` calendar months, in UTC (the 31st less a month is the last day of the month before). */
export function monthsBefore(now: Date, months: number): Date {
  const at = new Date(now.getTime());
  const day = at.getUTCDate();
  at.setUTCDate(1);
  at.setUTCMonth(at.getUTCMonth() - months);
  const last = new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth() + 1, 0)).getUTCDate();
  at.setUTCDate(Math.min(day, last));
  return at;
}

/**
 * Archives every referral due at `now`: writes them to a new archive, verifies it, then purges and
 * marks each. Returns how many were archived and the archive's directory name (undefined when none
 * was due, and no archive was made). A failure before the purge throws and changes no referral.
 */
export async function archiveStaleReferrals(
  deps: ReferralsArchiveDeps,
  options: ArchiveStaleReferralsOptions,
): Promise<{ archived: number; archive: string | undefined }> {
  const { now, onProgress } = options;
  const store = deps.stores.referralsArchive;
  const cutoff = monthsBefore(now, deps.config.referralArchiveAfterMonths);
  const due: string[] = [];
  for (let after: string | undefined; ;) {
    const batch = await store.due(cutoff, after, DUE_BATCH);
    due.push(...batch);
    after = batch.at(-1);
    if (batch.length < DUE_BATCH) break;
  }
  if (due.length === 0) return { archived: 0, archive: undefined };

  const name = referralsArchiveName(now);
  const archive = await createArchive(deps.config.retentionArchiveDir, name);
  const written = new Map<string, ArchivedState>();
  try {
    const referrals = await archive.file(REFERRALS_ARCHIVE_FILES.referrals);
    const contents = await archive.file(REFERRALS_ARCHIVE_FILES.contents);
    const keys = await archive.file(REFERRALS_ARCHIVE_FILES.dataKeys);
    for (const id of due) {
      const found = await store.record(id);
      if (found !== undefined) {
        await referrals.write(found.record);
        for await (const content of store.contents(id)) {
          await contents.write({
            referralId: content.referralId,
            attachmentId: content.attachmentId,
            storedAs: content.storedAs,
            content: content.content.toString('base64'),
          });
        }
        written.set(id, found.state);
      }
      onProgress?.({ phase: 'writing', done: written.size, total: due.length });
    }
    // Read last: every key a value above was sealed under is there by now.
    for (const key of await store.dataKeys()) await keys.write(key);
    await referrals.close();
    await contents.close();
    await keys.close();
    await archive.finish({ kind: 'referrals', range: null, auditCheckpoint: null, createdAt: now });
    await verifyArchive(archive.dir);
  } catch (error) {
    await rm(archive.dir, { recursive: true, force: true });
    throw error;
  }

  const requestId = options.requestId ?? randomUUID();
  let archived = 0;
  let done = 0;
  for (const [id, state] of written) {
    const purged = await deps.stores.transaction(async (tx) => {
      const result = await tx.referralsArchive.purge(id, state, { name, at: now });
      if (result === undefined || !isStatus(result.from)) return false;
      decide('archive', 'system', { status: result.from, offeringCancellable: true });
      await tx.referrals.recordChange({
        timeline: timelineEventsOf(id, REFHUB_SYSTEM, [timeline.archived(name)], now),
        outbox: [],
        audit: auditEventOf(systemActor(requestId), 'referral.archived', [id], now),
      });
      return true;
    });
    if (purged) archived += 1;
    done += 1;
    onProgress?.({ phase: 'purging', done, total: written.size });
  }
  return { archived, archive: name };
}

export type { OpenedArchivedReferral };

/**
 * Reads back the referrals of the archive in `dir` (after verifying it against its manifest), every
 * sealed value opened with the archive's data keys, which `ring` unwraps. For an operator's use: what
 * it returns is patient data, never to be logged.
 */
export async function openArchivedReferrals(
  dir: string,
  ring: KeyEncryptionKeys,
): Promise<OpenedArchivedReferral[]> {
  await verifyArchive(dir);
  const lines = async <T>(name: string): Promise<T[]> =>
    (await readFile(path.join(dir, name), 'utf8'))
      .split('\n')
      .filter((line) => line !== '')
      .map((line) => JSON.parse(line) as T);
  return openArchivedRecords(
    {
      referrals: await lines<ArchivedReferral>(REFERRALS_ARCHIVE_FILES.referrals),
      contents: await lines<ArchivedContentLine>(REFERRALS_ARCHIVE_FILES.contents),
      dataKeys: await lines<ArchivedDataKey>(REFERRALS_ARCHIVE_FILES.dataKeys),
    },
    ring,
  );
}
