// Embedded PGlite serves one process: the DATA_DIR lock file makes a second one fail at once, naming
// the holder, while a lock left behind by a dead process is taken over.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DataDirLockedError, lockDataDir, type LockHolder } from '../../src/db/data-dir-lock.ts';
import { openStore } from '../../src/db/database.ts';

function lockFile(dir: string): string {
  return path.join(dir, 'refhub.lock');
}

function readLock(dir: string): LockHolder {
  return JSON.parse(fs.readFileSync(lockFile(dir), 'utf8')) as LockHolder;
}

function lockError(work: () => unknown): DataDirLockedError {
  try {
    work();
  } catch (error) {
    expect(error).toBeInstanceOf(DataDirLockedError);
    return error as DataDirLockedError;
  }
  throw new Error('expected DataDirLockedError');
}

describe('DATA_DIR lock', () => {
  let dir: string;
  const releases: (() => void)[] = [];
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'refhub-'));
  });
  afterEach(() => {
    for (const release of releases.splice(0)) release();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('writes a lock file naming this process, readable only by its owner', () => {
    releases.push(lockDataDir(dir, 'refhub all'));
    const holder = readLock(dir);
    expect(holder).toMatchObject({ pid: process.pid, hostname: os.hostname(), command: 'refhub all' });
    expect(Date.parse(holder.startedAt)).not.toBeNaN();
    expect(fs.statSync(lockFile(dir)).mode & 0o777).toBe(0o600);
  });

  it('creates a missing DATA_DIR', () => {
    const nested = path.join(dir, 'a', 'b');
    releases.push(lockDataDir(nested, 'refhub migrate'));
    expect(fs.existsSync(lockFile(nested))).toBe(true);
  });

  it('refuses a second lock, naming the holder’s pid and command', () => {
    releases.push(lockDataDir(dir, 'refhub all'));
    const error = lockError(() => lockDataDir(dir, 'refhub keys list'));
    expect(error.message).toContain(`process ${process.pid}`);
    expect(error.message).toContain('refhub all');
    expect(error.message).toContain(dir);
    expect(error.message).toMatch(/DATABASE_URL/);
    expect(error.holder).toMatchObject({ pid: process.pid, command: 'refhub all' });
    // The holder's lock is untouched.
    expect(readLock(dir).command).toBe('refhub all');
  });

  it('refuses a lock held by another live process', () => {
    // PID 1 is always alive (signalling it may be refused with EPERM, which still means alive).
    const holder: LockHolder = {
      pid: 1,
      hostname: os.hostname(),
      command: 'refhub all',
      startedAt: new Date().toISOString(),
    };
    fs.writeFileSync(lockFile(dir), JSON.stringify(holder));
    const error = lockError(() => lockDataDir(dir, 'refhub migrate'));
    expect(error.message).toContain('process 1 ');
    expect(error.holder.pid).toBe(1);
    expect(readLock(dir)).toEqual(holder);
  });

  it('takes over a stale lock left by a dead process', () => {
    const stale: LockHolder = {
      pid: 999_999,
      hostname: os.hostname(),
      command: 'refhub all',
      startedAt: '2026-01-01T00:00:00.000Z',
    };
    fs.writeFileSync(lockFile(dir), JSON.stringify(stale));
    releases.push(lockDataDir(dir, 'refhub migrate'));
    expect(readLock(dir)).toMatchObject({ pid: process.pid, command: 'refhub migrate' });
  });

  it('takes over a lock naming this very process, left by a dead one that had the same PID', () => {
    // A container restarted after a kill runs refhub as the same PID on the same host.
    const before: LockHolder = {
      pid: process.pid,
      hostname: os.hostname(),
      command: 'refhub all',
      startedAt: '2026-01-01T00:00:00.000Z',
    };
    fs.writeFileSync(lockFile(dir), JSON.stringify(before));
    releases.push(lockDataDir(dir, 'refhub all'));
    expect(readLock(dir)).toMatchObject({
      pid: process.pid,
      startedAt: expect.not.stringMatching(/^2026-01-01/) as unknown,
    });
  });

  it('takes over an unreadable lock file', () => {
    fs.writeFileSync(lockFile(dir), '{ not json');
    releases.push(lockDataDir(dir, 'refhub all'));
    expect(readLock(dir).pid).toBe(process.pid);
  });

  it('does not take over a lock held on another host, which it cannot check', () => {
    const remote: LockHolder = {
      pid: 999_999,
      hostname: `${os.hostname()}-elsewhere`,
      command: 'refhub all',
      startedAt: new Date().toISOString(),
    };
    fs.writeFileSync(lockFile(dir), JSON.stringify(remote));
    const error = lockError(() => lockDataDir(dir, 'refhub all'));
    expect(error.message).toContain('process 999999');
    expect(error.message).toContain(remote.hostname);
  });

  it('removes the file on release, once, and lets the next process in', () => {
    const release = lockDataDir(dir, 'refhub all');
    release();
    expect(fs.existsSync(lockFile(dir))).toBe(false);
    releases.push(lockDataDir(dir, 'refhub keys list'));
    // Releasing the first lock again is a no-op: it does not remove the new holder's file.
    release();
    expect(readLock(dir).command).toBe('refhub keys list');
  });

  it('never removes a lock file that another process has taken', () => {
    const release = lockDataDir(dir, 'refhub all');
    fs.writeFileSync(lockFile(dir), JSON.stringify({ ...readLock(dir), pid: 1 }));
    release();
    expect(readLock(dir).pid).toBe(1);
  });

  it('is held by an open PGlite store and released when it closes', async () => {
    const store = await openStore({ engine: 'pglite', dataDir: dir, command: 'refhub all' });
    try {
      expect(readLock(dir).pid).toBe(process.pid);
      const second = (async () => openStore({ engine: 'pglite', dataDir: dir, command: 'refhub migrate' }))();
      await expect(second).rejects.toThrow(DataDirLockedError);
    } finally {
      await store.close();
    }
    expect(fs.existsSync(lockFile(dir))).toBe(false);
    const again = await openStore({ engine: 'pglite', dataDir: dir, command: 'refhub migrate' });
    await again.close();
  });
});
