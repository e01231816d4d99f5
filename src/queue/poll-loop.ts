// The one loop every periodic job runs: the outbox and webhook relays, the reconciler, housekeeping
// and the audit trail's sealer. A pass, then at once another if the pass found a full batch (more is
// waiting), or a pause of `idleMs` if it did not or failed. A wake (new work committed) ends a pause
// at once, and one that comes during a pass makes the next pass follow without a pause, so work that
// committed while a pass was reading is never left for the timer. Stopping wakes a pause and waits
// for the pass in progress, so nothing is left half done; a pass never overlaps the one before it.
//
// The relays begin with a pass. A job on a timer (`createPeriodicLoop`) begins with a pause and
// never holds the process open: its timer is unref'd, as a job that runs every minute should not
// keep a process alive that has nothing else to do.

export interface PollLoop {
  /** Starts polling; a second call does nothing. */
  readonly start: () => void;
  /** Resolves when the pass in progress has finished. */
  readonly stop: () => Promise<void>;
  /** New work is waiting: run a pass now (or right after the one in progress). */
  readonly wake: () => void;
}

export interface PollLoopOptions {
  /** Begin with a pause rather than a pass, and leave the pause's timer unref'd. */
  readonly timer?: boolean;
}

/**
 * Polls with `pass`, which returns whether it found a full batch. A pass that throws is reported to
 * `onError` and followed by the pause, as an empty one is.
 */
export function createPollLoop(
  pass: () => Promise<boolean>,
  idleMs: number,
  onError: (error: unknown) => void,
  options: PollLoopOptions = {},
): PollLoop {
  let running = false;
  let loop: Promise<void> | undefined;
  let wake: (() => void) | undefined;
  /** A wake came while no pause was there to end. */
  let woken = false;

  async function run() {
    let first = true;
    while (running) {
      let full = false;
      if (first && options.timer === true) {
        first = false;
      } else {
        woken = false;
        try {
          full = await pass();
        } catch (error) {
          onError(error);
        }
      }
      if (!full) {
        await new Promise<void>((resolve) => {
          // A stop during the pass found no pause to wake: do not begin one; nor after a wake.
          if (!running || woken) {
            resolve();
            return;
          }
          const timer = setTimeout(resolve, idleMs);
          if (options.timer === true) timer.unref();
          wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
        wake = undefined;
      }
    }
  }

  return {
    start: () => {
      if (running) return;
      running = true;
      loop = run();
    },
    stop: async () => {
      running = false;
      wake?.();
      await loop;
    },
    wake: () => {
      woken = true;
      wake?.();
    },
  };
}

/**
 * Runs `job` every `intervalMs` until stopped, beginning after the first interval: a run that throws
 * is reported to `onError`, and the next one tries again. The reconciler, housekeeping and the audit
 * trail's sealer run on it.
 */
export function createPeriodicLoop(
  job: () => Promise<unknown>,
  intervalMs: number,
  onError: (error: unknown) => void,
): PollLoop {
  return createPollLoop(
    async () => {
      await job();
      return false;
    },
    intervalMs,
    onError,
    { timer: true },
  );
}

/** A short code for a log line or a row's last error: never a message, which could quote a value. */
export function errorCode(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && /^[A-Za-z0-9_.-]{1,64}$/.test(code)) return code;
  return error instanceof Error ? error.name.slice(0, 64) : 'Error';
}
