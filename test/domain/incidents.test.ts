// What a sweep does with what it saw (domain/incidents.ts): a condition that becomes true opens an
// incident, one that stays true only keeps its evidence, one that is false again resolves it, and a
// condition not looked at (its look failed, or it is not watched) changes nothing. The retry wait of
// an undelivered event doubles from its base to its cap.
import { describe, expect, it } from 'vitest';
import {
  incidentEventBody,
  incidentEventId,
  incidentSteps,
  OPS_WEBHOOK_RETRY_BASE_MS,
  OPS_WEBHOOK_RETRY_MAX_MS,
  opsWebhookBackoffMs,
} from '../../src/domain/incidents.ts';

describe('incident steps', () => {
  const open = [{ id: 'i-1', condition: 'ehr-circuit-open' as const }];

  it('opens where a condition becomes true, and nothing where it stays false', () => {
    expect(
      incidentSteps(
        [],
        [
          { condition: 'outbox-stalled', active: true, evidence: { oldestAgeSeconds: 400 } },
          { condition: 'scanner-unreachable', active: false, evidence: { reachable: true } },
        ],
      ),
    ).toEqual([{ kind: 'open', condition: 'outbox-stalled', evidence: { oldestAgeSeconds: 400 } }]);
  });

  it('keeps an open incident while its condition stays true, and resolves it once false', () => {
    expect(
      incidentSteps(open, [{ condition: 'ehr-circuit-open', active: true, evidence: { open: true } }]),
    ).toEqual([{ kind: 'keep', id: 'i-1', evidence: { open: true } }]);
    expect(
      incidentSteps(open, [{ condition: 'ehr-circuit-open', active: false, evidence: { open: false } }]),
    ).toEqual([{ kind: 'resolve', id: 'i-1', evidence: { open: false } }]);
  });

  it('leaves an incident whose condition was not looked at as it is', () => {
    expect(incidentSteps(open, [])).toEqual([]);
  });
});

describe('the ops webhook', () => {
  it('waits twice as long after each failure, from its base to its cap', () => {
    const waits = [1, 2, 3, 20].map(opsWebhookBackoffMs);
    expect(waits.slice(0, 3)).toEqual([
      OPS_WEBHOOK_RETRY_BASE_MS,
      2 * OPS_WEBHOOK_RETRY_BASE_MS,
      4 * OPS_WEBHOOK_RETRY_BASE_MS,
    ]);
    expect(waits[3]).toBe(OPS_WEBHOOK_RETRY_MAX_MS);
  });

  it('lays out an event as a delivery is, with an ID that names the incident and the event', () => {
    const at = new Date('2030-03-01T09:00:00.000Z');
    const body = JSON.parse(
      incidentEventBody(
        'incident.resolved',
        {
          id: 'i-1',
          condition: 'scanner-unreachable',
          openedAt: at,
          resolvedAt: at,
          evidence: { reachable: true },
        },
        at,
      ),
    ) as Record<string, unknown>;
    expect(body).toEqual({
      type: 'incident.resolved',
      timestamp: at.toISOString(),
      data: {
        id: 'i-1',
        condition: 'scanner-unreachable',
        alert: 'RefhubScannerDown',
        summary: 'The attachment scanner (clamd) does not answer',
        openedAt: at.toISOString(),
        resolvedAt: at.toISOString(),
        evidence: { reachable: true },
        runbook: 'docs/operations.md#refhubscannerdown',
      },
    });
    expect(incidentEventId('i-1', 'incident.opened')).toBe('i-1.opened');
  });
});
