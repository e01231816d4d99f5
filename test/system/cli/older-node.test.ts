// Setting refhub up on a machine whose own Node.js is older than 24: `npm ci` runs on that Node, and
// installs the Node.js 24 (the `node` devDependency) that npm scripts and `npx refhub` run on. Neither
// the install nor a `node bin/refhub.js` typed by hand may bury the reader in errors they cannot act
// on: the install is quiet, and the command says in one line what it needs.
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { childEnv, SYSTEM_PATH } from '../../support/child-env.ts';

const ROOT = path.resolve(import.meta.dirname, '../../..');
const BIN = path.join(ROOT, 'bin/refhub.js');

/** The first `node` on the system PATH, if it is older than 24 (on a machine with Node 24 there is none). */
function olderSystemNode(): { readonly node: string; readonly version: string } | undefined {
  for (const dir of SYSTEM_PATH.split(path.delimiter)) {
    const node = path.join(dir, 'node');
    if (!fs.existsSync(node)) continue;
    const version = execFileSync(node, ['-p', 'process.versions.node'], { encoding: 'utf8' }).trim();
    return Number(version.split('.')[0]) < 24 ? { node, version } : undefined;
  }
  return undefined;
}

const older = olderSystemNode();

describe.skipIf(older === undefined)(`with the system's Node.js ${older?.version ?? '(24 or later)'}`, () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'refhub-older-node-'));
  afterAll(() => {
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('`node bin/refhub.js` says in one line which Node.js it needs, and exits 1', () => {
    const { node, version } = older!;
    const run = spawnSync(node, [BIN, 'doctor'], { cwd: ROOT, env: childEnv({}), encoding: 'utf8' });
    expect(run.stdout).toBe('');
    expect(run.stderr).not.toContain('ERR_UNKNOWN_FILE_EXTENSION');
    const lines = run.stderr.split('\n');
    expect(lines, run.stderr).toHaveLength(2);
    expect(lines[1]).toBe('');
    expect(lines[0]).toBe(
      `refhub needs Node.js 24, but ${node} is Node.js ${version}: run it as \`npx refhub …\` (or \`npm start\`), ` +
        'which uses the Node.js 24 that `npm ci` installed, or put Node.js 24 first on PATH.',
    );
    expect(run.status).toBe(1);
  });

  it('`npm ci` on it prints no warning about the engines of packages that run on Node.js 24', () => {
    // The files `npm ci` reads, in a directory of their own: the check needs no download (a dry run
    // with an empty cache, offline), and the checkout's node_modules stays untouched.
    for (const file of ['package.json', 'package-lock.json', '.npmrc', 'clients/typescript/package.json']) {
      if (!fs.existsSync(path.join(ROOT, file))) continue;
      fs.mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
      fs.copyFileSync(path.join(ROOT, file), path.join(dir, file));
    }
    const { node } = older!;
    const install = spawnSync(
      'npm',
      ['ci', '--dry-run', '--ignore-scripts', '--offline', '--cache', path.join(dir, '.npm')],
      {
        cwd: dir,
        // npm runs on the system's Node, as it does for a reader who types `npm ci`.
        env: childEnv({ PATH: `${path.dirname(node)}${path.delimiter}${SYSTEM_PATH}` }),
        encoding: 'utf8',
      },
    );
    expect(install.status, install.stderr).toBe(0);
    expect(install.stdout).toMatch(/^added \d+ packages/m);
    expect(install.stderr).not.toContain('EBADENGINE');
    expect(install.stderr).toBe('');
  });
});

describe('with the Node.js 24 that npm scripts run', () => {
  it('`node bin/refhub.js` loads the sources', () => {
    const run = spawnSync(process.execPath, [BIN, '--version'], { env: childEnv({}), encoding: 'utf8' });
    expect(run.stderr).toBe('');
    expect(run.stdout.trim()).toMatch(/^\d+\.\d+\.\d+/);
    expect(run.status).toBe(0);
  });
});
