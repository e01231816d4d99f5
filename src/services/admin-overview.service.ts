// What the /admin page shows: the outbox backlog and the age of its oldest row, the queues' health (in
// Redis or in the database), the job counts of each queue, the EHR's circuit, the referrals whose
// forward failed for good and the webhook subscriptions refhub disabled. The database is the truth
// and is read as usual; the queues are asked under a time limit, so an outage makes the page say
// "unreachable" within seconds instead of hanging it.
import type { IncidentView } from '../domain/incidents.ts';
import type { Clock } from '../domain/clock.ts';
import type { FailedForward } from '../db/forwarding/ledger.ts';
import type { WebhookSubscription } from '../db/webhooks/subscriptions.repository.ts';
import type { CircuitRow } from '../db/forwarding/circuit.ts';
import type { Stores } from '../db/stores.ts';
import type { QueueBackendName } from '../queue/backend.ts';
import type { QueueProducer } from '../queue/producer.ts';
import type { QueueCounts } from '../render/pages/admin-overview.page.ts';
import { QUEUE_NAMES, type QueueName } from '../queue/registry.ts';

export interface QueueStatus {
  /** Where the queues are (QUEUE_BACKEND). */
  readonly backend: QueueBackendName;
  readonly reachable: boolean;
  /** What was found: Redis's eviction policy, or where in the database the queues are. */
  readonly detail: string | undefined;
  /** Why the queues cannot take work; undefined when they can. */
  readonly problem: string | undefined;
}

export interface OpsOverview {
  readonly at: Date;
  readonly outbox: { readonly count: number; readonly oldestAgeSeconds: number | null };
  readonly queueHealth: QueueStatus;
  /** `counts` is undefined when the queues could not be asked. */
  readonly queues: readonly { readonly name: QueueName; readonly counts: QueueCounts | undefined }[];
  readonly failedForwards: {
    readonly total: number;
    readonly rows: readonly FailedForward[];
    readonly limit: number;
  };
  /** The EHR's circuit: open while forwarding pauses and probes the EHR. */
  readonly ehrCircuit: CircuitRow;
  /** Webhook subscriptions refhub disabled (the receiver answered 410, or kept failing). */
  readonly disabledWebhooks: readonly WebhookSubscription[];
  /** The incidents open now (domain/incidents.ts), oldest first. */
  readonly incidents: readonly IncidentView[];
}

export interface OpsOverviewDeps {
  readonly stores: Pick<Stores, 'outbox' | 'forwarding' | 'webhooks' | 'incidents'>;
  readonly clock: Clock;
  /** The producer, asked for only when the page is loaded. */
  readonly producer: () => QueueProducer;
  /** How long the queues may take for the whole page; the producer's own connect wait is 3 s. */
  readonly queuesTimeoutMs?: number;
  readonly failedLimit?: number;
}

class QueuesTimeoutError extends Error {
  override readonly name = 'QueuesTimeoutError';
}

/** What the page calls where the queues are. */
const PLACE: Readonly<Record<QueueBackendName, string>> = {
  redis: 'Redis',
  postgres: 'The queues’ database',
};

async function within<T>(work: Promise<T>, ms: number, place: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => {
      reject(new QueuesTimeoutError(`${place} did not answer within ${ms / 1000} seconds`));
    }, ms);
  });
  try {
    return await Promise.race([work, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

export function createOpsOverview(deps: OpsOverviewDeps) {
  const timeoutMs = deps.queuesTimeoutMs ?? 4_000;
  const limit = deps.failedLimit ?? 50;
  const unknownCounts = QUEUE_NAMES.map((name) => ({ name, counts: undefined }));

  async function askQueues(backend: QueueBackendName): Promise<Pick<OpsOverview, 'queueHealth' | 'queues'>> {
    const producer = deps.producer();
    const health = { backend, ...(await producer.health()) };
    if (!health.reachable) return { queueHealth: health, queues: unknownCounts };
    const queues = await Promise.all(
      QUEUE_NAMES.map(async (name) => ({ name, counts: await producer.jobCounts(name) })),
    );
    return { queueHealth: health, queues };
  }

  return {
    async load(): Promise<OpsOverview> {
      const at = deps.clock.now();
      const backend = deps.producer().backend.name;
      const queuesPart = within(askQueues(backend), timeoutMs, PLACE[backend]).catch(
        (error: unknown): Pick<OpsOverview, 'queueHealth' | 'queues'> => ({
          queueHealth: {
            backend,
            reachable: false,
            detail: undefined,
            // Our own timeout's message, or only the kind of a client error: the queue names are
            // all that was sent, but nothing else of a driver's message is needed here.
            problem:
              error instanceof QueuesTimeoutError
                ? error.message
                : `${PLACE[backend]} could not be read (${(error as Error).name})`,
          },
          queues: unknownCounts,
        }),
      );
      const [outbox, failed, ehrCircuit, disabledWebhooks, incidents, queues] = await Promise.all([
        deps.stores.outbox.backlogWithEvents(at),
        deps.stores.forwarding.ledger.failedForwards(limit),
        deps.stores.forwarding.circuit.read(),
        deps.stores.webhooks.subscriptions.disabledByRefhub(),
        deps.stores.incidents.open(),
        queuesPart,
      ]);
      return {
        at,
        outbox,
        ...queues,
        failedForwards: { ...failed, limit },
        ehrCircuit,
        disabledWebhooks,
        incidents,
      };
    },
  };
}

export type OpsOverviewService = ReturnType<typeof createOpsOverview>;
