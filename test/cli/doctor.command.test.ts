// How `refhub doctor` reports: one line per check, passed, FAILED or not checked with why, and a
// summary that says "Every check passed." only when every check was made and passed.
import { describe, expect, it } from 'vitest';
import { checkLines, summaryOf } from '../../src/cli/doctor.command.ts';
import { failed, notChecked, passed } from '../../src/services/doctor-checks.ts';

describe('the doctor report', () => {
  it('says every check passed only when every check was made and passed', () => {
    expect(summaryOf([passed('database', 'PostgreSQL answers'), passed('redis', 'reachable')])).toBe(
      'Every check passed.',
    );
  });

  it('counts checks not made apart from those that passed, even when nothing failed', () => {
    const beside = [
      passed('pglite lock', 'DATA_DIR /srv/refhub is held by process 4242 ("refhub all")'),
      notChecked('database', 'PGlite in DATA_DIR is held by the running refhub, process 4242'),
      notChecked('migrations', 'PGlite in DATA_DIR is held by the running refhub, process 4242'),
      passed('redis', 'reachable, maxmemory-policy noeviction'),
      passed('ehr url', 'https, ehr.example'),
    ];
    expect(summaryOf(beside)).toBe('3 checks passed, 2 not checked.');
    expect(summaryOf([passed('redis', 'reachable'), notChecked('database', 'held')])).toBe(
      '1 check passed, 1 not checked.',
    );
    expect(summaryOf([failed('redis', 'Redis is unreachable'), notChecked('database', 'held')])).toBe(
      '0 checks passed, 1 not checked, 1 failed.',
    );
  });

  it('prints each check with its status, its name and why, in aligned columns', () => {
    expect(
      checkLines([
        passed('pglite lock', 'DATA_DIR /srv/refhub is held by process 4242 ("refhub all")'),
        notChecked('database', 'PGlite in DATA_DIR is held by the running refhub, process 4242'),
        failed('ehr url', 'unset: forms go to the in-process sandbox EHR, never in production'),
      ]),
    ).toBe(
      'passed       pglite lock  DATA_DIR /srv/refhub is held by process 4242 ("refhub all")\n' +
        'not checked  database     PGlite in DATA_DIR is held by the running refhub, process 4242\n' +
        'FAILED       ehr url      unset: forms go to the in-process sandbox EHR, never in production\n',
    );
  });
});
