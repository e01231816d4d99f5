// The checks of `refhub doctor`, shared by the command (which runs them with the configuration of
// the shell it runs in) and by `GET /doctor` (which runs them inside a serving process, with the
// configuration that process started with). Each check says whether it passed, failed or was not
// checked, and why: a check that could not run is never reported as passed.
import { ConfigError, type Config, type SettingView } from '../config.ts';
import type { DatabaseProbe, Engine } from '../db/database.ts';
import { clamdAddressText, parseClamdAddress, type ClamdAddress } from '../domain/attachments.ts';
import { probePdfChecker } from './attachments/pdf-probe.ts';
import { checkEhrAddress } from './outbound-address.ts';

export const CHECK_STATUSES = ['passed', 'failed', 'not-checked'] as const;
export type CheckStatus = (typeof CHECK_STATUSES)[number];

export interface DoctorCheck {
  readonly name: string;
  readonly status: CheckStatus;
  /** What was found; for a check not made, why it was not. */
  readonly detail: string;
}

/** What a serving process reports of itself (`GET /doctor`), and `refhub doctor --server` reads. */
export interface DoctorReport {
  readonly pid: number;
  readonly store: Engine;
  readonly checks: readonly DoctorCheck[];
  /** Its effective settings; secrets only as set or unset (config.ts, `describeConfig`). */
  readonly configuration: readonly SettingView[];
}

export const passed = (name: string, detail: string): DoctorCheck => ({ name, status: 'passed', detail });
export const failed = (name: string, detail: string): DoctorCheck => ({ name, status: 'failed', detail });
export const notChecked = (name: string, why: string): DoctorCheck => ({
  name,
  status: 'not-checked',
  detail: why,
});

/** PostgreSQL settings that must stay on, or a crash can lose or corrupt committed referrals. */
const DURABILITY = [
  { name: 'fsync', safe: ['on'] },
  { name: 'synchronous_commit', safe: ['on', 'remote_write', 'remote_apply'] },
  { name: 'full_page_writes', safe: ['on'] },
] as const;

/** The names of the checks `storeChecks` makes on `engine`, in order. */
export function storeCheckNames(engine: Engine): string[] {
  return [
    'database',
    'migrations',
    ...(engine === 'postgres' ? DURABILITY.map((s) => `postgres ${s.name}`) : []),
  ];
}

/** What the store checks ask the database. */
export type StoreProbe = Pick<DatabaseProbe, 'ping' | 'isMigrated' | 'setting'>;

async function durabilityChecks(database: StoreProbe): Promise<DoctorCheck[]> {
  const checks: DoctorCheck[] = [];
  for (const setting of DURABILITY) {
    const value = (await database.setting(setting.name)) ?? 'unknown';
    const name = `postgres ${setting.name}`;
    checks.push(
      (setting.safe as readonly string[]).includes(value)
        ? passed(name, value)
        : failed(name, `${value}: a crash can lose committed referrals; set ${setting.name} = on`),
    );
  }
  return checks;
}

/** The database answers, every migration is applied, and on PostgreSQL the durability settings are on. */
export async function storeChecks(probe: StoreProbe, engine: Engine): Promise<DoctorCheck[]> {
  try {
    await probe.ping();
  } catch (error) {
    return [
      failed('database', `no answer: ${(error as Error).message}`),
      ...storeCheckNames(engine)
        .slice(1)
        .map((name) => notChecked(name, 'the database did not answer')),
    ];
  }
  const database = passed('database', engine === 'pglite' ? 'embedded PGlite answers' : 'PostgreSQL answers');
  const migration = (await probe.isMigrated())
    ? passed('migrations', 'every migration is applied')
    : failed('migrations', 'migrations are pending: run `refhub migrate`');
  return [database, migration, ...(engine === 'postgres' ? await durabilityChecks(probe) : [])];
}

/**
 * The queues, named by their backend: in Redis, it answers, never evicts keys and takes writes
 * (queue/connections.ts); in the database, BullMQ's schema answers.
 */
export function queuesCheck(
  backend: { readonly name: 'postgres' | 'redis'; readonly address: string },
  health: { readonly problem: string | undefined; readonly detail: string | undefined },
): DoctorCheck {
  const name = backend.name === 'redis' ? 'redis' : 'queues';
  if (health.problem !== undefined) return failed(name, `${health.problem} (QUEUE_BACKEND=${backend.name})`);
  return passed(
    name,
    backend.name === 'redis'
      ? `QUEUE_BACKEND=redis: ${backend.address} answers, ${health.detail ?? 'maxmemory-policy noeviction'}`
      : `QUEUE_BACKEND=postgres: the queues are in ${backend.address}`,
  );
}

