// `refhub migrate`: applies the pending migrations and says which. Each migration gets a line when it
// starts and one when it ends, with its duration, so a long one is visibly at work; on a terminal the
// start line is live (its seconds count up) and the end line takes its place. The pending migrations
// run in one transaction: the last line says how many were applied once it has committed, or that
// the schema was already up to date and nothing was done.
import { plural } from './plural.ts';

export interface MigrateDeps {
  /** Opens the configured store, migrates it telling `progress`, and closes it again. */
  readonly migrate: (progress: {
    started(name: string): void;
    finished(name: string, ms: number): void;
    /** Patient data written before field encryption was sealed, after the migrations: `rows` rows. */
    sealed(rows: number): void;
  }) => Promise<void>;
  /** How many migrations this refhub has, for the report when none was pending. */
  readonly known: number;
}

/** Where the lines go: process.stdout, or any stream with `isTTY` set as a terminal's is. */
export interface MigrateOutput {
  readonly isTTY?: boolean;
  write(text: string): unknown;
}

/** Carriage return and "erase the whole line" (ECMA-48 EL 2): the live line is redrawn in place. */
const REDRAW = '\r\x1b[2K';

export function duration(ms: number): string {
  return ms < 1_000 ? `${Math.round(ms)} ms` : `${(ms / 1_000).toFixed(1)} s`;
}

export async function migrate(deps: MigrateDeps, out: MigrateOutput = process.stdout): Promise<void> {
  const live = out.isTTY === true;
  let began: number | undefined;
  let applied = 0;
  let sealed = 0;
  let ticker: NodeJS.Timeout | undefined;
  const stopTicker = () => {
    if (ticker !== undefined) clearInterval(ticker);
    ticker = undefined;
  };
  try {
    await deps.migrate({
      started(name) {
        began ??= performance.now();
        const line = `Applying ${name} …`;
        if (!live) {
          out.write(`${line}\n`);
          return;
        }
        const start = performance.now();
        out.write(line);
        ticker = setInterval(() => {
          out.write(`${REDRAW}${line} ${Math.floor((performance.now() - start) / 1_000)} s`);
        }, 1_000);
        ticker.unref();
      },
      finished(name, ms) {
        stopTicker();
        applied += 1;
        out.write(`${live ? REDRAW : ''}Applied  ${name} in ${duration(ms)}\n`);
      },
      sealed(rows) {
        sealed = rows;
      },
    });
  } finally {
    // A migration that failed leaves its live line open: end it, so the error gets a line of its own.
    if (ticker !== undefined) out.write('\n');
    stopTicker();
  }
  out.write(
    applied === 0
      ? `The database schema is already up to date (${plural(deps.known, 'migration')}): nothing was applied.\n`
      : `Applied ${plural(applied, 'migration')} in ${duration(performance.now() - (began ?? 0))}, in one transaction: the database schema is up to date.\n`,
  );
  if (sealed > 0)
    out.write(`Sealed the patient data of ${plural(sealed, 'row')} written before field encryption.\n`);
}
