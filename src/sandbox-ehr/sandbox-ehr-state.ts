// The sandbox EHR's memory: the deliveries it accepted, how many requests it saw, and the failures
// it has been told to stage. No HTTP here, so the rules (what counts as a duplicate, when a staged
// failure is used up) read on their own.
//
// Privacy: a delivery keeps identifiers, digests and times only, never a patient field or the form.
// The body digest is kept to tell a replay (same bytes) from a conflicting reuse of a message ID;
// it is not exposed.
import type { Clock } from '../domain/clock.ts';
import { sha256Hex } from '../domain/forwarding/content-digest.ts';
import type { EhrAttachmentRequest, EhrForwardRequest } from '../domain/forwarding/forward-request.ts';

export interface SandboxDelivery {
  readonly messageId: string;
  readonly referralId: string;
  readonly version: number;
  /**
   * Hex SHA-256 of `notesItem.text` as UTF-8 (a form), or of the file's decoded bytes (an attachment):
   * what the forwarder must have recorded.
   */
  readonly sha256: string;
  /** For a file sent with a form: which form, its number, type and size (never its name). */
  readonly document?: {
    readonly formMessageId: string;
    readonly number: number;
    readonly mediaType: string;
    readonly sizeBytes: number;
  };
  /** When the first accepted request arrived (ISO 8601). */
  readonly receivedAt: string;
  readonly reference: string;
  /** How many EHR requests carried this message ID as their Idempotency-Key, failed ones included. */
  readonly attempts: number;
}

/** What the EHR endpoint does besides its normal work; a PUT replaces the whole of it. */
export interface SandboxBehaviour {
  /** Answered in order, one each, to the next EHR requests; then normal service resumes. */
  readonly statuses: readonly number[];
  /** Sent as `Retry-After` with a staged 429 or 503. */
  readonly retryAfterSeconds: number | null;
  /** Delay before every EHR answer (and before a reset). */
  readonly latencyMs: number;
  /** The next this-many EHR requests get their connection destroyed instead of an answer. */
  readonly resets: number;
  /**
   * Answered in order, one each, to the next requests that carry a file (their message ID ends in
   * `.a<number>`), before `statuses`; forms are not affected.
   */
  readonly fileStatuses: readonly number[];
}

export interface SandboxRequestCounts {
  /** EHR requests received (control API requests are not counted). */
  readonly total: number;
  /** EHR requests answered, by HTTP status. */
  readonly byStatus: Readonly<Record<string, number>>;
  /** EHR requests whose connection was destroyed by a staged reset. */
  readonly resets: number;
  /** Accepted replays of a delivered message (answered 200, not a new delivery). */
  readonly duplicates: number;
}

export type StagedFailure =
  | { readonly kind: 'reset' }
  | { readonly kind: 'status'; readonly status: number; readonly retryAfterSeconds: number | null };

export type AcceptOutcome =
  | { readonly outcome: 'created' | 'duplicate'; readonly delivery: SandboxDelivery }
  | { readonly outcome: 'conflict'; readonly delivery: SandboxDelivery };

export interface DeliveryFilter {
  readonly messageId?: string | undefined;
  readonly referralId?: string | undefined;
}

export interface SandboxEhrState {
  /** Counts an EHR request on arrival, and its attempt under its Idempotency-Key. */
  noteArrival(idempotencyKey: string | undefined): void;
  /** Records how an EHR request was answered. */
  noteAnswer(outcome: number | 'reset'): void;
  /** The staged failure for the request now being answered (one carrying a file or not), if any; using it consumes it. */
  takeStagedFailure(carriesFile: boolean): StagedFailure | undefined;
  latencyMs(): number;
  /** Records a valid request, or recognises it as a replay or a conflicting reuse of its message ID. */
  accept(request: EhrForwardRequest | EhrAttachmentRequest, bodySha256: string): AcceptOutcome;
  deliveries(filter?: DeliveryFilter): SandboxDelivery[];
  requests(): SandboxRequestCounts;
  behaviour(): SandboxBehaviour;
  setBehaviour(behaviour: Partial<SandboxBehaviour>): SandboxBehaviour;
  reset(): void;
}

/** Bounds memory in a long-running sandbox: past this many message IDs, the oldest are forgotten. */
export const MAX_TRACKED_MESSAGES = 100_000;

const NORMAL_SERVICE: SandboxBehaviour = Object.freeze({
  statuses: Object.freeze([]),
  retryAfterSeconds: null,
  latencyMs: 0,
  resets: 0,
  fileStatuses: Object.freeze([]),
});

const RETRY_AFTER_STATUSES = new Set([429, 503]);

interface StoredDelivery {
  readonly record: Omit<SandboxDelivery, 'attempts'>;
  readonly bodySha256: string;
  attempts: number;
}

/** A stable reference derived from the message ID, so a replay, or a restarted sandbox, gives the same one. */
export function referenceFor(messageId: string): string {
  return `EHR-${sha256Hex(messageId).slice(0, 12).toUpperCase()}`;
}

