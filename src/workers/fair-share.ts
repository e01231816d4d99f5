// Fair delivery across institutions, in one worker process: at most `perInstitution` of its jobs of one
// institution run at once (FAIR_SHARE in queue/registry.ts; the webhook worker's). A job whose
// institution is at its cap is set aside: moved back to the queue as delayed, the way the forward
// worker defers a job while the EHR's circuit is open, so it spends no attempt. Each time the same
// job is set aside it waits longer (doubling from FAIR_SHARE.deferral.baseMs up to maxMs, with
// jitter), so a backlog of one institution is looked at about once per maxMs rather than spinning
// through the queue. docs/scaling.md says what this bounds.
import { DelayedError, type Job } from 'bullmq';
import { FAIR_SHARE } from '../queue/registry.ts';

export interface FairShare {
  /**
   * Takes one of `institution`'s slots and returns what gives it back (call it once, when the job
   * ends however it ends), or undefined when the institution has its cap in flight.
   */
  take(institution: string): (() => void) | undefined;
  /** The institution's jobs running in this process now. */
  inFlight(institution: string): number;
}

export function createFairShare(perInstitution: number): FairShare {
  if (!Number.isInteger(perInstitution) || perInstitution < 1) {
    throw new RangeError('perInstitution must be a positive integer');
  }
  const running = new Map<string, number>();
  return {
    take(institution) {
      const now = running.get(institution) ?? 0;
      if (now >= perInstitution) return undefined;
      running.set(institution, now + 1);
      let given = false;
      return () => {
        if (given) return;
        given = true;
        const left = (running.get(institution) ?? 1) - 1;
        if (left > 0) running.set(institution, left);
        else running.delete(institution);
      };
    },
    inFlight: (institution) => running.get(institution) ?? 0,
  };
}

/**
 * How long a job set aside waits. BullMQ counts every start of a job (`attemptsStarted`) and only the
 * attempts that ran (`attemptsMade`), so their difference is how many times it was set aside before.
 */
export function fairShareDelayMs(
  job: Pick<Job, 'attemptsStarted' | 'attemptsMade'>,
  random: () => number = Math.random,
): number {
  const { baseMs, maxMs } = FAIR_SHARE.deferral;
  const before = Math.max(0, job.attemptsStarted - job.attemptsMade - 1);
  const ceiling = Math.min(maxMs, baseMs * 2 ** Math.min(before, 20));
  return Math.round(ceiling * (0.5 + 0.5 * random()));
}

/** Puts the active job back on the queue for `delayMs` without counting an attempt. */
export async function setAside(job: Job, token: string | undefined, delayMs: number): Promise<never> {
  await job.moveToDelayed(Date.now() + delayMs, token);
  throw new DelayedError();
}
