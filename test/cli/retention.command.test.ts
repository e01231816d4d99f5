// What `refhub retention run` prints after a run (referrals archived, months dropped with their
// archive, months kept with why, or that nothing was past its retention), with its progress line on a terminal only; and
// `refhub retention verify`: an intact archive is named with its rows, and a changed byte stops the
// command with one line naming the file (exit 1, cli/failure.ts), never a stack trace.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { operatorMessage } from '../../src/cli/failure.ts';
import { runLines, runRetention, verifyRetentionArchive } from '../../src/cli/retention.command.ts';
import { createArchive } from '../../src/services/retention/archive.ts';
import type { RetentionRun } from '../../src/services/retention/retention.service.ts';

const roots: string[] = [];
afterEach(() => {
  for (const root of roots.splice(0)) fs.rmSync(root, { recursive: true, force: true });
});

const dropped: RetentionRun = {
  partitionsMade: 1,
  referralsArchived: 3,
  referralsArchive: 'referrals-2003-01-01T00-00-00.000Z',
  archived: [
    {
      table: 'webhook_attempts',
      month: '2001-05',
      archive: '/a/webhook_attempts-2001-05',
      rows: 2,
      manifestSha256: 'f'.repeat(64),
    },
  ],
  waiting: [{ table: 'ehr_submissions', month: '2001-06', reason: 'it holds a delivery that has not ended' }],
};

describe('refhub retention run', () => {
  it('names each month dropped with its archive, and each kept with why', () => {
    expect(runLines(dropped)).toBe(
      'Made 1 month partition.\n' +
        'Archived 3 referrals into referrals-2003-01-01T00-00-00.000Z.\n' +
        `Archived and dropped webhook_attempts 2001-05: 2 rows in /a/webhook_attempts-2001-05 (manifest SHA-256 ${'f'.repeat(64)}).\n` +
        'Kept ehr_submissions 2001-06, past its retention: it holds a delivery that has not ended.\n',
    );
    expect(
      runLines({
        partitionsMade: 0,
        referralsArchived: 0,
        referralsArchive: undefined,
        archived: [],
        waiting: [],
      }),
    ).toBe('Nothing is past its retention.\n');
  });

  it('shows its progress on a terminal, clears it, then prints the run', async () => {
    const printed: string[] = [];
    const terminal: string[] = [];
    await runRetention(
      {
        retention: {
          run: (_requestId, progress) => {
            progress?.(0, 1);
            progress?.(1, 1);
            return Promise.resolve(dropped);
          },
        },
      },
      (text) => printed.push(text),
      { isTTY: true, write: (text: string) => terminal.push(text) },
    );
    expect(terminal.join('')).toContain('Archiving months past their retention: 1/1');
    expect(terminal.at(-1)).toBe('\r\x1b[2K');
    expect(printed).toEqual([runLines(dropped)]);
  });
});

describe('refhub retention verify', () => {
  async function archive(): Promise<string> {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'refhub-retention-cli-'));
    roots.push(root);
    const writer = await createArchive(root, 'referral_events-2001-01');
    const file = await writer.file('referral_events.ndjson');
    await file.write({ id: 'e-1' });
    await file.write({ id: 'e-2' });
    await file.close();
    await writer.finish({
      kind: 'referral_events',
      createdAt: new Date('2026-11-29T00:00:00.000Z'),
      range: { from: '2001-01-01T00:00:00.000Z', to: '2001-02-01T00:00:00.000Z' },
      auditCheckpoint: null,
    });
    return writer.dir;
  }

  it('says an intact archive holds, with its kind, range and rows', async () => {
    const dir = await archive();
    const printed: string[] = [];
    await verifyRetentionArchive(dir, (text) => printed.push(text));
    expect(printed).toEqual([
      'Archive intact: referral_events 2001-01-01T00:00:00.000Z to 2001-02-01T00:00:00.000Z, 1 file, 2 rows.\n',
    ]);
  });

  it('stops on a changed byte with one line naming the file', async () => {
    const dir = await archive();
    const file = path.join(dir, 'referral_events.ndjson');
    fs.writeFileSync(file, fs.readFileSync(file, 'utf8').replace('e-2', 'e-3'));
    const error = await verifyRetentionArchive(dir, () => undefined).catch((e: unknown) => e);
    expect(operatorMessage(error)).toMatch(
      new RegExp(
        `^${file.replaceAll(/[.*+?^${}()|[\]\\]/g, '\\$&')}: its SHA-256 is [0-9a-f]{64}, and the manifest says`,
      ),
    );
  });
});
