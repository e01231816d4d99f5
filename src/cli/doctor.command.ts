// `refhub doctor`: checks an installation the way an operator would before trusting it with
// referrals, and says for each check whether it passed, failed or was not checked, and why, one line
// each. It opens what it checks (through the openers the composition root gives it) and closes it
// again, so it can run beside a live PostgreSQL installation at any time. With embedded PGlite it
// does not touch a DATA_DIR that a running refhub holds: it names the holder, lists the checks it
// could not make, and never says that every check passed. It exits 1 when a check fails.
//
// It checks with the settings of the shell it runs in, which need not be those a running refhub was
// started with. `refhub doctor --server URL` asks the running process instead (`GET /doctor`, with
// an ops key): its own checks and its effective settings, secrets only as set or unset.
import { describeConfig, type Config, type SettingView } from '../config.ts';
import { DataDirLockedError, type LockHolder } from '../db/data-dir-lock.ts';
import type { Store } from '../db/database.ts';
import {
  CHECK_STATUSES,
  ehrUrlCheck,
  failed,
  notChecked,
  passed,
  pdfCheckerCheck,
  scannerCheck,
  storeCheckNames,
  storeChecks,
  type CheckStatus,
  type DoctorCheck,
  type DoctorReport,
  type ScannerPing,
} from '../services/doctor-checks.ts';
import { fail } from './failure.ts';
import { plural } from './plural.ts';

export interface DoctorDeps {
  readonly config: Config;
  /** Opens the configured store without migrating it: PGlite in DATA_DIR, or one PostgreSQL connection. */
  readonly openStore: () => Promise<Store>;
  /**
   * Checks the queues where QUEUE_BACKEND puts them: Redis, or the database of `store` (undefined
   * when it could not be opened).
   */
  readonly checkQueues: (store: Store | undefined) => Promise<DoctorCheck>;
  /** Asks clamd at ATTACHMENT_SCANNER for PONG (one connection, closed again). */
  readonly pingScanner: ScannerPing;
}

/** What the doctor found in this shell, and the refhub that holds DATA_DIR, if one does. */
export interface DoctorFindings {
  readonly checks: DoctorCheck[];
  readonly holder: LockHolder | undefined;
}

/** The store's checks and the queues', made while the store is open. */
async function localStoreChecks({ config, openStore, checkQueues }: DoctorDeps): Promise<DoctorFindings> {
  const engine = config.databaseUrl === undefined ? 'pglite' : 'postgres';
  let store: Store;
  try {
    store = await openStore();
  } catch (error) {
    if (error instanceof DataDirLockedError) {
      const { holder } = error;
      const why = `PGlite in DATA_DIR is held by the running refhub, process ${holder.pid} ("${holder.command}")`;
      return {
        holder,
        checks: [
          passed(
            'pglite lock',
            `DATA_DIR ${config.dataDir} is held by process ${holder.pid} ("${holder.command}")`,
          ),
          ...storeCheckNames('pglite').map((name) => notChecked(name, why)),
          await checkQueues(undefined),
        ],
      };
    }
    return {
      holder: undefined,
      checks: [
        failed('database', `cannot open: ${(error as Error).message}`),
        ...storeCheckNames(engine)
          .slice(1)
          .map((name) => notChecked(name, 'the database could not be opened')),
        await checkQueues(undefined),
      ],
    };
  }
  try {
    const lock =
      store.engine === 'pglite'
        ? [passed('pglite lock', `DATA_DIR ${config.dataDir} is free; no refhub holds it`)]
        : [];
    const checks = await storeChecks(store.probe, store.engine);
    return { holder: undefined, checks: [...lock, ...checks, await checkQueues(store)] };
  } finally {
    await store.close();
  }
}

/** The checks, made with this shell's settings. */
export async function runDoctor(deps: DoctorDeps): Promise<DoctorFindings> {
  const [store, scanner, pdf] = await Promise.all([
    localStoreChecks(deps),
    scannerCheck(deps.config, deps.pingScanner),
    pdfCheckerCheck(deps.config),
  ]);
  // Where forms go, which scanner scans and which qpdf checks PDFs are settings, and this shell's
  // need not be the running refhub's: say whose they are.
  const ehr = await ehrUrlCheck(deps.config);
  const whose = store.holder === undefined ? 'this shell' : 'this shell; the running refhub may have its own';
  return {
    holder: store.holder,
    checks: [
      ...store.checks,
      { ...ehr, detail: `${ehr.detail} (EHR_URL of ${whose})` },
      { ...scanner, detail: `${scanner.detail} (ATTACHMENT_SCANNER of ${whose})` },
      { ...pdf, detail: `${pdf.detail} (QPDF_PATH of ${whose})` },
    ],
  };
}

const SHOWN_STATUS: Readonly<Record<CheckStatus, string>> = {
  passed: 'passed',
  failed: 'FAILED',
  'not-checked': 'not checked',
};
const STATUS_WIDTH = Math.max(...CHECK_STATUSES.map((s) => SHOWN_STATUS[s].length));

