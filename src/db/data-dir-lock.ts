// PGlite keeps its files in DATA_DIR and cannot be shared between processes. The first process
// takes an exclusive lock file there; a second one fails at once, naming the process that holds it.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export interface LockHolder {
  readonly pid: number;
  readonly hostname: string;
  readonly command: string;
  readonly startedAt: string;
}

export class DataDirLockedError extends Error {
  override readonly name = 'DataDirLockedError';
  readonly holder: LockHolder;
  constructor(dataDir: string, holder: LockHolder) {
    super(
      `DATA_DIR ${dataDir} is in use by process ${holder.pid} on ${holder.hostname} ` +
        `("${holder.command}", started ${holder.startedAt}). Embedded PGlite serves one process: ` +
        `stop that process first, or set DATABASE_URL to use PostgreSQL.`,
    );
    this.holder = holder;
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function readHolder(file: string): LockHolder | undefined {
  try {
    return JSON.parse(fs.readFileSync(file, 'utf8')) as LockHolder;
  } catch {
    return undefined;
  }
}

function isLeftByEarlierLife(current: LockHolder, self: LockHolder): boolean {
  const startedAt = Date.parse(current.startedAt);
  const processStart = Date.now() - process.uptime() * 1000;
  return current.pid === self.pid && current.hostname === self.hostname && startedAt < processStart - 1000;
}

/** Takes the lock or throws DataDirLockedError. Returns the function that releases it. */
export function lockDataDir(dataDir: string, command: string): () => void {
  fs.mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const file = path.join(dataDir, 'refhub.lock');
  const holder: LockHolder = {
    pid: process.pid,
    hostname: os.hostname(),
    command,
    startedAt: new Date().toISOString(),
  };
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      fs.writeFileSync(file, JSON.stringify(holder), { flag: 'wx', mode: 0o600 });
      let released = false;
      const release = () => {
        if (released) return;
        released = true;
        const current = readHolder(file);
        if (current?.pid === process.pid) fs.rmSync(file, { force: true });
        process.off('exit', release);
      };
      process.on('exit', release);
      return release;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      const current = readHolder(file);
      // A lock left by a process that has died (same host) is stale and may be taken over. So is one
      // naming this PID from before this process started: a restarted container reuses the PID of
      // the one that died.
      if (
        current &&
        !isLeftByEarlierLife(current, holder) &&
        (current.hostname !== holder.hostname || isAlive(current.pid))
      ) {
        throw new DataDirLockedError(dataDir, current);
      }
      fs.rmSync(file, { force: true });
    }
  }
  throw new DataDirLockedError(dataDir, readHolder(file) ?? holder);
}
