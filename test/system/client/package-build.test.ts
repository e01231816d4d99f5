// @refhub/client builds into a package a clinic system can install: `npm run build -w @refhub/client`
// compiles it to JavaScript with declarations, and the compiled module loads and works on its own.
import { execFile } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import type * as ClientSource from '../../../clients/typescript/src/index.ts';
import { childEnv } from '../../support/child-env.ts';

const PACKAGE = path.resolve(import.meta.dirname, '../../../clients/typescript');
const TSC = path.resolve(import.meta.dirname, '../../../node_modules/typescript/bin/tsc');

describe('the @refhub/client package', () => {
  let out: string | undefined;
  afterAll(async () => {
    if (out !== undefined) await fs.rm(out, { recursive: true, force: true });
  });

  it('compiles to JavaScript and declarations that load and run', async () => {
    // Inside the package, so that the compiled code finds openapi-fetch as an installed package would.
    out = await fs.mkdtemp(path.join(PACKAGE, '.build-check-'));
    await promisify(execFile)(
      process.execPath,
      [TSC, '-p', path.join(PACKAGE, 'tsconfig.build.json'), '--outDir', out],
      { env: childEnv({}), timeout: 120_000 },
    );
    const files = await fs.readdir(out);
    expect(files).toEqual(expect.arrayContaining(['index.js', 'index.d.ts', 'openapi.generated.d.ts']));
    // The compiled module, read as the source it was compiled from.
    const compiled = (await import(pathToFileURL(path.join(out, 'index.js')).href)) as typeof ClientSource;
    const { createRefhubClient, RefhubNetworkError, RefhubProblemError } = compiled;
    expect(typeof createRefhubClient).toBe('function');
    expect(typeof RefhubProblemError).toBe('function');
    // Nothing listens on port 9 of this machine: the compiled client reports a network error.
    const client = createRefhubClient({
      baseUrl: 'http://127.0.0.1:9',
      apiKey: 'rfh_test_x',
      retry: { attempts: 1 },
    });
    const read = client
      .actingFor({ institutionIdType: 'hci', institutionId: 'S1234A', requesterIdentifier: 'dr@example.org' })
      .referral('01890a5d-ac96-774b-bcce-b302099a8057')
      .read();
    await expect(read).rejects.toBeInstanceOf(RefhubNetworkError);
  });
});
