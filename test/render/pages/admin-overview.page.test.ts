// The /admin page as pure rendering: what it says for each state of the background work, that it runs
// no script and loads nothing, and that everything it prints is escaped.
import * as cheerio from 'cheerio';
import { describe, expect, it } from 'vitest';
import { displayTimeIn } from '../../../src/domain/display-time.ts';
import type { OpsOverview } from '../../../src/services/admin-overview.service.ts';
import {
  answerOf,
  formatAge,
  overviewPageCsp,
  renderOverviewPage,
} from '../../../src/render/pages/admin-overview.page.ts';

/** The display zone, as every page a person reads has it. */
const DISPLAY = displayTimeIn('Asia/Singapore');

const REFERRAL = '01970a4e-1c2b-7d3e-8f40-123456789abc';
const counts = { waiting: 1, active: 2, delayed: 3, failed: 4, completed: 5 };

function overview(fields: Partial<OpsOverview> = {}): OpsOverview {
  return {
    at: new Date('2026-06-04T03:15:07.123Z'),
    outbox: { count: 0, oldestAgeSeconds: null },
    queueHealth: {
      backend: 'redis',
      reachable: true,
      detail: 'maxmemory-policy noeviction',
      problem: undefined,
    },
    queues: [
      { name: 'ehr-forward', counts },
      { name: 'reminders', counts: { waiting: 0, active: 0, delayed: 7, failed: 0, completed: 0 } },
    ],
    failedForwards: { total: 0, rows: [], limit: 50 },
    ehrCircuit: CLOSED,
    disabledWebhooks: [],
    incidents: [],
    ...fields,
  };
}

const CLOSED = {
  state: 'closed',
  failures: 0,
  openedAt: null,
  probeAt: null,
  probeIntervalMs: null,
  probingUntil: null,
} as const;

function render(o: OpsOverview, writable = false) {
  const page = renderOverviewPage({
    nonce: 'bm9uY2U=',
    overview: o,
    writable,
    keyPrefix: 'rfh_test_AbCdEfGh',
    requestId: 'req-1',
    displayTime: DISPLAY,
  });
  return { page, $: cheerio.load(page) };
}

const stat = ($: cheerio.CheerioAPI, id: string) => ({
  value: $(`[data-stat="${id}"] .stat__value`).text().trim(),
  tone: $(`[data-stat="${id}"]`).attr('data-tone'),
});

describe('formatting', () => {
  it.each([
    [0, '0 s'],
    [59.9, '59 s'],
    [125, '2 min 5 s'],
    [3600, '1 h 0 min'],
    [7500, '2 h 5 min'],
    [3 * 86_400 + 4 * 3600 + 59, '3 d 4 h'],
    [-5, '0 s'],
  ])('formatAge(%s) is %s', (seconds, text) => {
    expect(formatAge(seconds)).toBe(text);
  });

  it('writes times as every page does, in the display zone with the zone named', () => {
    const { $ } = render(overview());
    expect($('.page-lede').text()).toContain('As of Thu 4 Jun 2026, 11:15 SGT');
    expect($('.page-lede').text()).toContain(`As of ${DISPLAY.dateTime(overview().at)}`);
    // The format of another zone is the same, with that zone.
    const london = renderOverviewPage({
      nonce: 'bm9uY2U=',
      overview: overview(),
      writable: false,
      keyPrefix: 'rfh_test_AbCdEfGh',
      requestId: 'req-1',
      displayTime: displayTimeIn('Europe/London'),
    });
    expect(cheerio.load(london)('.page-lede').text()).toContain('As of Thu 4 Jun 2026, 04:15 BST');
  });

  it('prints the EHR’s answer as the ledger has it', () => {
    const row = { referralId: REFERRAL, lastAttemptAt: null, attempts: 1, version: 2 };
    expect(answerOf({ ...row, httpStatus: 422, errorCode: null })).toBe('HTTP 422');
    expect(answerOf({ ...row, httpStatus: null, errorCode: 'UND_ERR_SOCKET' })).toBe('UND_ERR_SOCKET');
    expect(answerOf({ ...row, httpStatus: null, errorCode: null })).toBe('not recorded');
  });
});

