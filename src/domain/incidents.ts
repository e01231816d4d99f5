// Incidents (docs/operations.md, "Alerts"): the conditions an operator must act on, as refhub watches
// them itself, each the in-process twin of an alert in deploy/prometheus/refhub-alerts.yml. A condition
// that becomes true opens one incident; while it stays true the incident only keeps its latest
// evidence; once it is false the incident resolves. Each incident sends one signed ops webhook when it
// opens and one when it resolves, in that order, retried until delivered. Evidence is counts, ages and
// codes: never an ID of a referral, never patient data. Pure: no I/O.

/** The conditions, each with the alert of the Prometheus rules it mirrors (its runbook section). */
export const INCIDENT_CONDITIONS = {
  /** The EHR's circuit is open: forwarding is paused. */
  'ehr-circuit-open': {
    alert: 'RefhubEhrCircuitOpen',
    summary: "The EHR's circuit is open; forwarding to the EHR is paused",
  },
  /** Forwards failed for good and wait for `refhub forwarding retry`. */
  'ehr-forwards-failed': {
    alert: 'RefhubEhrForwardsFailing',
    summary: 'Forwards to the EHR failed for good and wait to be retried',
  },
  /** The oldest outbox row is older than OUTBOX_STALLED_SECONDS. */
  'outbox-stalled': {
    alert: 'RefhubOutboxStalled',
    summary: 'Work has waited in the outbox for more than 5 minutes',
  },
  /** A queue holds more than QUEUE_BACKLOG_JOBS waiting jobs. */
  'queue-backlog': {
    alert: 'RefhubQueueBacklogGrowing',
    summary: 'A queue holds more than 1000 waiting jobs',
  },
  /** refhub disabled webhook subscriptions (410 Gone, or failing too long). */
  'webhook-subscriptions-disabled': {
    alert: 'RefhubWebhookSubscriptionsDisabled',
    summary: 'refhub disabled webhook subscriptions',
  },
  /** Audit rows older than AUDIT_UNSEALED_SECONDS are not sealed: the sealer fails or does not run. */
  'audit-sealing-late': {
    alert: 'RefhubAuditCheckpointStale',
    summary: 'Audit rows have waited more than 15 minutes to be sealed',
  },
  /** The last retention run failed, or died and was ended as abandoned: aged data stays in place. */
  'retention-failing': {
    alert: 'RefhubRetentionFailing',
    summary: 'The last retention run failed; data past its retention stays until a run succeeds',
  },
  /** clamd does not answer PING (where ATTACHMENT_SCANNER is set). */
  'scanner-unreachable': {
    alert: 'RefhubScannerDown',
    summary: 'The attachment scanner (clamd) does not answer',
  },
} as const;

export type IncidentCondition = keyof typeof INCIDENT_CONDITIONS;

/** The bounds, the same as the Prometheus rules'. */
export const OUTBOX_STALLED_SECONDS = 300;
export const QUEUE_BACKLOG_JOBS = 1000;
export const AUDIT_UNSEALED_SECONDS = 900;

/** What an incident keeps of what was seen: numbers, flags and short codes. */
export type Evidence = Readonly<Record<string, number | boolean | string>>;

/** What a look at one condition found. */
export interface Observation {
  readonly condition: IncidentCondition;
  readonly active: boolean;
  readonly evidence: Evidence;
}

/** The incident open now for a condition, as the sweep sees it. */
export interface OpenIncident {
  readonly id: string;
  readonly condition: IncidentCondition;
}

/** What a sweep does for each observation. */
export type IncidentStep =
  | { readonly kind: 'open'; readonly condition: IncidentCondition; readonly evidence: Evidence }
  | { readonly kind: 'keep'; readonly id: string; readonly evidence: Evidence }
  | { readonly kind: 'resolve'; readonly id: string; readonly evidence: Evidence };

/**
 * The steps that bring the open incidents in line with what was observed: open where a condition is
 * true without one, keep (its latest evidence) where it stays true, resolve where it is no longer
 * true. A condition not observed (a probe that failed, a scanner not configured) changes nothing.
 */
export function incidentSteps(
  open: readonly OpenIncident[],
  observed: readonly Observation[],
): IncidentStep[] {
  const byCondition = new Map(open.map((i) => [i.condition, i]));
  return observed.flatMap((o): IncidentStep[] => {
    const incident = byCondition.get(o.condition);
    if (incident === undefined) {
      return o.active ? [{ kind: 'open', condition: o.condition, evidence: o.evidence }] : [];
    }
    return [{ kind: o.active ? 'keep' : 'resolve', id: incident.id, evidence: o.evidence }];
  });
}

/** The two events of an incident. */
export type IncidentEventType = 'incident.opened' | 'incident.resolved';

/** An incident as its events carry it. */
export interface IncidentView {
  readonly id: string;
  readonly condition: IncidentCondition;
  readonly openedAt: Date;
  readonly resolvedAt: Date | null;
  readonly evidence: Evidence;
}

/** The section of docs/operations.md that says what to do. */
export function runbookOf(condition: IncidentCondition): string {
  return `docs/operations.md#${INCIDENT_CONDITIONS[condition].alert.toLowerCase()}`;
}

/**
 * The ops webhook's body, laid out as a subscription's delivery is (docs/webhooks.md): type,
 * timestamp, and the incident as data.
 */
export function incidentEventBody(type: IncidentEventType, incident: IncidentView, at: Date): string {
  return JSON.stringify({
    type,
    timestamp: at.toISOString(),
    data: {
      id: incident.id,
      condition: incident.condition,
      alert: INCIDENT_CONDITIONS[incident.condition].alert,
      summary: INCIDENT_CONDITIONS[incident.condition].summary,
      openedAt: incident.openedAt.toISOString(),
      resolvedAt: incident.resolvedAt?.toISOString() ?? null,
      evidence: incident.evidence,
      runbook: runbookOf(incident.condition),
    },
  });
}

/** The `webhook-id` of an event: the same on every retry, so a receiver can drop a repeat. */
export function incidentEventId(incidentId: string, type: IncidentEventType): string {
  return `${incidentId}.${type === 'incident.opened' ? 'opened' : 'resolved'}`;
}

/** The first retry of an undelivered event waits this long; each later one doubles it, to an hour. */
export const OPS_WEBHOOK_RETRY_BASE_MS = 10_000;
export const OPS_WEBHOOK_RETRY_MAX_MS = 3_600_000;

/** The wait after failed attempt `attempts` (1 after the first). */
export function opsWebhookBackoffMs(attempts: number): number {
  return Math.min(OPS_WEBHOOK_RETRY_MAX_MS, OPS_WEBHOOK_RETRY_BASE_MS * 2 ** Math.max(0, attempts - 1));
}
