// Periodic clean-up of expired rows and retired secrets, run by every API process (webhook attempts
// are retention's, services/retention/, dropped a month at a time). Deletes go in small batches so that
// a large backlog never holds long locks; several processes running it at once only share the work.
import type { Clock } from '../domain/clock.ts';
import type { Stores } from '../db/stores.ts';
import type { Logger } from '../logger.ts';
import { createPeriodicLoop } from '../queue/poll-loop.ts';

const BATCH = 1000;
const MAX_BATCHES_PER_RUN = 50;

export interface PurgeResult {
  readonly idempotencyKeys: number;
  readonly linkTokens: number;
  /** Referral events past EVENT_RETENTION_DAYS: gone from the feed. */
  readonly events: number;
  /** Webhook secrets rotated out whose 24 hours of overlap have ended: forgotten. */
  readonly webhookSecrets: number;
  /** Expired access tokens, and the `jti`s of expired client assertions. */
  readonly clientCredentials: number;
}

const DAY_MS = 86_400_000;

export function createHousekeeping(deps: {
  stores: Pick<Stores, 'housekeeping' | 'events'>;
  clock: Clock;
  logger: Logger;
  /** How long events stay in the feed (EVENT_RETENTION_DAYS); 30 days by default. */
  eventRetentionDays?: number;
}) {
  const repo = deps.stores.housekeeping;
  const eventRetentionMs = (deps.eventRetentionDays ?? 30) * DAY_MS;
  const cutoff = (now: Date) => new Date(now.getTime() - eventRetentionMs);

  async function drain(purge: (now: Date, limit: number) => Promise<number>): Promise<number> {
    let total = 0;
    for (let batch = 0; batch < MAX_BATCHES_PER_RUN; batch++) {
      const deleted = await purge(deps.clock.now(), BATCH);
      total += deleted;
      if (deleted < BATCH) break;
    }
    return total;
  }

  return {
    async purgeExpired(): Promise<PurgeResult> {
      return {
        idempotencyKeys: await drain((now, limit) => repo.purgeIdempotencyKeys(now, limit)),
        linkTokens: await drain((now, limit) => repo.purgeLinkTokens(now, limit)),
        events: await drain((now, limit) => deps.stores.events.purgeBefore(cutoff(now), limit)),
        webhookSecrets: await repo.forgetRetiredWebhookSecrets(deps.clock.now()),
        clientCredentials: await drain((now, limit) => repo.purgeClientCredentials(now, limit)),
      };
    },

    /** Runs purgeExpired every `intervalMs` (queue/poll-loop.ts) until the returned function is called. */
    start(intervalMs: number): () => void {
      const loop = createPeriodicLoop(
        async () => {
          const purged = await this.purgeExpired();
          if (Object.values(purged).some((n) => n > 0)) deps.logger.info(purged, 'expired rows purged');
        },
        intervalMs,
        (error: unknown) => {
          deps.logger.warn({ err: { type: (error as Error).name } }, 'housekeeping failed; it will retry');
        },
      );
      loop.start();
      return () => {
        void loop.stop();
      };
    },
  };
}

export type Housekeeping = ReturnType<typeof createHousekeeping>;