describe('the overview page', () => {
  it('is calm when nothing waits: empty outbox, healthy Redis, no failed forwards', () => {
    const { $ } = render(overview());
    expect(stat($, 'outbox-backlog')).toEqual({ value: '0', tone: 'ok' });
    expect(stat($, 'outbox-oldest')).toEqual({ value: 'None', tone: 'ok' });
    expect(stat($, 'failed-forwards')).toEqual({ value: '0', tone: 'ok' });
    expect(stat($, 'redis')).toEqual({ value: 'Healthy', tone: 'ok' });
    expect($('[data-failed-none]')).toHaveLength(1);
    expect($('[data-queues-problem]')).toHaveLength(0);
    expect(
      $('[data-queue="ehr-forward"] [data-count]')
        .map((_i, el) => $(el).text())
        .get(),
    ).toEqual(['1', '2', '3', '4', '5']);
    expect($('[data-mode]').text()).toBe('Dashboard is read-only');
    expect($('[data-dashboard-link]').attr('href')).toBe('/admin/queues');
  });

  it('flags a backlog whose oldest row is stuck, and lists failed forwards with their last answer', () => {
    const { $ } = render(
      overview({
        outbox: { count: 3, oldestAgeSeconds: 125 },
        failedForwards: {
          total: 51,
          limit: 50,
          rows: [
            {
              referralId: REFERRAL,
              lastAttemptAt: new Date('2026-06-04T03:00:00.000Z'),
              attempts: 10,
              httpStatus: 503,
              errorCode: null,
              version: 4,
            },
          ],
        },
      }),
      true,
    );
    expect(stat($, 'outbox-backlog')).toEqual({ value: '3', tone: 'attention' });
    expect(stat($, 'outbox-oldest')).toEqual({ value: '2 min 5 s', tone: 'alert' });
    expect(stat($, 'failed-forwards')).toEqual({ value: '51', tone: 'alert' });
    const row = $(`[data-failed-forward="${REFERRAL}"] td`)
      .map((_i, el) => $(el).text().trim())
      .get();
    expect(row).toEqual([REFERRAL, 'Thu 4 Jun 2026, 11:00 SGT', 'HTTP 503', '10']);
    expect($('main').text()).toContain('The 50 most recent of 51 are shown.');
    expect($('[data-mode]').text()).toBe('Dashboard may change jobs');
    expect($('main').text()).toContain('This dashboard may retry jobs.');
  });

  it('says Redis is unreachable, and why, when it could not be asked', () => {
    const { $ } = render(
      overview({
        queueHealth: {
          backend: 'redis',
          reachable: false,
          detail: undefined,
          problem: 'Redis did not answer within 4 seconds',
        },
        queues: [
          { name: 'ehr-forward', counts: undefined },
          { name: 'reminders', counts: undefined },
        ],
      }),
    );
    expect(stat($, 'redis')).toEqual({ value: 'Unreachable', tone: 'alert' });
    expect($('[data-queues-problem]').text()).toContain('Redis did not answer within 4 seconds');
    expect($('[data-queue="ehr-forward"] [data-count]').first().text()).toBe('–');
    expect($('main').text()).toContain('Retrying needs OPS_DASHBOARD_WRITE=true');
  });

  it('warns about an eviction policy that could drop jobs', () => {
    const { $ } = render(
      overview({
        queueHealth: {
          backend: 'redis',
          reachable: true,
          detail: 'maxmemory-policy allkeys-lru',
          problem: 'policy is allkeys-lru',
        },
      }),
    );
    expect(stat($, 'redis')).toEqual({ value: 'Needs attention', tone: 'attention' });
    expect($('[data-stat="redis"] .stat__note').text()).toBe('maxmemory-policy allkeys-lru');
  });

  it('lists the open incidents with what they mean, since when, and the runbook; none when calm', () => {
    expect(render(overview()).$('[data-incidents-none]').text()).toBe('No incident is open.');
    const { $ } = render(
      overview({
        incidents: [
          {
            id: '01970a4e-1c2b-7d3e-8f40-000000000001',
            condition: 'retention-failing',
            openedAt: new Date('2026-06-04T01:00:00.000Z'),
            resolvedAt: null,
            evidence: { lastRunFailed: true },
          },
        ],
      }),
    );
    const row = $('tr[data-incident="retention-failing"]');
    expect(row.find('[data-label="What it means"]').text()).toContain('The last retention run failed');
    expect(row.find('[data-label="Open since"]').text()).toBe('Thu 4 Jun 2026, 09:00 SGT');
    expect(row.find('[data-label="What to do"]').text()).toBe('docs/operations.md#refhubretentionfailing');
  });

  it('runs no script, loads nothing and escapes what it prints', () => {
    const hostile = '<script>alert(1)</script>';
    const { page, $ } = render(
      overview({
        queueHealth: { backend: 'redis', reachable: false, detail: undefined, problem: hostile },
        failedForwards: {
          total: 1,
          limit: 50,
          rows: [
            {
              referralId: REFERRAL,
              lastAttemptAt: null,
              attempts: 1,
              httpStatus: null,
              errorCode: hostile,
              version: 1,
            },
          ],
        },
      }),
    );
    expect($('script')).toHaveLength(0);
    expect(page).not.toContain(hostile);
    expect($('[data-answer]').text()).toBe(hostile);
    expect($('style').attr('nonce')).toBe('bm9uY2U=');
    expect($('[src], iframe, object, embed, form, base')).toHaveLength(0);
    expect(
      $('link')
        .map((_i, el) => $(el).attr('href'))
        .get(),
    ).toEqual(['data:,']);
    expect(
      $('a')
        .map((_i, el) => $(el).attr('href'))
        .get()
        .filter((href) => !href.startsWith('/admin/')),
    ).toEqual(['#main', '/admin']);
  });

  it('has a policy that allows its own nonce’d stylesheet and nothing else', () => {
    expect(overviewPageCsp('abc')).toBe(
      "default-src 'none'; style-src 'nonce-abc'; img-src 'self' data:; form-action 'none'; base-uri 'none'; frame-ancestors 'none'",
    );
  });
});

