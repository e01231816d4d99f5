// The Prometheus alert rules (deploy/prometheus/refhub-alerts.yml) as CI holds them: promtool checks
// them and runs their unit tests (refhub-alerts.test.yml), and a rule file with a broken expression, or
// a rule changed under its tests, fails. Every metric a rule reads is one src/observability/metrics.ts
// defines, so a metric renamed in the code cannot leave an alert that never fires; every alert has its
// `for:`, severity, summary, description and a runbook section in docs/operations.md, and unit tests.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { withPromtool } from '../support/servers.ts';

const ROOT = path.resolve(import.meta.dirname, '..', '..');
const RULES_DIR = path.join(ROOT, 'deploy', 'prometheus');
const RULES = path.join(RULES_DIR, 'refhub-alerts.yml');
const RULE_TESTS = path.join(RULES_DIR, 'refhub-alerts.test.yml');

interface Rule {
  readonly alert: string;
  readonly expr: string;
  readonly for?: string;
  readonly labels?: Readonly<Record<string, string>>;
  readonly annotations?: Readonly<Record<string, string>>;
}

const rules = (parse(fs.readFileSync(RULES, 'utf8')) as { groups: { rules: Rule[] }[] }).groups.flatMap(
  (g) => g.rules,
);

const promtool = (args: readonly string[], cwd = RULES_DIR) =>
  spawnSync('promtool', args, { cwd, encoding: 'utf8' });

const work = fs.mkdtempSync(path.join(os.tmpdir(), 'refhub-rules-'));
afterAll(() => {
  fs.rmSync(work, { recursive: true, force: true });
});

/** The rules and their tests copied to `dir`, the rules changed by `change`. */
function copyWith(dir: string, change: (rules: string) => string): string {
  const to = path.join(work, dir);
  fs.mkdirSync(to);
  const original = fs.readFileSync(RULES, 'utf8');
  const changed = change(original);
  expect(changed).not.toBe(original);
  fs.writeFileSync(path.join(to, 'refhub-alerts.yml'), changed);
  fs.copyFileSync(RULE_TESTS, path.join(to, 'refhub-alerts.test.yml'));
  return to;
}

describe.runIf(withPromtool)('promtool', () => {
  it('checks the rules', () => {
    const run = promtool(['check', 'rules', 'refhub-alerts.yml']);
    expect(run.stderr).toBe('');
    expect(run.stdout).toContain(`SUCCESS: ${rules.length} rules found`);
    expect(run.status).toBe(0);
  });

  it('runs their unit tests: each alert quiet, firing once, then resolved', () => {
    const run = promtool(['test', 'rules', 'refhub-alerts.test.yml']);
    expect(run.stdout + run.stderr).toContain('SUCCESS');
    expect(run.status).toBe(0);
  });

  it('fails a rule file with a broken expression', () => {
    const dir = copyWith('broken', (text) =>
      text.replace('max(refhub_ehr_circuit_open) == 1', 'max(refhub_ehr_circuit_open) =='),
    );
    const check = promtool(['check', 'rules', 'refhub-alerts.yml'], dir);
    expect(check.status).not.toBe(0);
    expect(check.stdout + check.stderr).toContain('FAILED');
  });

  it('fails the unit tests of a rule that no longer waits as long as they say', () => {
    const dir = copyWith('changed', (text) =>
      text.replace(/(alert: RefhubScannerDown\n\s+expr: .*\n\s+for: )5m/, '$130m'),
    );
    expect(promtool(['check', 'rules', 'refhub-alerts.yml'], dir).status).toBe(0);
    const run = promtool(['test', 'rules', 'refhub-alerts.test.yml'], dir);
    expect(run.status).not.toBe(0);
    expect(run.stdout + run.stderr).toContain('RefhubScannerDown');
  });
});

describe('the alert rules and the code', () => {
  const metricsSource = fs.readFileSync(path.join(ROOT, 'src', 'observability', 'metrics.ts'), 'utf8');
  const defined = new Set([...metricsSource.matchAll(/name: '(refhub_[a-z0-9_]+)'/g)].map((m) => m[1]));
  const used = new Set(rules.flatMap((r) => [...r.expr.matchAll(/\brefhub_[a-z0-9_]+\b/g)].map((m) => m[0])));

  it('reads only metrics the code defines', () => {
    expect(used.size).toBeGreaterThan(10);
    const unknown = [...used].filter((name) => !defined.has(name));
    expect(unknown).toEqual([]);
  });

  it('gives every alert its wait, severity, words, runbook section and unit tests', () => {
    const operations = fs.readFileSync(path.join(ROOT, 'docs', 'operations.md'), 'utf8');
    const headings = new Set(
      [...operations.matchAll(/^#{2,4} (.+)$/gm)].map((m) =>
        (m[1] ?? '').toLowerCase().replace(/[^a-z0-9-]/g, ''),
      ),
    );
    const tested = new Set(
      (
        parse(fs.readFileSync(RULE_TESTS, 'utf8')) as {
          tests: { alert_rule_test: { alertname: string; exp_alerts: unknown[] }[] }[];
        }
      ).tests.flatMap((t) =>
        t.alert_rule_test.filter((c) => c.exp_alerts.length > 0).map((c) => c.alertname),
      ),
    );
    for (const rule of rules) {
      expect(rule.for, rule.alert).toMatch(/^\d+[smh]$/);
      expect(['critical', 'warning'], rule.alert).toContain(rule.labels?.severity);
      expect(rule.annotations?.summary, rule.alert).toBeTruthy();
      expect(rule.annotations?.description, rule.alert).toBeTruthy();
      expect(rule.annotations?.runbook_url, rule.alert).toBe(
        `docs/operations.md#${rule.alert.toLowerCase()}`,
      );
      expect(headings.has(rule.alert.toLowerCase()), `docs/operations.md has a section ${rule.alert}`).toBe(
        true,
      );
      expect(tested.has(rule.alert), `refhub-alerts.test.yml fires ${rule.alert}`).toBe(true);
    }
  });
});
