// `refhub retention run|verify`: retention of the growing tables for the operator (docs/operations.md,
// "Retention"). `run` does now what the scheduled job does (services/retention/retention.service.ts):
// the month partitions made ahead, every month past its setting archived, verified and dropped, with
// a progress line on a terminal; `verify` checks an archive's directory against its manifest (each
// file's SHA-256 and rows; an archive of the audit trail also as a trail), with no database, and exits
// 1 naming the file at the first mismatch. `referrals` archives the referrals that ended long ago
// ("Archiving referrals"): each final referral untouched for REFERRAL_ARCHIVE_AFTER_MONTHS is written to
// a new archive in RETENTION_ARCHIVE_DIR, and once the archive is verified its clinical content is
// purged; it prints counts and the archive's name, never a value. What an archive holds is
// services/retention/archive.ts's: this file parses, runs and prints.
import path from 'node:path';
import { verifyArchive } from '../services/retention/archive.ts';
import type { ReferralsArchiveProgress } from '../services/retention/referrals-archive.ts';
import type { Retention, RetentionRun } from '../services/retention/retention.service.ts';
import { toStdout, type Output } from './output.ts';
import { plural } from './plural.ts';
import { startProgress, withProgress, type Progress, type ProgressStream } from './progress.ts';

export interface RetentionCommandDeps {
  readonly retention: Pick<Retention, 'run'>;
}

/** The lines `refhub retention run` prints for a run. */
export function runLines(run: RetentionRun): string {
  const lines: string[] = [];
  if (run.partitionsMade > 0) lines.push(`Made ${plural(run.partitionsMade, 'month partition')}.`);
  if (run.referralsArchive !== undefined)
    lines.push(`Archived ${plural(run.referralsArchived, 'referral')} into ${run.referralsArchive}.`);
  for (const a of run.archived)
    lines.push(
      `Archived and dropped ${a.table} ${a.month}: ${plural(a.rows, 'row')} in ${a.archive} (manifest SHA-256 ${a.manifestSha256}).`,
    );
  for (const w of run.waiting) lines.push(`Kept ${w.table} ${w.month}, past its retention: ${w.reason}.`);
  if (run.archived.length === 0 && run.waiting.length === 0 && run.referralsArchive === undefined)
    lines.push('Nothing is past its retention.');
  return `${lines.join('\n')}\n`;
}

export async function runRetention(
  deps: RetentionCommandDeps,
  output: Output = toStdout,
  progress: ProgressStream = process.stderr,
): Promise<void> {
  const requestId = `retention.cli.${new Date().toISOString()}`;
  const run = await withProgress(
    'Archiving months past their retention',
    (report) => deps.retention.run(requestId, report),
    progress,
  );
  output(runLines(run));
}

export async function verifyRetentionArchive(archive: string, output: Output = toStdout): Promise<void> {
  const verified = await verifyArchive(path.resolve(archive));
  const { manifest } = verified;
  const trail =
    verified.audit === undefined
      ? ''
      : `; the audit trail holds: ${plural(verified.audit.chains, 'chain')}, ${plural(verified.audit.rows, 'row')}, ${plural(verified.audit.checkpoints, 'checkpoint')}`;
  output(
    `Archive intact: ${manifest.kind}` +
      (manifest.range === null ? '' : ` ${manifest.range.from} to ${manifest.range.to}`) +
      `, ${plural(manifest.files.length, 'file')}, ${plural(verified.rows, 'row')}${trail}.\n`,
  );
}

export interface ArchiveReferralsDeps {
  readonly retention: Pick<Retention, 'archiveReferrals'>;
  readonly config: { readonly retentionArchiveDir: string };
}

export async function archiveReferrals(
  deps: ArchiveReferralsDeps,
  output: Output = toStdout,
  stream: ProgressStream = process.stderr,
): Promise<void> {
  let progress: Progress | undefined;
  let phase: ReferralsArchiveProgress['phase'] | undefined;
  const report = (p: ReferralsArchiveProgress) => {
    if (p.phase !== phase) {
      progress?.end();
      phase = p.phase;
      progress = startProgress(
        p.phase === 'writing' ? 'Writing referrals to the archive' : 'Purging archived referrals',
        stream,
      );
    }
    progress?.report(p.done, p.total);
  };
  try {
    const result = await deps.retention.archiveReferrals(
      `retention.referrals.cli.${new Date().toISOString()}`,
      report,
    );
    progress?.end();
    output(
      result.archive === undefined
        ? 'No referral is due for archiving.\n'
        : `Archived ${plural(result.archived, 'referral')} into ${result.archive} in ${deps.config.retentionArchiveDir}.\n`,
    );
  } finally {
    progress?.end();
  }
}