describe('the EHR circuit', () => {
  it('says forwarding runs while it is closed, and shows no banner', () => {
    const { $ } = render(overview());
    expect(stat($, 'ehr-circuit')).toEqual({ value: 'Closed', tone: 'ok' });
    expect($('[data-ehr-circuit]')).toHaveLength(0);
  });

  it('says forwarding is paused while it is open, since when, and when it probes next', () => {
    const { $ } = render(
      overview({
        ehrCircuit: {
          ...CLOSED,
          state: 'open',
          openedAt: new Date('2026-06-04T03:10:00.000Z'),
          probeAt: new Date('2026-06-04T03:16:00.000Z'),
          probeIntervalMs: 60_000,
        },
      }),
    );
    expect(stat($, 'ehr-circuit')).toEqual({ value: 'Open', tone: 'alert' });
    const banner = $('[data-ehr-circuit="open"]').text().replace(/\s+/g, ' ');
    expect(banner).toContain('Forwarding to the EHR is paused');
    expect(banner).toContain('opened at Thu 4 Jun 2026, 11:10 SGT');
    expect(banner).toContain('next at Thu 4 Jun 2026, 11:16 SGT');
    expect(banner).toContain('none is lost or counted as failed');
  });
});

describe('disabled webhook subscriptions', () => {
  it('lists the subscriptions refhub disabled, with the institution and why, and says when there are none', () => {
    const none = render(overview());
    expect(none.$('[data-disabled-webhooks-none]').length).toBe(1);
    const id = '01970a4e-1c2b-7d3e-8f40-0000000000aa';
    const { $ } = render(
      overview({
        disabledWebhooks: [
          {
            id,
            institution: { idType: 'hci', id: 'S9001Z' },
            url: 'https://hooks.example.org/refhub',
            eventTypes: null,
            description: null,
            disabledAt: new Date('2026-06-04T03:00:00.000Z'),
            disabledReason: 'failing',
            failingSince: new Date('2026-05-30T03:00:00.000Z'),
            previousSecretExpiresAt: null,
            createdAt: new Date('2026-05-01T00:00:00.000Z'),
            updatedAt: new Date('2026-05-01T00:00:00.000Z'),
          },
        ],
      }),
    );
    const row = $(`[data-disabled-webhook="${id}"]`);
    expect(row.text()).toContain('hci:S9001Z');
    expect(row.text()).toContain('kept failing');
    const times = row
      .find('td.nowrap')
      .map((_i, el) => $(el).text().trim())
      .get();
    expect(times).toEqual(['Thu 4 Jun 2026, 11:00 SGT', 'Sat 30 May 2026, 11:00 SGT']);
    // The URL is the institution's: it is not shown.
    expect($.html()).not.toContain('hooks.example.org');
  });
});
