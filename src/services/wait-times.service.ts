// Wait times per offering (domain/wait-times.ts states the rules). `recompute` is the wait-times job's
// work (workers/wait-times.worker.ts): it computes every offering's figures over the window ending now
// and replaces the stored ones in one transaction, so a reader sees the last run whole or the one
// before it whole. `forOffering` is the API's read, `acceptedHints` the web form's.
import { performance } from 'node:perf_hooks';
import type { Clock } from '../domain/clock.ts';
import {
  acceptedHint,
  declinedFigure,
  durationFigure,
  SECONDS_PER_DAY,
  storedFigures,
  windowEndingAt,
  type DeclinedFigure,
  type DurationFigure,
} from '../domain/wait-times.ts';
import type { Stores } from '../db/stores.ts';
import { NotFoundError } from '../errors.ts';
import type { Metrics } from '../observability/metrics.ts';
import type { WaitTimesRun } from '../queue/registry.ts';

export interface WaitTimesPolicy {
  /** WAIT_TIMES_WINDOW_DAYS: the referrals first submitted this many days back are counted. */
  readonly windowDays: number;
  /** WAIT_TIMES_MIN_REFERRALS: no figure from fewer referrals than this. */
  readonly minReferrals: number;
}

export interface WaitTimesDeps {
  readonly stores: Pick<Stores, 'waitTimes' | 'catalog' | 'transaction'>;
  readonly clock: Clock;
  readonly policy: WaitTimesPolicy;
  readonly metrics: Pick<Metrics, 'waitTimesComputed'>;
}

/** An offering's wait times as the API answers them. */
export type WaitTimesView =
  | {
      readonly offeringId: string;
      readonly computed: false;
      readonly detail: string;
    }
  | {
      readonly offeringId: string;
      readonly computed: true;
      readonly computedAt: string;
      readonly window: { readonly days: number; readonly from: string; readonly to: string };
      readonly minReferrals: number;
      readonly accepted: DurationFigure;
      readonly firstAppointment: DurationFigure;
      readonly declined: DeclinedFigure;
    };

export const NOT_COMPUTED_DETAIL =
  "This offering's wait times have not been computed yet: refhub computes them soon after it starts " +
  'and then on its schedule (WAIT_TIMES_AT).';

export function createWaitTimes(deps: WaitTimesDeps) {
  const { policy } = deps;
  return {
    /** Computes every offering's figures over the window ending now and replaces the stored ones. */
    async recompute(): Promise<WaitTimesRun> {
      const started = performance.now();
      const now = deps.clock.now();
      const window = windowEndingAt(now, policy.windowDays);
      try {
        const run = await deps.stores.transaction(async (tx) => {
          const computed = await tx.waitTimes.compute(window);
          const figures = computed.map((c) => ({
            offeringId: c.offeringId,
            computedAt: now,
            windowStart: window.start,
            windowEnd: window.end,
            ...storedFigures(c, policy.minReferrals),
          }));
          await tx.waitTimes.replace(figures);
          return {
            offerings: figures.length,
            withFigures: figures.filter((f) => f.accepted.p50Seconds !== null).length,
          };
        });
        deps.metrics.waitTimesComputed('success', now, (performance.now() - started) / 1000);
        return run;
      } catch (error) {
        deps.metrics.waitTimesComputed('failure', now, (performance.now() - started) / 1000);
        throw error;
      }
    },

    /** The offering's figures; NotFoundError for an offering the catalog does not have. */
    async forOffering(offeringId: string): Promise<WaitTimesView> {
      const offering = await deps.stores.catalog.findOffering(offeringId);
      if (offering === undefined) throw new NotFoundError(`The catalog has no offering ${offeringId}.`);
      const stored = await deps.stores.waitTimes.find(offeringId);
      if (stored === undefined) return { offeringId, computed: false, detail: NOT_COMPUTED_DETAIL };
      const min = policy.minReferrals;
      return {
        offeringId,
        computed: true,
        computedAt: stored.computedAt.toISOString(),
        window: {
          days: Math.round(
            (stored.windowEnd.getTime() - stored.windowStart.getTime()) / 1000 / SECONDS_PER_DAY,
          ),
          from: stored.windowStart.toISOString(),
          to: stored.windowEnd.toISOString(),
        },
        minReferrals: min,
        accepted: durationFigure(stored.accepted, min),
        firstAppointment: durationFigure(stored.firstAppointment, min),
        declined: declinedFigure(stored.decided, stored.declinedShare, min),
      };
    },

    /** "Usually accepted within 3 days" by offering, for those with enough data (the web form's). */
    async acceptedHints(): Promise<ReadonlyMap<string, string>> {
      const hints = new Map<string, string>();
      for (const stored of await deps.stores.waitTimes.all()) {
        const hint = acceptedHint(durationFigure(stored.accepted, policy.minReferrals));
        if (hint !== undefined) hints.set(stored.offeringId, hint);
      }
      return hints;
    },
  };
}

export type WaitTimes = ReturnType<typeof createWaitTimes>;
