// `npm test`: every tier of the tests (test/README.md) that this machine can run. On a machine with
// nothing but Node that is the `fast` and `embedded` tiers; the `int` and `browser` tiers need
// PostgreSQL and Redis (and `browser` Chromium), the tests that read PDFs need qpdf, and the tests of the
// Prometheus alert rules promtool. What it leaves
// out it says in one line, at the end. With CI=true it leaves out nothing: a missing server fails the
// run (test/support/global-setup.ts), as a missing program fails the tests that need it. Arguments go
// to vitest.
import { spawn } from 'node:child_process';
import path from 'node:path';
import {
  chromiumMissing,
  promtoolMissing,
  qpdfMissing,
  serversMissing,
  type Missing,
} from './support/servers.ts';

const ROOT = path.resolve(import.meta.dirname, '..');
const TIERS = ['fast', 'embedded', 'int', 'browser'] as const;
const ci = !['', '0', 'false', undefined].includes(process.env.CI);

/** What is left out: a tier, or the tests of the tiers run that need a program (REFHUB_TESTS_WITHOUT). */
interface LeftOut {
  readonly what: string;
  readonly tier?: (typeof TIERS)[number];
  readonly needs: readonly Missing[];
}

const left: LeftOut[] = [];
if (!ci) {
  const servers = await serversMissing();
  const chromium = chromiumMissing();
  const qpdf = qpdfMissing();
  const promtool = promtoolMissing();
  if (servers.length > 0) left.push({ what: 'the int tier', tier: 'int', needs: servers });
  const browser = chromium === undefined ? servers : [...servers, chromium];
  if (browser.length > 0) left.push({ what: 'the browser tier', tier: 'browser', needs: browser });
  if (qpdf !== undefined) left.push({ what: 'the tests that read PDFs', needs: [qpdf] });
  if (promtool !== undefined) left.push({ what: 'the tests of the alert rules', needs: [promtool] });
}
const tiers = TIERS.filter((tier) => !left.some((l) => l.tier === tier));
const programs = left.filter((l) => l.tier === undefined).flatMap((l) => l.needs.map((m) => m.name));

const vitest = spawn(
  process.execPath,
  [
    path.join(ROOT, 'node_modules/vitest/vitest.mjs'),
    'run',
    ...tiers.flatMap((tier) => ['--project', tier]),
    ...process.argv.slice(2),
  ],
  { cwd: ROOT, stdio: 'inherit', env: { ...process.env, REFHUB_TESTS_WITHOUT: programs.join(',') } },
);
const code = await new Promise<number>((resolve) => {
  vitest.on('exit', (exitCode) => {
    resolve(exitCode ?? 1);
  });
});

if (left.length > 0) {
  // Each missing thing said in full once, then by its name.
  const said = new Set<string>();
  const needs = (missing: readonly Missing[]) => {
    const words = missing.map((m) => {
      const first = !said.has(m.name);
      said.add(m.name);
      return first ? m.said : m.name;
    });
    return words.length < 2 ? words.join('') : `${words.slice(0, -1).join(', ')} and ${words.at(-1)}`;
  };
  const parts = left.map((l) => `${l.what}, needing ${needs(l.needs)}`);
  console.log(
    `Not run on this machine: ${parts.join('; ')}. With CI=true every tier runs, and fails without them.`,
  );
}
process.exitCode = code;
