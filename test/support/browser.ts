// Debian's Chromium, as the browser tests drive it (`.ci/run` installs it when it is missing), and
// where their screenshots go. The flags keep Chromium off the network: this machine's is closed, and
// Chromium's background services would otherwise fail, many at a time.
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';

import { CHROMIUM } from './servers.ts';

export { CHROMIUM };

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

/** Full-page screenshots of every page and document a person reads, to look at after a run. */
export const SCREENSHOTS = path.join(ARTIFACTS, 'screenshots');

export function ensureArtifactsDir(): void {
  fs.mkdirSync(SCREENSHOTS, { recursive: true });
}

/** A free loopback port. PUBLIC_URL must name it before the app is built, since links carry it. */
export async function freePort(): Promise<number> {
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
