// `refhub retention referrals`: archives the referrals that ended long ago (docs/operations.md,
// "Archiving referrals"): each final referral untouched for REFERRAL_ARCHIVE_AFTER_MONTHS is written to
// a new archive in RETENTION_ARCHIVE_DIR, and once the archive is verified its clinical content is
// purged. On a terminal it shows how far it is. It prints counts and the archive's name, never a value.
import type { ReferralsArchiveProgress } from '../services/retention/referrals-archive.ts';
import { plural } from './plural.ts';
import { startProgress, type Progress } from './progress.ts';

export interface ArchiveReferralsDeps {
  readonly archiveStaleReferrals: (options: {
    readonly now: Date;
    readonly onProgress?: (progress: ReferralsArchiveProgress) => void;
  }) => Promise<{ archived: number; archive: string | undefined }>;
  readonly now: () => Date;
  /** Where the archives are (RETENTION_ARCHIVE_DIR), for the message. */
  readonly archiveDir: string;
}

export async function archiveReferrals(deps: ArchiveReferralsDeps): Promise<void> {
  let progress: Progress | undefined;
  let phase: ReferralsArchiveProgress['phase'] | undefined;
  const report = (p: ReferralsArchiveProgress) => {
    if (p.phase !== phase) {
      progress?.end();
      phase = p.phase;
      progress = startProgress(
        p.phase === 'writing' ? 'Writing referrals to the archive' : 'Purging archived referrals',
      );
    }
    progress?.report(p.done, p.total);
  };
  try {
    const result = await deps.archiveStaleReferrals({ now: deps.now(), onProgress: report });
    progress?.end();
    process.stdout.write(
      result.archive === undefined
        ? 'No referral is due for archiving.\n'
        : `Archived ${plural(result.archived, 'referral')} into ${result.archive} in ${deps.archiveDir}.\n`,
    );
  } finally {
    progress?.end();
  }
}
