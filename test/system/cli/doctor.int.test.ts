// `refhub doctor` beside a running `refhub all` on embedded PGlite, both spawned as operators run
// them. The shell the doctor runs in has no EHR_URL, while the server was started with one: the
// doctor must say which checks it could not make and why, never that every check passed, and
// `refhub doctor --server` must show what the server itself finds and runs with, secrets only as set.
import { randomBytes, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { auditSigningKeySetting, testAuditSigningKey } from '../../support/audit-signing-key.ts';
import { testRedisUrl } from '../../support/bridge.ts';
import { describeRun, runRefhub } from '../../support/refhub-cli.ts';
import { startRefhubProcess, type WorkerProcess } from '../../support/worker-process.ts';

const QUEUE_PREFIX = `doctor-cli-${randomUUID()}`;
const EHR_URL = 'http://127.0.0.1:4010/ehr';
const SECRETS = {
  EHR_TOKEN: `ehr-token-${randomUUID()}`,
  METRICS_TOKEN: `metrics-token-${randomUUID()}`,
  SESSION_SECRET: `session-secret-${randomUUID()}`,
  DATA_KEYS: `kek-1:${randomBytes(32).toString('base64')}`,
  AUDIT_SIGNING_KEY: auditSigningKeySetting(await testAuditSigningKey()),
};

// Each spawn of refhub costs seconds on a busy machine.
describe('refhub doctor beside a running refhub on PGlite', { timeout: 180_000 }, () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'refhub-doctor-'));
  let server: WorkerProcess;
  let opsKey: string;
  let senderKey: string;
  /** This shell: the same DATA_DIR and Redis, but no EHR_URL and none of the server's secrets. */
  const shell = { DATA_DIR: dataDir, REDIS_URL: testRedisUrl(), QUEUE_PREFIX, REFHUB_OPS_KEY: '' };

  beforeAll(async () => {
    server = await startRefhubProcess('all', {
      databaseUrl: undefined,
      redisUrl: testRedisUrl(),
      queuePrefix: QUEUE_PREFIX,
      ehrUrl: EHR_URL,
      env: { ...SECRETS, DATA_DIR: dataDir, LOG_LEVEL: 'warn', NODE_ENV: 'development' },
      startTimeoutMs: 90_000,
    });
    const banner = server.output().stdout;
    opsKey = /demo-ops\s+(\S+)/.exec(banner)?.[1] ?? '';
    senderKey = /demo-sender\s+(\S+)/.exec(banner)?.[1] ?? '';
    expect(opsKey, banner).toMatch(/^rfh_test_/);
  }, 120_000);

  afterAll(async () => {
    await server.stop();
    const redis = new Redis(testRedisUrl());
    const keys = await redis.keys(`{${QUEUE_PREFIX}[}:]*`);
    if (keys.length > 0) await redis.del(...keys);
    redis.disconnect();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('lists the checks it could not make, with why, and does not say every check passed', async () => {
    const r = await runRefhub(['doctor'], shell);
    expect(r.code, describeRun(['doctor'], r)).toBe(0);
    const held = `PGlite in DATA_DIR is held by the running refhub, process ${server.pid} ("refhub all")`;
    expect(r.stdout).toMatch(/^Checked with this shell's settings; a running refhub may have others/m);
    expect(r.stdout).toMatch(
      new RegExp(`^passed +pglite lock +DATA_DIR .* is held by process ${server.pid}`, 'm'),
    );
    for (const check of ['database', 'migrations']) {
      expect(r.stdout).toContain(`not checked  ${check.padEnd(11)}  ${held}\n`);
    }
    expect(r.stdout).toMatch(/^passed +redis +QUEUE_BACKEND=redis: Redis at redis:\/\/\S+ answers/m);
    // What this shell would do, and that the server may differ: it was started with an EHR_URL.
    expect(r.stdout).toMatch(
      /^passed +ehr url +unset: .*\(EHR_URL of this shell; the running refhub may have its own\)$/m,
    );
    expect(r.stdout).toMatch(
      /^passed +scanner +unset: .*\(ATTACHMENT_SCANNER of this shell; the running refhub may have its own\)$/m,
    );
    expect(r.stdout).toMatch(
      /^passed +pdf checker +qpdf version [\d.]+ at qpdf reads PDFs whole \(QPDF_PATH of this shell; the running refhub may have its own\)$/m,
    );
    expect(r.stdout).not.toMatch(/Every check passed/);
    expect(r.stdout).toMatch(/^5 checks passed, 2 not checked\.$/m);
    expect(r.stdout).toContain(`The running refhub (process ${server.pid})`);
    expect(r.stdout).toContain('`refhub doctor --server URL`');
  });

  it('asks the running refhub with --server: its own checks and settings, secrets only as set', async () => {
    const args = ['doctor', '--server', server.address];
    const r = await runRefhub(args, { ...shell, REFHUB_OPS_KEY: opsKey });
    expect(r.code, describeRun(args, r)).toBe(0);
    expect(r.stdout).toContain(
      `Checked by refhub at ${server.address} (process ${server.pid}, on embedded PGlite):`,
    );
    for (const check of ['pglite lock', 'database', 'migrations', 'redis', 'ehr url', 'pdf checker']) {
      expect(r.stdout).toMatch(new RegExp(`^passed +${check} `, 'm'));
    }
    expect(r.stdout).toMatch(/^Every check passed\.$/m);
    expect(r.stdout).toMatch(/^ {2}EHR_URL +http:\/\/127\.0\.0\.1:4010\/ehr {3}\(this shell: unset\)$/m);
    for (const variable of Object.keys(SECRETS)) {
      expect(r.stdout).toMatch(
        new RegExp(`^ {2}${variable} +set \\(secret\\) {3}\\(this shell: unset\\)$`, 'm'),
      );
    }
    for (const value of Object.values(SECRETS)) {
      expect(r.stdout).not.toContain(value);
      expect(r.stderr).not.toContain(value);
    }
    expect(r.stdout).not.toContain(opsKey);
  });

  it('needs an ops key for --server, and says so when it has none or another kind', async () => {
    const args = ['doctor', '--server', server.address];
    const [none, sender, unknown] = await Promise.all([
      runRefhub(args, shell),
      runRefhub([...args, '--ops-key', senderKey], shell),
      runRefhub(args, { ...shell, REFHUB_OPS_KEY: `rfh_test_${'z'.repeat(43)}` }),
    ]);
    expect(none.code, describeRun(args, none)).toBe(1);
    expect(none.stderr).toBe('refhub: --server needs an ops key: set REFHUB_OPS_KEY (or pass --ops-key)\n');
    expect(sender.code).toBe(1);
    expect(sender.stderr).toContain('refused the key: /doctor is for ops keys only');
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('did not accept the ops key');
    for (const r of [none, sender, unknown]) expect(r.stdout).not.toContain('EHR_URL');
  });
});
