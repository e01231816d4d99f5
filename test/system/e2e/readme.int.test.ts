// The README's walk-through, run as written: its bash blocks, in order, in a copy of the project with
// its own data directory. Only the port differs, so that it cannot collide with anything else.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';

const ROOT = path.resolve(import.meta.dirname, '../../..');
const COPIED = ['package.json', 'bin', 'src', 'catalog'];

function walkThrough(): string {
  const readme = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8');
  const start = readme.indexOf('## Walk-through');
  const end = readme.indexOf('\n## ', start + 1);
  const blocks = [...readme.slice(start, end).matchAll(/```bash\n([\s\S]*?)```/g)].map((m) => m[1] ?? '');
  expect(blocks.length).toBeGreaterThan(5);
  return blocks.join('\n');
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => {
        resolve(port);
      });
    });
  });
}

describe('the README walk-through', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'refhub-readme-'));
  const prefix = `readme-${path.basename(dir)}`;
  afterAll(async () => {
    fs.rmSync(dir, { recursive: true, force: true });
    const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
    const keys = await redis.keys(`{${prefix}}*`);
    if (keys.length > 0) await redis.del(...keys);
    redis.disconnect();
  });

  it('works as written', async () => {
    for (const entry of COPIED) fs.cpSync(path.join(ROOT, entry), path.join(dir, entry), { recursive: true });
    fs.symlinkSync(path.join(ROOT, 'node_modules'), path.join(dir, 'node_modules'));
    const port = await freePort();
    const script = [
      // Job control, so that the walk-through's `kill %1` and `wait %1` mean what they do in a terminal.
      'set -m',
      'set -o pipefail',
      walkThrough().replaceAll('127.0.0.1:3000', `127.0.0.1:${port}`),
    ].join('\n');
    const child = spawn('bash', ['-c', script], {
      cwd: dir,
      env: {
        ...process.env,
        PATH: `${path.join(ROOT, 'node_modules/.bin')}:${process.env.PATH ?? ''}`,
        PORT: String(port),
        NODE_ENV: 'development',
        DATA_DIR: '',
        DATABASE_URL: '',
        EHR_URL: '',
        QUEUE_PREFIX: prefix,
        LOG_LEVEL: 'warn',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve));

    expect(code, output).toBe(0);
    expect(output).toContain('The demo catalog was loaded');
    expect(output).toMatch(/"url":"http:\/\/127\.0\.0\.1:\d+\/l\/[A-Za-z0-9_-]{43}"/);
    expect(output).toContain('"status":"pending-acceptance"');
    expect(output).toContain('"ehrFormType":"Specialist Referral|Patient Summary"');
    expect(output).toContain('"content":"We will call the patient this week."');
    expect(output).toMatch(/"outcome":"delivered"[^}]*"httpStatus":201/);
    expect(output).toContain('The referral form was delivered to the national health record (reference EHR-');
    expect(output).toContain('Dr Lim (Bukit Timah Family Clinic) cancelled the referral: Patient recovered');
    // What the text says the reader sees.
    expect(output).toMatch(/^etag: W\/"2"\r?$/m);
    expect(output).toContain(
      '\nServiceRequest Task Patient Practitioner PractitionerRole Organization Organization AuditEvent\n',
    );
    // The hash step: the ledger's SHA-256, the hash of a later Get's ehrForm and the attempt's kept
    // form's hash are one value.
    const sha256 = /"sha256":"([0-9a-f]{64})"/.exec(output)?.[1];
    expect(sha256, output).toBeDefined();
    expect(output.match(new RegExp(`^${sha256}$`, 'gm'))).toHaveLength(2);
    expect(output).toMatch(
      new RegExp(
        [
          'Bukit Timah Family Clinic created the referral as a draft\\.',
          'Bukit Timah Family Clinic submitted the referral to Central General Hospital; it is awaiting acceptance\\.',
          'The referral form was delivered to the national health record \\(reference EHR-[0-9A-F]+\\)\\.',
          'Dr Wong \\(Central General Hospital\\) added a note\\.',
          'Dr Lim \\(Bukit Timah Family Clinic\\) cancelled the referral: Patient recovered',
        ].join('\n'),
      ),
    );
    expect(output).toContain('"version":4');
    expect(fs.existsSync(path.join(dir, 'data', 'refhub.lock'))).toBe(false);
  }, 120_000);
});
