// The pure parts of events and webhooks: the retry schedule's setting and waits, the signature as the
// `standardwebhooks` package computes it, and the feed's cursor.
import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { ConfigError, DEFAULT_WEBHOOK_RETRY_SCHEDULE_MS, loadConfig } from '../../../src/config.ts';
import { decodeCursor, encodeCursor } from '../../../src/services/events.service.ts';
import { newSigningSecret, signMessage } from '../../../src/domain/webhooks-signature.ts';
import { webhookBackoff } from '../../../src/workers/webhooks/webhooks.worker.ts';

describe('WEBHOOK_RETRY_SCHEDULE', () => {
  it('defaults to the schedule after an immediate first attempt: 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h', () => {
    expect(loadConfig({}).webhookRetryScheduleMs).toEqual(DEFAULT_WEBHOOK_RETRY_SCHEDULE_MS);
    expect(DEFAULT_WEBHOOK_RETRY_SCHEDULE_MS.map((ms) => ms / 1000)).toEqual([
      5, 300, 1800, 7200, 18000, 36000, 36000,
    ]);
  });

  it('reads durations in ms, s, m and h', () => {
    expect(loadConfig({ WEBHOOK_RETRY_SCHEDULE: '50ms, 2s,3m,1h' }).webhookRetryScheduleMs).toEqual([
      50, 2000, 180_000, 3_600_000,
    ]);
  });

  it.each(['5', '5x', '1d', '-5s', '5s,,5s', '8d'])('refuses %j, naming the variable', (value) => {
    expect(() => loadConfig({ WEBHOOK_RETRY_SCHEDULE: value })).toThrow(ConfigError);
    expect(() => loadConfig({ WEBHOOK_RETRY_SCHEDULE: value })).toThrow(/^WEBHOOK_RETRY_SCHEDULE: /);
  });

  it('refuses a disable-after of zero and a timeout past two minutes', () => {
    expect(() => loadConfig({ WEBHOOK_DISABLE_AFTER_SECONDS: '0' })).toThrow(/WEBHOOK_DISABLE_AFTER_SECONDS/);
    expect(() => loadConfig({ WEBHOOK_ATTEMPT_TIMEOUT_SECONDS: '121' })).toThrow(
      /WEBHOOK_ATTEMPT_TIMEOUT_SECONDS/,
    );
  });
});

describe('webhookBackoff', () => {
  const schedule = [5_000, 300_000, 1_800_000];
  it('waits each step of the schedule in turn, within ±10%', () => {
    for (const [attemptsMade, base] of schedule.entries()) {
      expect(webhookBackoff(schedule, attemptsMade + 1, () => 0)).toBe(Math.round(base * 0.9));
      expect(webhookBackoff(schedule, attemptsMade + 1, () => 1)).toBe(Math.round(base * 1.1));
    }
  });
});

describe('signatures', () => {
  it('signs as the standardwebhooks package does, so its verify accepts them', () => {
    const secret = newSigningSecret();
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    const at = new Date('2026-06-04T03:15:00.000Z');
    const body = '{"type":"referral.cancelled"}';
    const mine = signMessage(secret, 'evt-1', Math.floor(at.getTime() / 1000), body);
    expect(mine).toBe(new Webhook(secret).sign('evt-1', at, body));
  });
});

describe('feed cursors', () => {
  it('round-trip and refuse anything else with 400 naming query.after', () => {
    const at = { xid: '18446744073709551615', position: '9223372036854775807' };
    expect(decodeCursor(encodeCursor(at))).toEqual(at);
    for (const bad of [
      '',
      '!!',
      Buffer.from('1:2').toString('base64url'),
      Buffer.from('a.b').toString('base64url'),
    ]) {
      expect(() => decodeCursor(bad)).toThrow(/query\.after/);
    }
  });
});
