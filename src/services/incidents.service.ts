// Incidents (domain/incidents.ts; docs/operations.md, "Alerts"): a scheduled sweep looks at each
// condition an operator must act on, brings the incidents in the database in line with what it saw
// (one opens when its condition becomes true, resolves when it is false again, and in between only
// keeps its latest evidence), then sends the ops webhooks that are due: one signed event when an
// incident opens and one when it resolves, the opening first, each retried with a growing wait until
// the receiver takes it. An event goes to OPS_WEBHOOK_URL signed as webhook deliveries are
// (domain/webhooks-signature.ts), so a receiver verifies both with the same code.
import { v7 as uuidv7 } from 'uuid';
import type { Clock } from '../domain/clock.ts';
import {
  AUDIT_UNSEALED_SECONDS,
  incidentEventBody,
  incidentEventId,
  incidentSteps,
  OUTBOX_STALLED_SECONDS,
  opsWebhookBackoffMs,
  QUEUE_BACKLOG_JOBS,
  type IncidentCondition,
  type IncidentEventType,
  type Observation,
} from '../domain/incidents.ts';
import { signedHeaders } from '../domain/webhooks-signature.ts';
import type { Stores } from '../db/stores.ts';
import type { IncidentRow } from '../db/incidents.repository.ts';
import type { Logger } from '../logger.ts';

/** What the receiver answered one event: a status, or the network error's code. */
export type OpsWebhookAnswer =
  | { readonly kind: 'response'; readonly status: number }
  | { readonly kind: 'network-error'; readonly code: string };

/** Where the events go: the receiver, and the secret they are signed with. */
export interface OpsWebhook {
  /** OPS_WEBHOOK_SECRET (`whsec_…`). */
  readonly secret: string;
  /** Posts one event to OPS_WEBHOOK_URL through the webhooks' outbound client; never throws. */
  post(body: string, headers: Readonly<Record<string, string>>): Promise<OpsWebhookAnswer>;
}

export interface IncidentsDeps {
  readonly stores: Pick<Stores, 'incidents' | 'forwarding' | 'outbox' | 'webhooks' | 'audit' | 'retention'>;
  readonly clock: Clock;
  readonly logger: Logger;
  /** Waiting jobs per queue, from the queues. */
  readonly queueCounts: () => Promise<Readonly<Record<string, Readonly<Record<string, number>>>>>;
  /** Whether clamd answers PING; absent where no scanner is configured (the condition is not watched). */
  readonly scannerReachable?: (() => Promise<boolean>) | undefined;
  /** Absent without OPS_WEBHOOK_URL: incidents are kept, and nothing is sent. */
  readonly opsWebhook?: OpsWebhook | undefined;
  /** How long a claimed event is held by one sweep before another may send it (an attempt and more). */
  readonly sendLeaseMs: number;
}

/** What one sweep did. */
export interface IncidentSweep {
  readonly opened: number;
  readonly resolved: number;
  /** Events delivered. */
  readonly sent: number;
  /** An event that failed, and waits for its retry (later ones wait behind it). */
  readonly failed: number;
}

const seconds = (ms: number) => Math.round(ms / 1000);