function remember<V>(map: Map<string, V>, key: string, value: V): void {
  map.set(key, value);
  if (map.size > MAX_TRACKED_MESSAGES) {
    const oldest = map.keys().next();
    if (oldest.done !== true) map.delete(oldest.value);
  }
}

export function createSandboxEhrState(deps: { readonly clock: Clock }): SandboxEhrState {
  const delivered = new Map<string, StoredDelivery>();
  /** Attempts of message IDs that have no delivery yet. */
  const pendingAttempts = new Map<string, number>();
  let behaviour: SandboxBehaviour = NORMAL_SERVICE;
  let counts = { total: 0, byStatus: new Map<number, number>(), resets: 0, duplicates: 0 };

  const view = (d: StoredDelivery): SandboxDelivery => ({ ...d.record, attempts: d.attempts });

  return {
    noteArrival(idempotencyKey) {
      counts.total += 1;
      if (idempotencyKey === undefined) return;
      const existing = delivered.get(idempotencyKey);
      if (existing !== undefined) existing.attempts += 1;
      else remember(pendingAttempts, idempotencyKey, (pendingAttempts.get(idempotencyKey) ?? 0) + 1);
    },

    noteAnswer(outcome) {
      if (outcome === 'reset') counts.resets += 1;
      else counts.byStatus.set(outcome, (counts.byStatus.get(outcome) ?? 0) + 1);
    },

    takeStagedFailure(carriesFile) {
      if (behaviour.resets > 0) {
        behaviour = { ...behaviour, resets: behaviour.resets - 1 };
        return { kind: 'reset' };
      }
      const [fileStatus, ...otherFiles] = carriesFile ? behaviour.fileStatuses : [];
      if (fileStatus !== undefined) {
        behaviour = { ...behaviour, fileStatuses: otherFiles };
        const retryAfterSeconds = RETRY_AFTER_STATUSES.has(fileStatus) ? behaviour.retryAfterSeconds : null;
        return { kind: 'status', status: fileStatus, retryAfterSeconds };
      }
      const [status, ...rest] = behaviour.statuses;
      if (status === undefined) return undefined;
      behaviour = { ...behaviour, statuses: rest };
      const retryAfterSeconds = RETRY_AFTER_STATUSES.has(status) ? behaviour.retryAfterSeconds : null;
      return { kind: 'status', status, retryAfterSeconds };
    },

    latencyMs: () => behaviour.latencyMs,

    accept(request, bodySha256) {
      const existing = delivered.get(request.messageId);
      if (existing !== undefined) {
        if (existing.bodySha256 !== bodySha256) return { outcome: 'conflict', delivery: view(existing) };
        counts.duplicates += 1;
        return { outcome: 'duplicate', delivery: view(existing) };
      }
      const stored: StoredDelivery = {
        record: {
          messageId: request.messageId,
          referralId: request.referralId,
          version: request.version,
          ...('document' in request
            ? {
                sha256: request.document.sha256,
                document: {
                  formMessageId: request.formMessageId,
                  number: request.document.number,
                  mediaType: request.document.mediaType,
                  sizeBytes: request.document.sizeBytes,
                },
              }
            : { sha256: sha256Hex(request.notesItem.text) }),
          receivedAt: deps.clock.now().toISOString(),
          reference: referenceFor(request.messageId),
        },
        bodySha256,
        // This request was counted on arrival, so there is at least one attempt.
        attempts: Math.max(1, pendingAttempts.get(request.messageId) ?? 0),
      };
      pendingAttempts.delete(request.messageId);
      remember(delivered, request.messageId, stored);
      return { outcome: 'created', delivery: view(stored) };
    },

    deliveries(filter = {}) {
      return [...delivered.values()]
        .filter((d) => filter.messageId === undefined || d.record.messageId === filter.messageId)
        .filter((d) => filter.referralId === undefined || d.record.referralId === filter.referralId)
        .map(view);
    },

    requests() {
      const byStatus: Record<string, number> = {};
      for (const [status, n] of [...counts.byStatus].sort(([a], [b]) => a - b)) byStatus[String(status)] = n;
      return { total: counts.total, byStatus, resets: counts.resets, duplicates: counts.duplicates };
    },

    behaviour: () => behaviour,

    setBehaviour(next) {
      behaviour = Object.freeze({
        statuses: Object.freeze([...(next.statuses ?? [])]),
        retryAfterSeconds: next.retryAfterSeconds ?? null,
        latencyMs: next.latencyMs ?? 0,
        resets: next.resets ?? 0,
        fileStatuses: Object.freeze([...(next.fileStatuses ?? [])]),
      });
      return behaviour;
    },

    reset() {
      delivered.clear();
      pendingAttempts.clear();
      behaviour = NORMAL_SERVICE;
      counts = { total: 0, byStatus: new Map(), resets: 0, duplicates: 0 };
    },
  };
}
