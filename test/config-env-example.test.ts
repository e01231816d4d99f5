// .env.example lists every variable refhub reads, and nothing else, so an operator can set up an
// installation from it. Its values are the documented defaults or realistic examples that load.
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.ts';
import { auditSigningKeySetting, testAuditSigningKey } from './support/audit-signing-key.ts';

const ROOT = path.resolve(import.meta.dirname, '..');
const read = (file: string) => fs.readFileSync(path.join(ROOT, file), 'utf8');

/**
 * Every variable src/config.ts reads: each read goes through a helper called as `helper(env, 'NAME'…)`,
 * which the formatter may break across lines.
 */
const READ_BY_CONFIG = new Set(
  [...read('src/config.ts').matchAll(/\(\s*env,\s*'([A-Z][A-Z0-9_]*)'/g)].map((m) => m[1]),
);

function example(): Map<string, string> {
  const entries = read('.env.example')
    .split('\n')
    .filter((line) => line.trim() !== '' && !line.startsWith('#'))
    .map((line) => {
      const match = /^([A-Z][A-Z0-9_]*)=(.*)$/.exec(line);
      expect(match, `a NAME=value line: ${line}`).not.toBeNull();
      return [match?.[1] ?? '', match?.[2] ?? ''] as const;
    });
  return new Map(entries);
}

describe('.env.example', () => {
  it('names every variable the configuration reads, once, and no other', () => {
    const names = [...example().keys()];
    expect(new Set(names).size).toBe(names.length);
    expect(new Set(names)).toEqual(READ_BY_CONFIG);
    expect(READ_BY_CONFIG.size).toBeGreaterThan(20);
  });

  it('loads as a production configuration once the secrets are filled in', async () => {
    const env = Object.fromEntries(example());
    const config = loadConfig(
      {
        ...env,
        SESSION_SECRET: 'x'.repeat(48),
        METRICS_TOKEN: 'y'.repeat(40),
        EHR_TOKEN: 'token',
        DATA_KEYS: `kek-1:${Buffer.alloc(32, 1).toString('base64')}`,
        AUDIT_SIGNING_KEY: auditSigningKeySetting(await testAuditSigningKey()),
      },
      '/srv/refhub',
    );
    expect(config.env).toBe('production');
    expect(config.queuePrefix).toBe('{refhub}');
    expect(config.ehrUrl).toMatch(/^https:/);
  });

  it('is also documented in the README configuration table', () => {
    const readme = read('README.md');
    for (const name of READ_BY_CONFIG) expect(readme, name).toContain(`\`${name}\``);
  });
});
