// The pure parts of signing in to the ops pages: reading Basic credentials, telling reads from
// writes by route pattern, naming the referrals a job ID carries, and counting failed sign-ins.
import { describe, expect, it } from 'vitest';
import { accessOf, referralIdsOf } from '../../../src/api/admin/admin-access.ts';
import { userNameForAudit } from '../../../src/api/admin/admin-audit.ts';
import { createFailureLimiter } from '../../../src/api/failure-limiter.ts';
import { parseBasic } from '../../../src/api/admin/ops-auth.ts';

const basic = (text: string) => `Basic ${Buffer.from(text, 'utf8').toString('base64')}`;
const REFERRAL = '01970a4e-1c2b-7d3e-8f40-123456789abc';

describe('parseBasic', () => {
  it('reads the user name and the password, which may itself hold colons', () => {
    expect(parseBasic(basic('ops:rfh_test_abc'))).toEqual({ user: 'ops', password: 'rfh_test_abc' });
    expect(parseBasic(basic('Lim Wei Ling:a:b'))).toEqual({ user: 'Lim Wei Ling', password: 'a:b' });
    expect(parseBasic(basic(':key'))).toEqual({ user: '', password: 'key' });
    expect(parseBasic(`basic  ${Buffer.from('é:k').toString('base64')}`)).toEqual({
      user: 'é',
      password: 'k',
    });
  });

  it.each([
    ['no header', undefined],
    ['another scheme', 'ApiKey rfh_test_abc'],
    ['no colon', basic('rfh_test_abc')],
    ['not base64', 'Basic !!!!'],
    ['base64 of the wrong length', 'Basic YWJjZA='],
    ['nothing after the scheme', 'Basic '],
  ])('refuses %s', (_what, header) => {
    expect(parseBasic(header)).toBeUndefined();
  });
});

describe('userNameForAudit', () => {
  it('keeps a name a person types and drops anything else', () => {
    expect(userNameForAudit('  lim.wl@ops.example ')).toBe('lim.wl@ops.example');
    expect(userNameForAudit('')).toBeNull();
    expect(userNameForAudit('a\u0000b')).toBeNull();
    expect(userNameForAudit('x'.repeat(129))).toBeNull();
  });
});

describe('accessOf', () => {
  it('audits the overview in its handler, and neither static files nor the board’s polling', () => {
    expect(accessOf('GET', '/admin', {})).toMatchObject({
      action: 'admin.overview.read',
      auditGranted: false,
    });
    expect(accessOf('GET', '/admin/queues/static/*', {})).toMatchObject({
      auditGranted: false,
      write: false,
    });
    expect(accessOf('GET', '/admin/queues/api/queues', {})).toMatchObject({
      action: 'admin.queues.read',
      auditGranted: false,
    });
  });

  it('audits opening the board and reading one job', () => {
    expect(accessOf('GET', '/admin/queues/', {})).toMatchObject({
      action: 'admin.queues.read',
      auditGranted: true,
    });
    expect(accessOf('GET', '/admin/queues/api/queues/:queueName/:jobId', {})).toMatchObject({
      action: 'admin.queues.job.read',
      auditGranted: true,
    });
    expect(accessOf('HEAD', '/admin/queues/api/queues/:queueName/:jobId/logs', {}).write).toBe(false);
  });

  it.each([
    [
      '/admin/queues/api/queues/:queueName/retry/:queueStatus',
      { queueStatus: 'failed' },
      'admin.queues.retry',
    ],
    ['/admin/queues/api/queues/:queueName/:jobId/retry', {}, 'admin.queues.retry'],
    ['/admin/queues/api/queues/:queueName/promote', {}, 'admin.queues.promote'],
    ['/admin/queues/api/queues/:queueName/:jobId/promote', {}, 'admin.queues.promote'],
    [
      '/admin/queues/api/queues/:queueName/clean/:queueStatus',
      { queueStatus: 'completed' },
      'admin.queues.remove',
    ],
    ['/admin/queues/api/queues/:queueName/:jobId/clean', {}, 'admin.queues.remove'],
  ])('lets write mode PUT %s', (route, params, action) => {
    expect(accessOf('PUT', route, params)).toEqual({
      action,
      auditGranted: true,
      write: true,
      writeAllowed: true,
    });
  });

  it.each([
    ['PUT', '/admin/queues/api/queues/:queueName/retry/:queueStatus', { queueStatus: 'completed' }],
    ['POST', '/admin/queues/api/queues/:queueName/add', {}],
    ['PATCH', '/admin/queues/api/queues/:queueName/:jobId/update-data', {}],
    ['PUT', '/admin/queues/api/queues/:queueName/empty', {}],
    ['PUT', '/admin/queues/api/queues/:queueName/obliterate', {}],
    ['PUT', '/admin/queues/api/queues/pause', {}],
    ['PUT', '/admin/queues/api/queues/:queueName/job-schedulers/:schedulerId/remove', {}],
  ])('never lets %s %s through', (method, route, params) => {
    expect(accessOf(method, route, params)).toMatchObject({ write: true, writeAllowed: false });
  });
});

describe('referralIdsOf', () => {
  it('finds the referral in forward and reminder job IDs', () => {
    expect(referralIdsOf({ jobId: `${REFERRAL}.v3` })).toEqual([REFERRAL]);
    expect(referralIdsOf({ jobId: `repeat:reminder.${REFERRAL.toUpperCase()}:1780000000000` })).toEqual([
      REFERRAL,
    ]);
    expect(referralIdsOf({ jobId: '42' })).toEqual([]);
    expect(referralIdsOf({})).toEqual([]);
  });
});

describe('the failed sign-in limiter', () => {
  const clock = (start: number) => {
    let now = start;
    return { now: () => new Date(now), advance: (ms: number) => (now += ms) };
  };

  it('lets a client fail up to the limit, then names the wait until its window ends', () => {
    const time = clock(0);
    const limiter = createFailureLimiter({ clock: time, max: 3, windowMs: 60_000 });
    expect([limiter.fail('a'), limiter.fail('a'), limiter.fail('a')]).toEqual([
      undefined,
      undefined,
      undefined,
    ]);
    time.advance(15_000);
    expect(limiter.fail('a')).toBe(45);
    expect(limiter.fail('b')).toBeUndefined();
    time.advance(45_000);
    expect(limiter.fail('a')).toBeUndefined();
  });

  it('keeps a bounded number of clients, dropping the oldest windows first', () => {
    const time = clock(0);
    const limiter = createFailureLimiter({ clock: time, max: 1, windowMs: 60_000, maxClients: 2 });
    limiter.fail('a');
    limiter.fail('b');
    limiter.fail('c');
    // a's window made room for c, so a starts afresh; c's window still counts.
    expect(limiter.fail('a')).toBeUndefined();
    expect(limiter.fail('c')).toBe(60);
  });
});
