// `refhub keys …` and `refhub clients …` while `refhub all` serves on embedded PGlite, which holds
// DATA_DIR: the serving process runs them, through DATA_DIR/refhub.sock (open to its owner alone), and
// the command prints what it would have printed. A key made so works at once; a key revoked so stops
// at once; a refusal is one line, as from the command itself. Once refhub has stopped, the socket is
// gone and the commands open the database themselves again.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { generateKeyPair, exportJWK } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeRun, runRefhub } from '../../support/refhub-cli.ts';
import { startRefhubProcess, type WorkerProcess } from '../../support/worker-process.ts';

describe('operator commands beside a serving embedded refhub', () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'refhub-control-'));
  const socket = path.join(dataDir, 'refhub.sock');
  const env = { DATA_DIR: dataDir };
  let server: WorkerProcess;

  beforeAll(async () => {
    server = await startRefhubProcess('all', {
      databaseUrl: undefined,
      redisUrl: undefined,
      queuePrefix: 'unused',
      env: { DATA_DIR: dataDir, PUBLIC_URL: 'http://127.0.0.1' },
      startTimeoutMs: 120_000,
    });
  }, 150_000);
  afterAll(async () => {
    await server.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  const cli = async (args: readonly string[]) => {
    const r = await runRefhub(args, env);
    return { ...r, described: describeRun(args, r) };
  };
  const list = (key: string) =>
    fetch(`${server.address}/api/v1/institutions/hci/S1234A/referrals`, {
      headers: { authorization: `ApiKey ${key}` },
    });

  it('listens on a socket in DATA_DIR that only its owner can open', () => {
    const stat = fs.statSync(socket);
    expect(stat.isSocket()).toBe(true);
    expect(stat.mode & 0o777).toBe(0o600);
  });

  it('creates a key that works at once, lists it, and revokes it so that it stops at once', async () => {
    const created = await cli([
      'keys',
      'create',
      '--system',
      'HAS',
      '--role',
      'sender',
      '--institution',
      'hci:S1234A',
    ]);
    expect(created.code, created.described).toBe(0);
    expect(created.stdout).toMatch(
      /^Created sender key \S+ \(rfh_test_\S+…\) for HAS, acting for hci:S1234A\.\n/,
    );
    const key = created.stdout.trimEnd().split('\n').at(-1) ?? '';
    expect(key).toMatch(/^rfh_test_/);
    expect((await list(key)).status).toBe(200);

    const listed = await cli(['keys', 'list']);
    expect(listed.code, listed.described).toBe(0);
    const id = /^Created sender key (\S+) /.exec(created.stdout)?.[1] ?? '';
    expect(listed.stdout).toMatch(new RegExp(`^${id}\\t.*\\tsender\\tHAS\\thci:S1234A\\tactive\\t$`, 'm'));

    const revoked = await cli(['keys', 'revoke', id]);
    expect(revoked.code, revoked.described).toBe(0);
    expect(revoked.stdout).toBe(`Revoked key ${id} (${/\((rfh_test_\S+)…\)/.exec(created.stdout)?.[1]}…).\n`);
    expect((await list(key)).status).toBe(401);
  });

  it('registers a client from a key file named from the shell’s own directory, and lists it', async () => {
    const { publicKey } = await generateKeyPair('ES256');
    const jwk = { ...(await exportJWK(publicKey)), kid: 'clinic-2026', alg: 'ES256', use: 'sig' };
    const work = fs.mkdtempSync(path.join(os.tmpdir(), 'refhub-control-jwk-'));
    try {
      fs.writeFileSync(path.join(work, 'clinic.jwk.json'), JSON.stringify(jwk));
      const args = [
        'clients',
        'create',
        '--system',
        'HAS',
        '--role',
        'sender',
        '--institution',
        'hci:S1234A',
      ];
      // Relative to where the operator runs the command, not to where refhub serves from.
      const r = await runRefhub(
        [...args, '--jwk-file', path.relative(process.cwd(), path.join(work, 'clinic.jwk.json'))],
        env,
      );
      expect(r.code, describeRun(args, r)).toBe(0);
      expect(r.stdout).toContain('Token URL (the aud of its assertions): http://127.0.0.1/oauth2/token\n');
      const clientId = r.stdout.trimEnd().split('\n').at(-1) ?? '';
      const listed = await cli(['clients', 'list']);
      expect(listed.code, listed.described).toBe(0);
      expect(listed.stdout).toContain(`${clientId}\tsender\tHAS\thci:S1234A\t`);
    } finally {
      fs.rmSync(work, { recursive: true, force: true });
    }
  });

  it('runs retention in the serving refhub, which holds the database', async () => {
    const run = await cli(['retention', 'run']);
    expect(run.code, run.described).toBe(0);
    expect(run.stdout).toMatch(/^(Made \d+ month partitions?\.\n)?Nothing is past its retention\.\n$/);
    const referrals = await cli(['retention', 'referrals']);
    expect(referrals.code, referrals.described).toBe(0);
    expect(referrals.stdout).toBe('No referral is due for archiving.\n');
  });

  it('says in one line why it refused, as the command itself would', async () => {
    const r = await cli(['keys', 'revoke', 'rfh_test_nosuchkey']);
    expect(r.code, r.described).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/^refhub: [^\n]+\n$/);
  });

  it('opens the database itself again once refhub has stopped and taken its socket away', async () => {
    await server.stop();
    expect(fs.existsSync(socket)).toBe(false);
    const listed = await cli(['keys', 'list']);
    expect(listed.code, listed.described).toBe(0);
    expect(listed.stdout).toMatch(/^ID\tPREFIX\tROLE/);
  });
});
