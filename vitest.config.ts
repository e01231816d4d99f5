import { configDefaults, defineConfig } from 'vitest/config';

// A test file's tier is in its name (test/README.md): `*.int.test.ts` needs PostgreSQL and/or Redis,
// `*.browser.test.ts` drives Chromium (against refhub on those servers), `*.embedded.test.ts` runs
// refhub whole on embedded PGlite with its queues in it, and every other `*.test.ts` runs with no
// server at all. `npm test` (test/tiers.ts) runs every project this machine can run; `npm run
// test:fast` runs `fast` alone. `fast` and `embedded` pass with PostgreSQL and Redis unreachable; only
// the projects that need the servers check for them before they start.
const INT = 'test/**/*.int.test.ts';
const BROWSER = 'test/**/*.browser.test.ts';
const EMBEDDED = 'test/**/*.embedded.test.ts';
// Before each project: a migrated PGlite, once, that the tests' in-memory PGlite stores start from.
const PGLITE_TEMPLATE = 'test/support/pglite-template.ts';
const NEEDS_SERVERS = ['test/support/global-setup.ts', PGLITE_TEMPLATE];

export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Every core: vitest's default leaves one free, which on CI's two cores runs one file at a time,
    // while most files wait on servers and processes of their own rather than the processor.
    maxWorkers: '100%',
    // The JSON report lets .ci/run print a plain "N passed, N failed" line.
    reporters: ['default', ['json', { outputFile: '.vitest-report.json' }]],
    projects: [
      {
        extends: true,
        test: {
          name: 'fast',
          include: ['test/**/*.test.ts'],
          exclude: [...configDefaults.exclude, INT, BROWSER, EMBEDDED],
          globalSetup: [PGLITE_TEMPLATE],
        },
      },
      { extends: true, test: { name: 'embedded', include: [EMBEDDED], globalSetup: [PGLITE_TEMPLATE] } },
      { extends: true, test: { name: 'int', include: [INT], globalSetup: NEEDS_SERVERS } },
      { extends: true, test: { name: 'browser', include: [BROWSER], globalSetup: NEEDS_SERVERS } },
    ],
  },
});
