// The archive format of refhub's retention (`refhub-archive/1`), its writer and its verifier: one
// directory per archive, `<RETENTION_ARCHIVE_DIR>/<table>-<YYYY-MM>/` for a month of a partitioned
// table and `referrals-<ISO time, ':' as '-'>/` for referrals, holding NDJSON files (one JSON object
// per line, UTF-8, each line ending in '\n') and `manifest.json`, which names each file with its
// number of rows and its SHA-256. The manifest is written last, atomically (a temporary file, fsync,
// rename, fsync of the directory), so a directory with a manifest is a whole archive and one without
// is a run that stopped half-way. Every archive's files are checked the same way by the manifest; an
// archive of the audit trail is also checked as a trail (its rows chain, each chain to the heads the
// checkpoints in it recorded, and its last checkpoint is the one the manifest names), by the rules of
// `refhub audit verify --file` (services/audit/export.ts). docs/operations.md ("Retention") says how
// to restore one.
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdir, open, readFile, rename, rm, readdir, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { checkpointHashOf } from '../audit/audit-chain-check.ts';
import { checkExport, keysToCheck, parseExport } from '../audit/export.ts';

/** The format an archive's manifest names; a reader refuses any other. */
export const ARCHIVE_FORMAT = 'refhub-archive/1';

/** The manifest's file name in an archive's directory. */
export const MANIFEST_FILE = 'manifest.json';

/** The kind of an archive of the audit trail, which is checked as a trail too. */
export const AUDIT_ARCHIVE_KIND = 'audit_events';

/** One NDJSON file of an archive, as the manifest names it. */
export interface ArchiveFile {
  readonly name: string;
  /** Lines in the file: one JSON object each. */
  readonly rows: number;
  /** The SHA-256 of the file's bytes, in lower-case hex. */
  readonly sha256: string;
}

/**
 * The checkpoint of the audit chain that covers an archive of the audit trail: the last of the run of
 * checkpoints the archive holds, after which every chain of its days had its last row recorded.
 */
export interface AuditCheckpointRef {
  readonly seq: string;
  /** ISO 8601 UTC. */
  readonly createdAt: string;
  /** Its hash (services/audit/audit-chain-check.ts `checkpointHashOf`), which the next checkpoint signs. */
  readonly hash: string;
  readonly signature: string | null;
  readonly keyId: string | null;
  /** The days (YYYY-MM-DD, UTC) whose chains the archive holds. */
  readonly days: { readonly from: string; readonly to: string };
}

/** `manifest.json`. */
export interface ArchiveManifest {
  readonly format: typeof ARCHIVE_FORMAT;
  /** The table archived (`audit_events`, `referral_events`, `webhook_attempts`, `ehr_submissions`), or `referrals`. */
  readonly kind: string;
  /** ISO 8601 UTC. */
  readonly createdAt: string;
  /** The times the rows fall in, from (included) to (excluded), ISO 8601 UTC; null when not a range. */
  readonly range: { readonly from: string; readonly to: string } | null;
  readonly files: readonly ArchiveFile[];
  readonly auditCheckpoint: AuditCheckpointRef | null;
}

/** An archive that cannot be written as asked, or does not hold: the message names the file. */
export class ArchiveError extends Error {
  override readonly name = 'ArchiveError';
}

/** The directory name of a month's archive of `table`: `audit_events-2020-01`. */
export function monthArchiveName(table: string, month: string): string {
  return `${table}-${month}`;
}

/** The directory name of a referrals archive made at `at`: `referrals-2026-11-29T22-50-00.000Z`. */
export function referralsArchiveName(at: Date): string {
  return `referrals-${at.toISOString().replaceAll(':', '-')}`;
}

/** A file name the manifest may name: a plain name in the archive's own directory. */
function isPlainName(name: string): boolean {
  return name !== '' && name !== '.' && name !== '..' && path.basename(name) === name && !name.includes('\\');
}

/** Bytes gathered before a write to the file. */
const CHUNK_BYTES = 64 * 1024;

/** An NDJSON file being written: rows are hashed and counted as they go. */
export interface NdjsonFileWriter {
  /** Appends one row: an object (serialised with JSON.stringify) or a line of JSON already made. */
  write(row: unknown): Promise<void>;
  /** Flushes, fsyncs and closes the file; what the manifest says of it. */
  close(): Promise<ArchiveFile>;
}