export function createIncidents(deps: IncidentsDeps) {
  const { stores } = deps;

  /** Each condition's look, by condition: what it finds, in numbers and codes. */
  const probes: Partial<Record<IncidentCondition, (now: Date) => Promise<Observation>>> = {
    'ehr-circuit-open': async (now) => {
      const circuit = await stores.forwarding.circuit.read();
      const open = circuit.state === 'open';
      return {
        condition: 'ehr-circuit-open',
        active: open,
        evidence: {
          open,
          openForSeconds:
            open && circuit.openedAt !== null ? seconds(now.getTime() - circuit.openedAt.getTime()) : 0,
        },
      };
    },
    'ehr-forwards-failed': async () => {
      const { total } = await stores.forwarding.ledger.failedForwards(1);
      return { condition: 'ehr-forwards-failed', active: total > 0, evidence: { failedForwards: total } };
    },
    'outbox-stalled': async (now) => {
      const backlog = await stores.outbox.backlogWithEvents(now);
      const age = Math.round(backlog.oldestAgeSeconds ?? 0);
      return {
        condition: 'outbox-stalled',
        active: age > OUTBOX_STALLED_SECONDS,
        evidence: { backlog: backlog.count, oldestAgeSeconds: age },
      };
    },
    'queue-backlog': async () => {
      const counts = await deps.queueCounts();
      const waiting = Object.fromEntries(
        Object.entries(counts).map(([queue, byState]) => [queue, byState.waiting ?? 0]),
      );
      return {
        condition: 'queue-backlog',
        active: Object.values(waiting).some((n) => n > QUEUE_BACKLOG_JOBS),
        evidence: waiting,
      };
    },
    'webhook-subscriptions-disabled': async () => {
      const counts = await stores.webhooks.subscriptions.disabledCounts();
      const gone = counts.gone ?? 0;
      const failing = counts.failing ?? 0;
      return {
        condition: 'webhook-subscriptions-disabled',
        active: gone + failing > 0,
        evidence: { gone, failing },
      };
    },
    'audit-sealing-late': async (now) => {
      const [oldest] = await stores.audit.chain.unsealed(
        new Date(now.getTime() - AUDIT_UNSEALED_SECONDS * 1000),
        1,
      );
      return {
        condition: 'audit-sealing-late',
        active: oldest !== undefined,
        evidence: {
          oldestUnsealedAgeSeconds:
            oldest === undefined ? 0 : seconds(now.getTime() - oldest.occurredAt.getTime()),
        },
      };
    },
    'retention-failing': async (now) => {
      const last = await stores.retention.lastFinishedRun();
      const failed = last !== undefined && last.outcome !== 'succeeded';
      return {
        condition: 'retention-failing',
        active: failed,
        evidence: {
          lastRunFailed: last?.outcome === 'failed',
          lastRunAbandoned: last?.outcome === 'abandoned',
          finishedSecondsAgo: last === undefined ? 0 : seconds(now.getTime() - last.finishedAt.getTime()),
        },
      };
    },
  };
  const scannerReachable = deps.scannerReachable;
  if (scannerReachable !== undefined) {
    probes['scanner-unreachable'] = async () => {
      const reachable = await scannerReachable();
      return { condition: 'scanner-unreachable', active: !reachable, evidence: { reachable } };
    };
  }

  /** Every condition's look; one that fails (its store or queue out of reach) is left out, and logged. */
  async function observe(now: Date): Promise<Observation[]> {
    const looks = await Promise.all(
      Object.entries(probes).map(async ([condition, probe]) => {
        try {
          return await probe(now);
        } catch (error) {
          deps.logger.warn(
            { condition, err: { type: (error as Error).name } },
            'a condition could not be looked at; its incident stays as it was',
          );
          return undefined;
        }
      }),
    );
    return looks.filter((o) => o !== undefined);
  }

  /** Sends one event of the incident; whether the receiver took it (2xx). */
  async function sendEvent(
    webhook: OpsWebhook,
    incident: IncidentRow,
    type: IncidentEventType,
  ): Promise<boolean> {
    const at = deps.clock.now();
    const body = incidentEventBody(type, incident, at);
    const headers = signedHeaders(
      [webhook.secret],
      incidentEventId(incident.id, type),
      Math.floor(at.getTime() / 1000),
      body,
    );
    const answer = await webhook.post(body, headers);
    const delivered = answer.kind === 'response' && answer.status >= 200 && answer.status < 300;
    if (!delivered) {
      deps.logger.warn(
        {
          incidentId: incident.id,
          condition: incident.condition,
          type,
          ...(answer.kind === 'response' ? { httpStatus: answer.status } : { code: answer.code }),
        },
        'an ops webhook was not delivered; it will be retried',
      );
    }
    return delivered;
  }

  /**
   * Sends the due events, the oldest incident first, until none is due or one fails (which waits for
   * its retry, and the later ones behind it, so the receiver sees them in order).
   */
  async function deliver(webhook: OpsWebhook): Promise<{ sent: number; failed: number }> {
    let sent = 0;
    for (;;) {
      const now = deps.clock.now();
      const [incident] = await stores.incidents.claimDue(now, new Date(now.getTime() + deps.sendLeaseMs), 1);
      if (incident === undefined) return { sent, failed: 0 };
      if (incident.openedSentAt === null) {
        if (!(await sendEvent(webhook, incident, 'incident.opened'))) {
          await fail(incident);
          return { sent, failed: 1 };
        }
        await stores.incidents.openedSent(incident.id, deps.clock.now());
        sent += 1;
      }
      if (incident.resolvedAt !== null && incident.resolvedSentAt === null) {
        if (!(await sendEvent(webhook, incident, 'incident.resolved'))) {
          await fail(incident);
          return { sent, failed: 1 };
        }
        await stores.incidents.resolvedSent(incident.id, deps.clock.now());
        sent += 1;
      }
    }
  }

  async function fail(incident: IncidentRow): Promise<void> {
    const retryAt = new Date(deps.clock.now().getTime() + opsWebhookBackoffMs(incident.sendAttempts + 1));
    await stores.incidents.sendFailed(incident.id, retryAt);
  }

  return {
    /** Looks at every condition, opens and resolves incidents, and sends the events that are due. */
    async sweep(): Promise<IncidentSweep> {
      const now = deps.clock.now();
      const observed = await observe(now);
      const open = await stores.incidents.open();
      const send = deps.opsWebhook !== undefined;
      let opened = 0;
      let resolved = 0;
      for (const step of incidentSteps(open, observed)) {
        switch (step.kind) {
          case 'open':
            if (await stores.incidents.openIncident(uuidv7(), step.condition, step.evidence, now, send)) {
              opened += 1;
              deps.logger.warn({ condition: step.condition, evidence: step.evidence }, 'incident opened');
            }
            break;
          case 'keep':
            await stores.incidents.keep(step.id, step.evidence, now);
            break;
          case 'resolve':
            if (await stores.incidents.resolve(step.id, step.evidence, now, send)) {
              resolved += 1;
              deps.logger.info({ incidentId: step.id, evidence: step.evidence }, 'incident resolved');
            }
            break;
        }
      }
      const delivery =
        deps.opsWebhook === undefined ? { sent: 0, failed: 0 } : await deliver(deps.opsWebhook);
      return { opened, resolved, ...delivery };
    },

    /** The conditions open now: for the metrics (`refhub_incidents_open`). */
    async openConditions(): Promise<string[]> {
      return (await stores.incidents.open()).map((i) => i.condition);
    },

    /** The latest incidents, open or resolved, the newest first: for /admin. */
    latest: (limit: number) => stores.incidents.latest(limit),
  };
}

export type Incidents = ReturnType<typeof createIncidents>;
