// `refhub --help`, `--version` and a mistyped command answer without loading what the commands run
// (the composition root, the database engines, BullMQ, Fastify): that is what made `npx refhub
// --help` take seconds. Each run records the modules it resolved (fixtures/record-modules.ts), and
// none of those may be among them. Then every command `--help` lists is in the README's table.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { childEnv } from '../../support/child-env.ts';

const ROOT = path.resolve(import.meta.dirname, '../../..');
const RECORDER = path.join(ROOT, 'test/support/fixtures/record-modules.ts');
const HEAVY = [
  '/src/composition/',
  '/src/db/',
  '/src/api/',
  '/src/workers/',
  '/node_modules/bullmq/',
  '/node_modules/fastify/',
  '/node_modules/@electric-sql/pglite/',
  '/node_modules/ioredis/',
  '/node_modules/pg/',
];

describe('the refhub command as it starts', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'refhub-cli-start-'));
  afterAll(() => {
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const run = (args: readonly string[]) => {
    const record = path.join(dir, `${args.join('_') || 'none'}.txt`);
    const result = spawnSync(process.execPath, ['--import', RECORDER, 'bin/refhub.js', ...args], {
      cwd: ROOT,
      env: childEnv({ RECORD_MODULES: record }),
      encoding: 'utf8',
    });
    return { ...result, modules: fs.readFileSync(record, 'utf8').split('\n') };
  };

  it.each([['--help'], ['--version'], ['keys', '--help'], ['no-such-command']])(
    '`refhub %s` loads none of what the commands run',
    (...args) => {
      const { modules, stdout, stderr } = run(args);
      expect(stdout + stderr).not.toBe('');
      const loaded = modules.filter((url) => HEAVY.some((part) => url.includes(part)));
      expect(loaded).toEqual([]);
    },
  );

  it('lists no command that the README’s table of commands leaves out', () => {
    const help = run(['--help']).stdout;
    const listed = [...help.slice(help.indexOf('Commands:')).matchAll(/^ {2}([a-z][a-z-]+)/gm)]
      .map((m) => m[1])
      .filter((name) => name !== 'help');
    expect(listed.length).toBeGreaterThan(10);
    const readme = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8');
    const table = readme.slice(
      readme.indexOf('\n## Commands\n'),
      readme.indexOf('\n## ', readme.indexOf('\n## Commands\n') + 1),
    );
    for (const name of listed) expect(table, name).toContain(`\`refhub ${name}`);
  });
});
