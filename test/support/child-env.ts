// The environment of a refhub child process: the parent's, without any variable refhub reads, and then
// the settings the caller gives it. A setting in the developer's shell (a DATABASE_URL, a REMINDER_MAX)
// never reaches a child that was not given it. The names are those of .env.example, which
// test/config-env-example.test.ts keeps equal to what src/config.ts reads.
import fs from 'node:fs';
import path from 'node:path';

const REFHUB_SETTINGS = new Set(
  [
    ...fs
      .readFileSync(path.resolve(import.meta.dirname, '../../.env.example'), 'utf8')
      .matchAll(/^([A-Z][A-Z0-9_]*)=/gm),
  ].map((m) => m[1]),
);

export function childEnv(settings: Readonly<Record<string, string>>): Record<string, string> {
  const inherited = Object.entries(process.env).filter(
    (entry): entry is [string, string] => entry[1] !== undefined && !REFHUB_SETTINGS.has(entry[0]),
  );
  return { ...Object.fromEntries(inherited), ...settings };
}

/**
 * PATH as a reader's shell has it outside npm scripts: without the node_modules/.bin that npm and npx
 * put first (and with it the Node.js 24 of the `node` devDependency), so `node` is the machine's own.
 */
export const SYSTEM_PATH = (process.env.PATH ?? '')
  .split(path.delimiter)
  .filter((dir) => dir !== '' && !dir.split(path.sep).includes('node_modules'))
  .join(path.delimiter);
