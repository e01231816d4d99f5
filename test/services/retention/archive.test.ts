// The archive format (services/retention/archive.ts) round-trips: what the writer makes, the verifier
// passes, for any kind; one changed byte, a missing file, a line more or a manifest naming a file
// outside its directory fails, naming the file. A directory left by a stopped run (no manifest) is
// written again; a whole archive is never written over.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  ARCHIVE_FORMAT,
  ArchiveError,
  createArchive,
  MANIFEST_FILE,
  readManifest,
  referralsArchiveName,
  verifyArchive,
} from '../../../src/services/retention/archive.ts';

const roots: string[] = [];
afterEach(() => {
  for (const root of roots.splice(0)) fs.rmSync(root, { recursive: true, force: true });
});

function tempRoot(): string {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'refhub-archive-'));
  roots.push(root);
  return root;
}

/** An archive of two files, three rows and one, as the other kinds of archive are written. */
async function writeTwoFiles(root: string, name = 'webhook_attempts-2020-01') {
  const archive = await createArchive(root, name);
  const first = await archive.file('rows.ndjson');
  for (const n of [1, 2, 3]) await first.write({ n, text: 'é ✓', at: new Date(Date.UTC(2020, 0, n)) });
  await first.close();
  const second = await archive.file('more.ndjson');
  await second.write('{"already":"a line"}');
  await second.close();
  const done = await archive.finish({
    kind: 'webhook_attempts',
    createdAt: new Date('2026-11-29T00:00:00.000Z'),
    range: { from: '2020-01-01T00:00:00.000Z', to: '2020-02-01T00:00:00.000Z' },
    auditCheckpoint: null,
  });
  return { dir: archive.dir, ...done };
}

describe('the retention archive', () => {
  it('writes NDJSON files and a manifest of their rows and SHA-256s, which the verifier passes', async () => {
    const root = tempRoot();
    const { dir, manifest } = await writeTwoFiles(root);
    expect(fs.readdirSync(dir).sort()).toEqual(['manifest.json', 'more.ndjson', 'rows.ndjson']);
    const lines = fs.readFileSync(path.join(dir, 'rows.ndjson'), 'utf8').split('\n');
    expect(lines.at(-1)).toBe('');
    expect(JSON.parse(lines[0] ?? '')).toEqual({ n: 1, text: 'é ✓', at: '2020-01-01T00:00:00.000Z' });
    expect(manifest.format).toBe(ARCHIVE_FORMAT);
    expect(manifest.files.map((f) => [f.name, f.rows])).toEqual([
      ['rows.ndjson', 3],
      ['more.ndjson', 1],
    ]);
    expect(await readManifest(dir)).toEqual(manifest);
    const verified = await verifyArchive(dir);
    expect(verified.rows).toBe(4);
    expect(verified.audit).toBeUndefined();
  });

  it('verifies an archive of referrals, named by its time, by the same manifest', async () => {
    const root = tempRoot();
    const name = referralsArchiveName(new Date('2026-11-29T22:50:01.123Z'));
    expect(name).toBe('referrals-2026-11-29T22-50-01.123Z');
    const archive = await createArchive(root, name);
    const file = await archive.file('referrals.ndjson');
    await file.write({ id: 'r-1' });
    await file.close();
    await archive.finish({ kind: 'referrals', createdAt: new Date(), range: null, auditCheckpoint: null });
    expect((await verifyArchive(path.join(root, name))).manifest.kind).toBe('referrals');
  });

  it('fails on one changed byte, naming the file', async () => {
    const { dir } = await writeTwoFiles(tempRoot());
    const file = path.join(dir, 'rows.ndjson');
    const bytes = fs.readFileSync(file);
    bytes[5] = (bytes[5] ?? 0) ^ 0x01;
    fs.writeFileSync(file, bytes);
    await expect(verifyArchive(dir)).rejects.toThrow(ArchiveError);
    await expect(verifyArchive(dir)).rejects.toThrow(`${file}: its SHA-256 is`);
  });

  it('fails on a missing file, naming it', async () => {
    const { dir } = await writeTwoFiles(tempRoot());
    fs.rmSync(path.join(dir, 'more.ndjson'));
    await expect(verifyArchive(dir)).rejects.toThrow(
      `${path.join(dir, 'more.ndjson')}: named by the manifest, and cannot be read (ENOENT)`,
    );
  });

  it('fails when the manifest counts other rows than the file holds, or names a file outside the archive', async () => {
    const { dir, manifest } = await writeTwoFiles(tempRoot());
    const manifestFile = path.join(dir, MANIFEST_FILE);
    const miscounted = { ...manifest, files: manifest.files.map((f) => ({ ...f, rows: f.rows + 1 })) };
    fs.writeFileSync(manifestFile, JSON.stringify(miscounted));
    await expect(verifyArchive(dir)).rejects.toThrow(
      `${path.join(dir, 'rows.ndjson')}: it holds 3 rows, and the manifest says 4`,
    );
    const outside = { ...manifest, files: [{ ...manifest.files[0], name: '../rows.ndjson' }] };
    fs.writeFileSync(manifestFile, JSON.stringify(outside));
    await expect(verifyArchive(dir)).rejects.toThrow(`${manifestFile}: not a manifest of ${ARCHIVE_FORMAT}`);
    fs.rmSync(manifestFile);
    await expect(verifyArchive(dir)).rejects.toThrow(`${manifestFile}: cannot be read (ENOENT)`);
  });

  it('writes again over a run that stopped before its manifest, and never over a whole archive', async () => {
    const root = tempRoot();
    const stopped = await createArchive(root, 'ehr_submissions-2020-01');
    const file = await stopped.file('left-over.ndjson');
    await file.write({ n: 1 });
    await file.close();
    const { dir } = await writeTwoFiles(root, 'ehr_submissions-2020-01');
    expect(fs.readdirSync(dir)).not.toContain('left-over.ndjson');
    await expect(createArchive(root, 'ehr_submissions-2020-01')).rejects.toThrow(
      'the archive exists already',
    );
    await verifyArchive(dir);
  });
});