async function ndjsonFile(dir: string, name: string): Promise<NdjsonFileWriter> {
  if (!isPlainName(name) || name === MANIFEST_FILE)
    throw new ArchiveError(`${name}: not a file name an archive may hold`);
  const handle: FileHandle = await open(path.join(dir, name), 'w');
  const hash = createHash('sha256');
  let rows = 0;
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  const flush = async () => {
    if (pendingBytes === 0) return;
    const chunk = Buffer.concat(pending, pendingBytes);
    pending = [];
    pendingBytes = 0;
    await handle.write(chunk);
  };
  return {
    async write(row) {
      const line = typeof row === 'string' ? row : JSON.stringify(row);
      if (line.includes('\n')) throw new ArchiveError(`${name}: a row must be one line of JSON`);
      const bytes = Buffer.from(`${line}\n`, 'utf8');
      hash.update(bytes);
      pending.push(bytes);
      pendingBytes += bytes.length;
      rows++;
      if (pendingBytes >= CHUNK_BYTES) await flush();
    },
    async close() {
      try {
        await flush();
        await handle.sync();
      } finally {
        await handle.close();
      }
      return { name, rows, sha256: hash.digest('hex') };
    },
  };
}

/** fsyncs a directory, so that the names made or renamed in it survive a crash. */
async function syncDirectory(dir: string): Promise<void> {
  const handle = await open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** An archive being written: its files, then its manifest. */
export interface ArchiveWriter {
  /** The archive's directory. */
  readonly dir: string;
  /** Starts the NDJSON file `name` (written in full before the next is started, or beside it). */
  file(name: string): Promise<NdjsonFileWriter>;
  /**
   * Writes the manifest of the files closed so far, atomically; the archive is whole from then on.
   * Returns it with the SHA-256 of its bytes.
   */
  finish(
    manifest: Omit<ArchiveManifest, 'format' | 'files' | 'createdAt'> & { readonly createdAt: Date },
  ): Promise<{ manifest: ArchiveManifest; manifestSha256: string }>;
}

/**
 * Starts the archive `name` in `root` (made if missing). A directory of that name with no manifest is
 * what a stopped run left: its files are removed first. One with a manifest is a whole archive and is
 * never written over: that is refused.
 */
export async function createArchive(root: string, name: string): Promise<ArchiveWriter> {
  if (!isPlainName(name)) throw new ArchiveError(`${name}: not an archive's name`);
  const dir = path.join(root, name);
  if (await hasManifest(dir))
    throw new ArchiveError(`${path.join(dir, MANIFEST_FILE)}: the archive exists already`);
  await rm(dir, { recursive: true, force: true });
  await mkdir(dir, { recursive: true });
  const files: ArchiveFile[] = [];
  return {
    dir,
    async file(fileName) {
      const writer = await ndjsonFile(dir, fileName);
      return {
        write: (row) => writer.write(row),
        async close() {
          const file = await writer.close();
          files.push(file);
          return file;
        },
      };
    },
    async finish({ kind, range, auditCheckpoint, createdAt }) {
      const manifest: ArchiveManifest = {
        format: ARCHIVE_FORMAT,
        kind,
        createdAt: createdAt.toISOString(),
        range,
        files: [...files],
        auditCheckpoint,
      };
      const bytes = Buffer.from(`${JSON.stringify(manifest, null, 2)}\n`, 'utf8');
      const temporary = path.join(dir, `${MANIFEST_FILE}.tmp`);
      const handle = await open(temporary, 'w');
      try {
        await handle.write(bytes);
        await handle.sync();
      } finally {
        await handle.close();
      }
      await rename(temporary, path.join(dir, MANIFEST_FILE));
      await syncDirectory(dir);
      await syncDirectory(root);
      return { manifest, manifestSha256: createHash('sha256').update(bytes).digest('hex') };
    },
  };
}

/** Whether `dir` holds a manifest: a whole archive. */
export async function hasManifest(dir: string): Promise<boolean> {
  try {
    const names = await readdir(dir);
    return names.includes(MANIFEST_FILE);
  } catch {
    return false;
  }
}

const HEX64 = /^[0-9a-f]{64}$/;
const ISO_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isTime(value: unknown): value is string {
  return typeof value === 'string' && ISO_TIME.test(value) && !Number.isNaN(Date.parse(value));
}

/** Checks a parsed manifest's shape; the first thing wrong, or undefined. */
function manifestProblem(o: unknown): string | undefined {
  if (!isObject(o)) return 'it is not a JSON object';
  if (o.format !== ARCHIVE_FORMAT) return `its format is not ${ARCHIVE_FORMAT}`;
  if (typeof o.kind !== 'string' || o.kind === '') return 'it names no kind';
  if (!isTime(o.createdAt)) return 'its createdAt is not an ISO 8601 time in UTC';
  if (o.range !== null && !(isObject(o.range) && isTime(o.range.from) && isTime(o.range.to)))
    return 'its range is neither null nor {"from", "to"} in ISO 8601 UTC';
  if (!Array.isArray(o.files)) return 'its files are not a list';
  const names = new Set<string>();
  for (const file of o.files as unknown[]) {
    if (
      !isObject(file) ||
      typeof file.name !== 'string' ||
      !isPlainName(file.name) ||
      file.name === MANIFEST_FILE ||
      !Number.isSafeInteger(file.rows) ||
      (file.rows as number) < 0 ||
      typeof file.sha256 !== 'string' ||
      !HEX64.test(file.sha256)
    )
      return 'each of its files needs a plain name, rows (a count) and sha256 (64 hex digits)';
    if (names.has(file.name)) return `it names ${file.name} twice`;
    names.add(file.name);
  }
  const c = o.auditCheckpoint;
  if (
    c !== null &&
    !(
      isObject(c) &&
      typeof c.seq === 'string' &&
      isTime(c.createdAt) &&
      typeof c.hash === 'string' &&
      HEX64.test(c.hash) &&
      (c.signature === null || typeof c.signature === 'string') &&
      (c.keyId === null || typeof c.keyId === 'string') &&
      isObject(c.days) &&
      typeof c.days.from === 'string' &&
      typeof c.days.to === 'string'
    )
  )
    return 'its auditCheckpoint is neither null nor a checkpoint (seq, createdAt, hash, signature, keyId, days)';
  return undefined;
}

/** Reads and checks the manifest of the archive in `dir`. */
export async function readManifest(dir: string): Promise<ArchiveManifest> {
  const file = path.join(dir, MANIFEST_FILE);
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    throw new ArchiveError(`${file}: cannot be read (${(error as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text) as unknown;
  } catch {
    throw new ArchiveError(`${file}: not JSON`);
  }
  const problem = manifestProblem(parsed);
  if (problem !== undefined)
    throw new ArchiveError(`${file}: not a manifest of ${ARCHIVE_FORMAT}: ${problem}`);
  return parsed as ArchiveManifest;
}

/** A file's SHA-256 and its lines, read as a stream; whether its last byte ends a line. */
async function digestOf(file: string): Promise<{ sha256: string; rows: number; endsLine: boolean }> {
  const hash = createHash('sha256');
  let rows = 0;
  let last = 0x0a;
  for await (const chunk of createReadStream(file)) {
    const bytes = chunk as Buffer;
    hash.update(bytes);
    for (const byte of bytes) if (byte === 0x0a) rows++;
    if (bytes.length > 0) last = bytes[bytes.length - 1] ?? last;
  }
  return { sha256: hash.digest('hex'), rows, endsLine: last === 0x0a };
}

/** What a verification found: the archive's manifest and its rows, file by file. */
export interface ArchiveVerification {
  readonly dir: string;
  readonly manifest: ArchiveManifest;
  /** Rows in all its files. */
  readonly rows: number;
  /** For an archive of the audit trail: the chains and rows checked as a trail. */
  readonly audit?: { readonly chains: number; readonly rows: number; readonly checkpoints: number };
}

/**
 * Checks the archive in `dir` against its manifest: every file it names is there, gives its SHA-256
 * and holds its number of rows, each a line; an archive of the audit trail is also checked as a trail
 * (see the top of this file). Throws an ArchiveError naming the file at the first mismatch.
 */
export async function verifyArchive(dir: string): Promise<ArchiveVerification> {
  const manifest = await readManifest(dir);
  let rows = 0;
  for (const entry of manifest.files) {
    const file = path.join(dir, entry.name);
    let digest: Awaited<ReturnType<typeof digestOf>>;
    try {
      digest = await digestOf(file);
    } catch (error) {
      throw new ArchiveError(
        `${file}: named by the manifest, and cannot be read (${(error as NodeJS.ErrnoException).code ?? 'error'})`,
      );
    }
    if (digest.sha256 !== entry.sha256)
      throw new ArchiveError(
        `${file}: its SHA-256 is ${digest.sha256}, and the manifest says ${entry.sha256}: the file was changed`,
      );
    if (!digest.endsLine) throw new ArchiveError(`${file}: its last line does not end with a newline`);
    if (digest.rows !== entry.rows)
      throw new ArchiveError(`${file}: it holds ${digest.rows} rows, and the manifest says ${entry.rows}`);
    rows += digest.rows;
  }
  if (manifest.kind !== AUDIT_ARCHIVE_KIND) return { dir, manifest, rows };
  return { dir, manifest, rows, audit: await verifyAuditArchive(dir, manifest) };
}

/** The files of an audit archive: its rows, then its checkpoints and the public keys known. */
export const AUDIT_ROWS_FILE = 'audit_events.ndjson';
export const AUDIT_CHECKPOINTS_FILE = 'checkpoints.ndjson';

/**
 * An archive of the audit trail as a trail: its rows and checkpoints read as an export of its days,
 * checked by the export's rules (every chain whole from its first row, against every head its
 * checkpoints recorded; the checkpoints linked, and signed by the keys it holds), and its last
 * checkpoint the one the manifest names.
 */
async function verifyAuditArchive(
  dir: string,
  manifest: ArchiveManifest,
): Promise<NonNullable<ArchiveVerification['audit']>> {
  const checkpoint = manifest.auditCheckpoint;
  const names = manifest.files.map((f) => f.name);
  for (const name of [AUDIT_ROWS_FILE, AUDIT_CHECKPOINTS_FILE])
    if (!names.includes(name))
      throw new ArchiveError(`${path.join(dir, MANIFEST_FILE)}: an archive of the audit trail names ${name}`);
  const rowsFile = path.join(dir, AUDIT_ROWS_FILE);
  const checkpointsFile = path.join(dir, AUDIT_CHECKPOINTS_FILE);
  if (checkpoint === null) {
    // A month with no row has no checkpoint to name.
    if (manifest.files.some((f) => f.name === AUDIT_ROWS_FILE && f.rows > 0))
      throw new ArchiveError(
        `${path.join(dir, MANIFEST_FILE)}: it names no checkpoint, and ${AUDIT_ROWS_FILE} holds rows`,
      );
    return { chains: 0, rows: 0, checkpoints: 0 };
  }
  const days = JSON.stringify({ type: 'export', from: checkpoint.days.from, to: checkpoint.days.to });
  let parsed: ReturnType<typeof parseExport>;
  try {
    parsed = parseExport(
      `${days}\n${await readFile(rowsFile, 'utf8')}${await readFile(checkpointsFile, 'utf8')}`,
      `${dir} (${AUDIT_ROWS_FILE}, ${AUDIT_CHECKPOINTS_FILE})`,
    );
  } catch (error) {
    throw new ArchiveError((error as Error).message);
  }
  const last = parsed.checkpoints.at(-1);
  if (last === undefined || checkpointHashOf(last) !== checkpoint.hash)
    throw new ArchiveError(
      `${checkpointsFile}: its last checkpoint is not the one the manifest names (${checkpoint.seq} of ${checkpoint.createdAt})`,
    );
  let checked: Awaited<ReturnType<typeof checkExport>>;
  try {
    checked = await checkExport(parsed, keysToCheck(parsed, undefined));
  } catch (error) {
    throw new ArchiveError(`${checkpointsFile}: ${(error as Error).message}`);
  }
  if (checked.broken !== undefined) {
    const b = checked.broken;
    const at = b.index === undefined ? '' : `, row ${b.index}${b.rowId === undefined ? '' : ` (${b.rowId})`}`;
    throw new ArchiveError(`${rowsFile}: the audit trail is broken: chain ${b.chain}${at}: ${b.problem}`);
  }
  return { chains: checked.chains, rows: checked.rows, checkpoints: checked.checkpoints };
}
