// A test app listening on a free loopback port, with PUBLIC_URL naming that port (the links it hands
// out carry it), and Chromium beside it: what a browser test drives.
import { chromium, type Browser } from 'playwright-core';
import type { Engine } from '../../src/db/database.ts';
import { CHROMIUM, CHROMIUM_ARGS, freePort } from './browser.ts';
import { createTestApp, type TestApp } from './test-app.ts';

export interface ServedApp {
  readonly t: TestApp;
  readonly browser: Browser;
  close(): Promise<void>;
}

export async function serveWithBrowser(engine: Engine): Promise<ServedApp> {
  const port = await freePort();
  const t = await createTestApp(engine, { env: { PUBLIC_URL: `http://127.0.0.1:${port}` } });
  await t.app.listen({ port, host: '127.0.0.1' });
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
  return {
    t,
    browser,
    async close() {
      await browser.close();
      await t.close();
    },
  };
}
