// The sandbox EHR's TLS material as the compose staging stack makes it: deploy/sandbox-ehr-tls.sh run
// into a new directory, with the private key owned by whoever runs the tests.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const SCRIPT = path.resolve(import.meta.dirname, '../../deploy/sandbox-ehr-tls.sh');

export interface SandboxTlsFiles {
  readonly dir: string;
  readonly ca: string;
  readonly cert: string;
  readonly key: string;
}

/** Runs the script into `dir` (a new temporary directory by default) and names what it made. */
export function makeSandboxTls(
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'refhub-sandbox-tls-')),
): SandboxTlsFiles {
  const { uid, gid } = os.userInfo();
  execFileSync('sh', [SCRIPT, dir], {
    env: { PATH: process.env.PATH, KEY_OWNER: `${uid}:${gid}` },
    stdio: 'pipe',
  });
  return {
    dir,
    ca: path.join(dir, 'ca.pem'),
    cert: path.join(dir, 'sandbox-ehr.pem'),
    key: path.join(dir, 'sandbox-ehr.key'),
  };
}
