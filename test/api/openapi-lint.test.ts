// The OpenAPI document passes two independent linters, Redocly (`recommended`, redocly.yaml) and
// Spectral (`spectral:oas`, .spectral.yaml), with no error and no warning. Generated clients and
// docs are only as good as the document, so every route is held to it: a route without an
// operationId, a description, a declared tag or a documented response fails here.
import { execFile } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { childEnv } from '../support/child-env.ts';
import { createTestApp, type TestApp } from '../support/test-app.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');
const BIN = path.join(ROOT, 'node_modules/.bin');
const execFileAsync = promisify(execFile);

interface Finding {
  readonly linter: string;
  readonly severity: string;
  readonly rule: string;
  readonly where: string;
  readonly message: string;
}

/** Runs a linter's CLI with this process's Node. Linters exit non-zero on findings; the report says which. */
async function run(bin: string, args: readonly string[]): Promise<string> {
  const env = childEnv({
    REDOCLY_TELEMETRY: 'off',
    REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true',
    SCARF_ANALYTICS: 'false',
    DO_NOT_TRACK: '1',
    NO_COLOR: '1',
  });
  try {
    const { stdout } = await execFileAsync(process.execPath, [path.join(BIN, bin), ...args], {
      cwd: ROOT,
      env,
      maxBuffer: 32 * 1024 * 1024,
      timeout: 60_000,
    });
    return stdout;
  } catch (error) {
    const { stdout, stderr } = error as { stdout?: string; stderr?: string };
    if (stdout !== undefined && stdout !== '') return stdout;
    throw new Error(`${bin} did not report: ${stderr ?? String(error)}`, { cause: error });
  }
}

async function redocly(document: string): Promise<RedoclyReport> {
  const config = `--config=${path.join(ROOT, 'redocly.yaml')}`;
  return JSON.parse(await run('redocly', ['lint', document, '--format=json', config])) as RedoclyReport;
}

/** Spectral prints a summary line after its JSON, so its report goes to a file. */
async function spectral(document: string): Promise<SpectralResult[]> {
  const output = `${document}.spectral.json`;
  const ruleset = `--ruleset=${path.join(ROOT, '.spectral.yaml')}`;
  await run('spectral', ['lint', document, '--format=json', ruleset, `--output=${output}`]);
  return JSON.parse(await fs.readFile(output, 'utf8')) as SpectralResult[];
}

interface RedoclyReport {
  problems: { ruleId: string; severity: string; message: string; location: { pointer?: string }[] }[];
}
interface SpectralResult {
  code: string;
  severity: number;
  message: string;
  path: string[];
}
const SPECTRAL_SEVERITY = ['error', 'warn', 'info', 'hint'];

describe('OpenAPI document lint', () => {
  let t: TestApp;
  let dir: string;
  let file: string;
  beforeAll(async () => {
    t = await createTestApp('pglite');
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'refhub-openapi-'));
    file = path.join(dir, 'openapi.json');
    await fs.writeFile(file, JSON.stringify(t.app.swagger(), null, 2));
  });
  afterAll(async () => {
    await fs.rm(dir, { recursive: true, force: true });
    await t.close();
  });

  it('has no error and no warning under Redocly recommended and Spectral spectral:oas', async () => {
    const [redoclyReport, spectralResults] = await Promise.all([redocly(file), spectral(file)]);
    const findings: Finding[] = [
      ...redoclyReport.problems.map((p) => ({
        linter: 'redocly',
        severity: p.severity,
        rule: p.ruleId,
        where: p.location.map((l) => l.pointer ?? '').join(' '),
        message: p.message,
      })),
      ...spectralResults.map((r) => ({
        linter: 'spectral',
        severity: SPECTRAL_SEVERITY[r.severity] ?? String(r.severity),
        rule: r.code,
        where: r.path.join('.'),
        message: r.message,
      })),
    ];
    const report = findings
      .map((f) => `${f.linter} ${f.severity} ${f.rule} at ${f.where}: ${f.message}`)
      .join('\n');
    expect(
      findings.filter((f) => f.severity === 'error' || f.severity === 'warn' || f.severity === 'warning'),
      report,
    ).toEqual([]);
  });

  it('the linters see a bad document: an operation without operationId, description or declared tag', async () => {
    // The lint above proves nothing if the linters do not run; this one must fail.
    const broken = JSON.parse(JSON.stringify(t.app.swagger())) as {
      paths: Record<string, Record<string, Record<string, unknown>>>;
    };
    const get = broken.paths['/api/v1/referrals/{referralId}']!.get!;
    delete get.operationId;
    delete get.description;
    get.tags = ['Undeclared'];
    const brokenFile = path.join(dir, 'broken.json');
    await fs.writeFile(brokenFile, JSON.stringify(broken));
    const [redoclyReport, spectralResults] = await Promise.all([redocly(brokenFile), spectral(brokenFile)]);
    expect(redoclyReport.problems.map((p) => p.ruleId)).toContain('operation-operationId');
    expect(spectralResults.map((r) => r.code)).toEqual(
      expect.arrayContaining(['operation-operationId', 'operation-description', 'operation-tag-defined']),
    );
  });
});
