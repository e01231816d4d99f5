// @refhub/client builds into a package a clinic system can install: `npm run build -w @refhub/client`
// compiles it to JavaScript with declarations, and the compiled module loads and works on its own;
// `npm pack -w @refhub/client` makes the tarball, which stays out of git.
import { execFile } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import type * as ClientSource from '../../../clients/typescript/src/index.ts';
import { childEnv } from '../../support/child-env.ts';

const ROOT = path.resolve(import.meta.dirname, '../../..');
const PACKAGE = path.join(ROOT, 'clients/typescript');
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

  it('packs, as docs/client.md says, into a tarball that git ignores', async () => {
    // `npm pack -w @refhub/client` writes the tarball into the directory it runs in, the repository's
    // root; the dry run names it without writing it.
    const { stdout } = await promisify(execFile)(
      'npm',
      ['pack', '-w', '@refhub/client', '--dry-run', '--json', '--loglevel=error'],
      { cwd: ROOT, env: childEnv({}), timeout: 60_000 },
    );
    const [packed] = JSON.parse(stdout) as { filename: string }[];
    expect(packed?.filename).toBe('refhub-client-0.1.0.tgz');
    expect(await fs.readFile(path.join(ROOT, 'docs/client.md'), 'utf8')).toContain(
      `npm pack -w @refhub/client          # writes ${packed!.filename}`,
    );
    // check-ignore exits 0 when a rule ignores the path, 1 when none does.
    await promisify(execFile)('git', ['check-ignore', '--quiet', '--no-index', packed!.filename], {
      cwd: ROOT,
    });
  });
});
