// Debian's Chromium, as the browser tests drive it (`.ci/run` installs it when it is missing), and
// where their screenshots go. The flags keep Chromium off the network: this machine's is closed, and
// Chromium's background services would otherwise fail, many at a time.
import fs from 'node:fs';
import path from 'node:path';

export const CHROMIUM = '/usr/bin/chromium';

export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** Screenshots are kept as test artifacts (ignored by git). */
export const ARTIFACTS = path.resolve(import.meta.dirname, '../../test-artifacts');

export function ensureArtifactsDir(): void {
  fs.mkdirSync(ARTIFACTS, { recursive: true });
}
