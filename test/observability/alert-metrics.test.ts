// The metrics the alert rules read that refhub exports for them (deploy/prometheus/refhub-alerts.yml):
// the audit sealer's rounds, clamd's reachability (exposed only where a scanner is configured, so a
// process without one does not read as "down") and the incidents open now.
import { describe, expect, it } from 'vitest';
import { createMetrics, type MetricSources } from '../../src/observability/metrics.ts';

const sources: MetricSources = {
  queueCounts: () => Promise.resolve({}),
  outboxBacklog: () => Promise.resolve({ count: 0, oldestAgeSeconds: null }),
  ehrCircuitOpen: () => Promise.resolve(false),
};

const sample = (text: string, name: string) =>
  text
    .split('\n')
    .filter((line) => line.startsWith(`${name} `) || line.startsWith(`${name}{`))
    .map((line) => line.slice(line.lastIndexOf(' ') + 1));

describe('the metrics the alert rules read', () => {
  it('counts the audit sealer’s failed rounds and keeps the time of its last success', async () => {
    const metrics = createMetrics();
    metrics.auditSealed('failed', new Date('2030-01-01T00:00:00Z'));
    metrics.auditSealed('failed', new Date('2030-01-01T00:00:05Z'));
    metrics.auditSealed('succeeded', new Date('2030-01-01T00:00:10Z'));
    const text = await metrics.registry.metrics();
    expect(sample(text, 'refhub_audit_checkpoint_failures_total')).toEqual(['2']);
    expect(sample(text, 'refhub_audit_checkpoint_last_success_timestamp_seconds')).toEqual([
      String(Date.parse('2030-01-01T00:00:10Z') / 1000),
    ]);
  });

  it('says whether clamd answers only where a scanner is configured', async () => {
    const without = createMetrics();
    without.setSources(sources);
    expect(sample(await without.registry.metrics(), 'refhub_scanner_up')).toEqual([]);

    let reachable = true;
    const withScanner = createMetrics();
    withScanner.setSources({ ...sources, scannerReachable: () => Promise.resolve(reachable) });
    expect(sample(await withScanner.registry.metrics(), 'refhub_scanner_up')).toEqual(['1']);
    reachable = false;
    expect(sample(await withScanner.registry.metrics(), 'refhub_scanner_up')).toEqual(['0']);
  });

  it('shows each open incident by its condition', async () => {
    const metrics = createMetrics();
    metrics.setSources({ ...sources, openIncidents: () => Promise.resolve(['ehr-circuit-open']) });
    const text = await metrics.registry.metrics();
    expect(text).toContain('refhub_incidents_open{condition="ehr-circuit-open"} 1');
  });
});