/** Where forms go: EHR_URL, https and on a public (or allowed) address in production. */
export async function ehrUrlCheck(config: Config): Promise<DoctorCheck> {
  if (config.ehrUrl === undefined) {
    const detail = 'unset: forms go to the in-process sandbox EHR, never in production';
    return config.env === 'production' ? failed('ehr url', detail) : passed('ehr url', detail);
  }
  try {
    await checkEhrAddress(config);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    return failed('ehr url', error.message);
  }
  const url = new URL(config.ehrUrl);
  if (url.protocol === 'https:') return passed('ehr url', `https, ${url.host}`);
  const detail = `${url.protocol}//${url.host} is not https`;
  return config.env === 'production' ? failed('ehr url', detail) : passed('ehr url', detail);
}

/**
 * Asks clamd at the address for PONG within `timeoutMs`; rejects with an error whose `code` says why
 * not (`scanner_unreachable`, `scanner_timeout`, `scanner_error`). The composition root passes the
 * clamd client's `ping` (workers/attachments/clamd-client.ts).
 */
export type ScannerPing = (settings: ClamdAddress & { readonly timeoutMs: number }) => Promise<void>;

/** How long the scanner check waits for PONG: a check, not a scan, so far less than a scan's deadline. */
export const SCANNER_PING_TIMEOUT_MS = 3_000;

/** Why a ping failed, in words, from the code the clamd client throws. */
function pingFailure(error: unknown): string {
  const code = typeof error === 'object' && error !== null ? (error as { code?: unknown }).code : undefined;
  if (code === 'scanner_unreachable') {
    return 'nothing accepts connections there, or the host does not resolve (scanner_unreachable)';
  }
  if (code === 'scanner_timeout') {
    return `no answer within ${SCANNER_PING_TIMEOUT_MS / 1000} s (scanner_timeout)`;
  }
  return 'it answered, but not as clamd does (scanner_error)';
}

/**
 * ATTACHMENT_SCANNER: clamd answers PING there. Without one, attachments are not scanned by refhub:
 * they are scanned before they reach it (ATTACHMENT_SCANNING=elsewhere), or not at all, which only
 * production refuses. The detail names the address and the reason, nothing of any attachment.
 */
export async function scannerCheck(
  config: Pick<Config, 'env' | 'attachmentScanner' | 'attachmentsScannedElsewhere'>,
  pingScanner: ScannerPing,
): Promise<DoctorCheck> {
  if (config.attachmentScanner === undefined) {
    if (config.attachmentsScannedElsewhere) {
      return passed(
        'scanner',
        'unset: attachments are scanned before they reach refhub (ATTACHMENT_SCANNING=elsewhere)',
      );
    }
    const detail = 'unset: attachments are not scanned for malware, never in production';
    return config.env === 'production' ? failed('scanner', detail) : passed('scanner', detail);
  }
  const address = parseClamdAddress(config.attachmentScanner);
  if (address === undefined) {
    return failed('scanner', `${config.attachmentScanner} is not a clamd address (clamd://host:port)`);
  }
  const shown = clamdAddressText(address);
  try {
    await pingScanner({ ...address, timeoutMs: SCANNER_PING_TIMEOUT_MS });
  } catch (error) {
    return failed(
      'scanner',
      `clamd at ${shown}: ${pingFailure(error)}; attachments wait for their scan until it answers`,
    );
  }
  return passed('scanner', `clamd at ${shown} answers`);
}

/**
 * QPDF_PATH: qpdf checks a test document as it checks every PDF attachment. Not needed where
 * ATTACHMENT_TYPES leaves out pdf. Without it every PDF is refused (and production does not start),
 * so it fails wherever PDFs are accepted. Bounded by the probe's own deadline; never throws.
 */
export async function pdfCheckerCheck(
  config: Pick<Config, 'attachmentTypes' | 'qpdfPath'>,
): Promise<DoctorCheck> {
  if (!config.attachmentTypes.has('pdf')) {
    return passed('pdf checker', 'not needed: ATTACHMENT_TYPES leaves out pdf');
  }
  const probe = await probePdfChecker(config.qpdfPath);
  return probe.ok
    ? passed('pdf checker', `${probe.version} at ${config.qpdfPath} reads PDFs whole`)
    : failed(
        'pdf checker',
        `${probe.problem}; every PDF attachment is refused, and production does not start, until qpdf ` +
          'is installed (Debian: apt-get install qpdf)',
      );
}
