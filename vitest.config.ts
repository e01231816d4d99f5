import { configDefaults, defineConfig } from 'vitest/config';

// A test file's tier is in its name (test/README.md): `*.int.test.ts` needs PostgreSQL and/or Redis,
// `*.browser.test.ts` drives Chromium (against refhub on those servers), and every other `*.test.ts`
// runs with no server at all. `npm test` runs all three projects; `npm run test:fast` runs `fast`
// alone, which must pass with PostgreSQL and Redis unreachable. Only the projects that need the
// servers check for PostgreSQL before they start.
const INT = 'test/**/*.int.test.ts';
const BROWSER = 'test/**/*.browser.test.ts';
const NEEDS_SERVERS = ['test/support/global-setup.ts'];

export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // The JSON report lets .ci/run print a plain "N passed, N failed" line.
    reporters: ['default', ['json', { outputFile: '.vitest-report.json' }]],
    projects: [
      {
        extends: true,
        test: {
          name: 'fast',
          include: ['test/**/*.test.ts'],
          exclude: [...configDefaults.exclude, INT, BROWSER],
        },
      },
      { extends: true, test: { name: 'int', include: [INT], globalSetup: NEEDS_SERVERS } },
      { extends: true, test: { name: 'browser', include: [BROWSER], globalSetup: NEEDS_SERVERS } },
    ],
  },
});
