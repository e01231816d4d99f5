// `refhub ledger search` and `refhub ledger replay`: an operator's search of the forwards' ledger or
// the webhook deliveries by a time range (--from and --to, both required) and a filter, exported as
// NDJSON or CSV to stdout or a file, streamed a batch at a time; and a replay by the same filter, which
// says first (--dry-run) how many and which rows it would replay, and shows how far it is on a
// terminal. Errors name the flag. The rows hold IDs, versions, codes and hashes, no patient data.
import fs from 'node:fs';
import os from 'node:os';
import { Readable, type Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { InvalidArgumentError } from 'commander';
import { v7 as uuidv7 } from 'uuid';
import {
  EXPORT_FORMATS,
  LEDGER_FLAGS,
  LEDGERS,
  parseLedgerFilter,
  SKIP_WORDS,
  type ExportFormat,
  type FilterInput,
  type Ledger,
  type LedgerFilter,
  type ReplayPlan,
  type SkipReason,
} from '../domain/ledger-search.ts';
import type { LedgerSearch } from '../services/ledger-search.service.ts';
import { plural } from './plural.ts';
import { withProgress, type ProgressStream } from './progress.ts';

/** The filter's flags as commander hands them over (each a string, checked here to name the flag). */
export interface LedgerFilterOptions {
  readonly from?: string;
  readonly to?: string;
  readonly outcome?: string;
  readonly status?: string;
  readonly errorCode?: string;
  readonly offering?: string;
  readonly institution?: string;
  readonly referral?: string;
}

export interface LedgerSearchOptions extends LedgerFilterOptions {
  readonly format?: string;
  readonly out?: string;
}

export interface LedgerReplayOptions extends LedgerFilterOptions {
  readonly dryRun?: boolean;
}

export interface LedgerCommandDeps {
  readonly ledgerSearch: Pick<LedgerSearch, 'exportLines' | 'dryRun' | 'replay'>;
}

/** `forwards` or `webhooks`, the command's argument. */
export function ledgerArg(value: string): Ledger {
  if (!(LEDGERS as readonly string[]).includes(value)) {
    throw new InvalidArgumentError(`expected ${LEDGERS.join(' or ')}`);
  }
  return value as Ledger;
}

/** The filter of the flags; an InvalidArgumentError naming each bad flag otherwise. */
export function filterOfOptions(options: LedgerFilterOptions): LedgerFilter {
  const input: FilterInput = {
    from: options.from,
    to: options.to,
    outcome: options.outcome,
    status: options.status,
    errorCode: options.errorCode,
    offering: options.offering,
    institution: options.institution,
    referral: options.referral,
  };
  const parsed = parseLedgerFilter(input);
  if ('problems' in parsed) {
    throw new InvalidArgumentError(
      parsed.problems.map((p) => `${LEDGER_FLAGS[p.field]} ${p.message}`).join('; '),
    );
  }
  return parsed.filter;
}

function formatOf(value: string | undefined): ExportFormat {
  const format = value ?? 'ndjson';
  if (!(EXPORT_FORMATS as readonly string[]).includes(format)) {
    throw new InvalidArgumentError(`--format must be ${EXPORT_FORMATS.join(' or ')}`);
  }
  return format as ExportFormat;
}

/**
 * Writes the search's rows to `--out FILE` (created or replaced) or to stdout, a batch at a time: the
 * stream waits for the file or the pipe to take each line, so memory holds a batch, not the export.
 */
export async function searchLedger(
  deps: LedgerCommandDeps,
  ledger: Ledger,
  options: LedgerSearchOptions,
  stdout: Writable = process.stdout,
): Promise<void> {
  const filter = filterOfOptions(options);
  const format = formatOf(options.format);
  const lines = Readable.from(deps.ledgerSearch.exportLines(ledger, filter, format));
  if (options.out === undefined) {
    // stdout stays open for whatever the process prints after.
    await pipeline(lines, stdout, { end: false });
    return;
  }
  await pipeline(lines, fs.createWriteStream(options.out, { mode: 0o600 }));
}

// The operator at the terminal: the audit names them as the ops pages name the user typed at sign-in.
function operatorName(): string | null {
  try {
    const name = os.userInfo().username;
    return /^[\x21-\x7e]{1,64}$/.test(name) ? name : null;
  } catch {
    return null;
  }
}

/** The plan's lines: the counts, each skip reason, then one tab-separated line per row. */
export function describePlan(plan: ReplayPlan, dryRun: boolean): string {
  const rows = plural(plan.matched, 'row');
  const head = dryRun
    ? `${rows} ${plan.matched === 1 ? 'matches' : 'match'}; ${plan.replay} would be replayed.`
    : `${rows} matched; ${plural(plan.replay, 'replay')} queued.`;
  const reasons = Object.entries(plan.skipped).map(
    ([reason, count]) => `Skipped ${count}: ${SKIP_WORDS[reason as SkipReason]}.`,
  );
  const table = dryRun
    ? [
        ['ATTEMPT', 'REFERRAL', 'VERSION', 'LAST OUTCOME', 'ACTION'].join('\t'),
        ...plan.candidates.map((c) =>
          [c.attemptId, c.referralId ?? '-', c.version ?? '-', c.lastOutcome, c.skip ?? 'replay'].join('\t'),
        ),
      ]
    : [];
  return [head, ...reasons, ...(plan.matched > 0 ? table : [])].join('\n') + '\n';
}

/** `refhub ledger replay`: a dry run prints the plan; a replay runs it with a progress line. */
export async function replayLedger(
  deps: LedgerCommandDeps,
  ledger: Ledger,
  options: LedgerReplayOptions,
  stream: ProgressStream = process.stderr,
): Promise<ReplayPlan> {
  const filter = filterOfOptions(options);
  if (options.dryRun === true) {
    const plan = await deps.ledgerSearch.dryRun(ledger, filter);
    process.stdout.write(describePlan(plan, true));
    return plan;
  }
  const operator = {
    requestId: `ops.replay.${uuidv7()}`,
    apiKeyId: null,
    system: null,
    requester: operatorName(),
  };
  const plan = await withProgress(
    `Replaying ${ledger}`,
    (report) => deps.ledgerSearch.replay(ledger, filter, operator, report),
    stream,
  );
  process.stdout.write(describePlan(plan, false));
  return plan;
}