/** One line per check: its status, its name and what was found (or why it was not checked). */
export function checkLines(checks: readonly DoctorCheck[]): string {
  const width = Math.max(0, ...checks.map((c) => c.name.length));
  return checks
    .map((c) => `${SHOWN_STATUS[c.status].padEnd(STATUS_WIDTH)}  ${c.name.padEnd(width)}  ${c.detail}\n`)
    .join('');
}

/** "Every check passed." only when every check was made and passed; otherwise the counts. */
export function summaryOf(checks: readonly DoctorCheck[]): string {
  const count = (status: CheckStatus) => checks.filter((c) => c.status === status).length;
  if (count('passed') === checks.length) return 'Every check passed.';
  const parts = [`${plural(count('passed'), 'check')} passed`];
  if (count('not-checked') > 0) parts.push(`${count('not-checked')} not checked`);
  if (count('failed') > 0) parts.push(`${count('failed')} failed`);
  return `${parts.join(', ')}.`;
}

/** Runs the checks with this shell's settings and prints them; the exit status is 1 when one failed. */
export async function doctor(deps: DoctorDeps): Promise<void> {
  const { checks, holder } = await runDoctor(deps);
  process.stdout.write(
    "Checked with this shell's settings; a running refhub may have others (see `refhub doctor --server`).\n",
  );
  process.stdout.write(checkLines(checks));
  process.stdout.write(`${summaryOf(checks)}\n`);
  if (holder !== undefined) {
    process.stdout.write(
      `The running refhub (process ${holder.pid}) can make these checks itself and show its settings: ` +
        'run `refhub doctor --server URL` with the URL it serves at and an ops key in REFHUB_OPS_KEY.\n',
    );
  }
  process.exitCode = checks.some((c) => c.status === 'failed') ? 1 : 0;
}

/** How long the server may take to answer: its own checks are bounded by 3 seconds each. */
const SERVER_TIMEOUT_MS = 15_000;

/** Asks a running refhub for its report; undefined `opsKey` is refused before anything is sent. */
export async function askServer(server: string, opsKey: string | undefined): Promise<DoctorReport> {
  if (opsKey === undefined) fail('--server needs an ops key: set REFHUB_OPS_KEY (or pass --ops-key)');
  let url: URL;
  try {
    url = new URL('doctor', server.endsWith('/') ? server : `${server}/`);
  } catch {
    fail(`--server: ${server} is not a URL (for example http://127.0.0.1:3000)`);
  }
  let response: Response;
  try {
    response = await fetch(url, {
      headers: { authorization: `ApiKey ${opsKey}`, accept: 'application/json' },
      signal: AbortSignal.timeout(SERVER_TIMEOUT_MS),
    });
  } catch (error) {
    const cause = (error as { cause?: { code?: string } }).cause?.code ?? (error as Error).name;
    fail(`cannot reach refhub at ${url.origin} (${cause})`);
  }
  if (response.status === 401) fail(`${url.origin} did not accept the ops key: it is unknown or revoked`);
  if (response.status === 403) fail(`${url.origin} refused the key: /doctor is for ops keys only`);
  if (response.status === 404) fail(`${url.href} is not there: is this a refhub of this version?`);
  if (!response.ok) fail(`${url.href} answered HTTP ${response.status}`);
  return (await response.json()) as DoctorReport;
}

/** The server's settings, each marked where this shell's differs. */
function settingLines(server: readonly SettingView[], shell: readonly SettingView[] | undefined): string {
  const shown = (s: SettingView | undefined) =>
    s === undefined ? 'not known' : !s.set ? 'unset' : s.secret ? 'set (secret)' : (s.value ?? '');
  const width = Math.max(0, ...server.map((s) => s.variable.length));
  return server
    .map((s) => {
      const here = shell?.find((h) => h.variable === s.variable);
      const differs =
        shell !== undefined && shown(here) !== shown(s) ? `   (this shell: ${shown(here)})` : '';
      return `  ${s.variable.padEnd(width)}  ${shown(s)}${differs}\n`;
    })
    .join('');
}

/**
 * `refhub doctor --server URL`: the running process's own checks and settings. `shell` is this
 * shell's configuration, when it loads, to mark where it differs from the server's.
 */
export async function doctorServer(
  server: string,
  opsKey: string | undefined,
  shell: Config | undefined,
): Promise<void> {
  const report = await askServer(server, opsKey);
  const store = report.store === 'pglite' ? 'embedded PGlite' : 'PostgreSQL';
  process.stdout.write(`Checked by refhub at ${server} (process ${report.pid}, on ${store}):\n`);
  process.stdout.write(checkLines(report.checks));
  process.stdout.write(`${summaryOf(report.checks)}\n\n`);
  process.stdout.write('Its settings (secrets only as set or unset):\n');
  process.stdout.write(
    settingLines(report.configuration, shell === undefined ? undefined : describeConfig(shell)),
  );
  process.exitCode = report.checks.some((c) => c.status === 'failed') ? 1 : 0;
}
