// Incidents (domain/incidents.ts): opening one per condition (the partial unique index makes a second
// open a no-op, so sweeps that overlap open it once), keeping its latest evidence, resolving it, and
// the ops webhooks still to send: an incident is due while `next_send_at` has passed, claimed by
// pushing that time out by a lease, so two sweeps never send the same event at once.
import { sql } from 'kysely';
import type { Evidence, IncidentCondition, IncidentView } from '../domain/incidents.ts';
import type { Executor } from './executor.ts';

/** An incident with what remains to send of its events. */
export interface IncidentRow extends IncidentView {
  readonly evidenceAt: Date;
  readonly openedSentAt: Date | null;
  readonly resolvedSentAt: Date | null;
  readonly sendAttempts: number;
}

interface Row {
  id: string;
  condition: string;
  opened_at: Date;
  resolved_at: Date | null;
  evidence: Record<string, number | boolean | string>;
  evidence_at: Date;
  opened_sent_at: Date | null;
  resolved_sent_at: Date | null;
  send_attempts: number;
}

const date = (value: Date | string | null): Date | null => (value === null ? null : new Date(value));

function toIncident(r: Row): IncidentRow {
  return {
    id: r.id,
    condition: r.condition as IncidentCondition,
    openedAt: new Date(r.opened_at),
    resolvedAt: date(r.resolved_at),
    evidence: r.evidence,
    evidenceAt: new Date(r.evidence_at),
    openedSentAt: date(r.opened_sent_at),
    resolvedSentAt: date(r.resolved_sent_at),
    sendAttempts: r.send_attempts,
  };
}

const COLUMNS = [
  'id',
  'condition',
  'opened_at',
  'resolved_at',
  'evidence',
  'evidence_at',
  'opened_sent_at',
  'resolved_sent_at',
  'send_attempts',
] as const;

export function incidentRepository(db: Executor) {
  return {
    /** The incidents open now, the oldest first. */
    async open(): Promise<IncidentRow[]> {
      const rows = await db
        .selectFrom('incidents')
        .select(COLUMNS)
        .where('resolved_at', 'is', null)
        .orderBy('opened_at')
        .orderBy('id')
        .execute();
      return rows.map(toIncident);
    },

    /** The latest incidents, open or resolved, the newest first: for /admin. */
    async latest(limit: number): Promise<IncidentRow[]> {
      const rows = await db
        .selectFrom('incidents')
        .select(COLUMNS)
        .orderBy('opened_at', 'desc')
        .orderBy('id', 'desc')
        .limit(limit)
        .execute();
      return rows.map(toIncident);
    },

    /**
     * Opens an incident of `condition` unless one is open; whether it did. `send` queues its opening
     * event at once.
     */
    async openIncident(
      id: string,
      condition: IncidentCondition,
      evidence: Evidence,
      now: Date,
      send: boolean,
    ): Promise<boolean> {
      const result = await sql`
        insert into incidents (id, condition, opened_at, evidence, evidence_at, next_send_at)
        values (${id}::uuid, ${condition}, ${now}::timestamptz, ${JSON.stringify(evidence)}::jsonb,
                ${now}::timestamptz, ${send ? now : null}::timestamptz)
        on conflict (condition) where resolved_at is null do nothing
      `.execute(db);
      return Number(result.numAffectedRows ?? 0) === 1;
    },

    /** The open incident's latest evidence. */
    async keep(id: string, evidence: Evidence, now: Date): Promise<void> {
      await db
        .updateTable('incidents')
        .set({ evidence: JSON.stringify(evidence), evidence_at: now })
        .where('id', '=', id)
        .where('resolved_at', 'is', null)
        .execute();
    },

    /**
     * Resolves the open incident; whether it did. `send` queues its resolving event: at once, unless
     * its opening event still waits (then it follows that one).
     */
    async resolve(id: string, evidence: Evidence, now: Date, send: boolean): Promise<boolean> {
      const rows = await db
        .updateTable('incidents')
        .set({
          resolved_at: now,
          evidence: JSON.stringify(evidence),
          evidence_at: now,
          next_send_at: send
            ? sql<Date>`coalesce(next_send_at, ${now}::timestamptz)`
            : sql<Date>`next_send_at`,
        })
        .where('id', '=', id)
        .where('resolved_at', 'is', null)
        .returning('id')
        .execute();
      return rows.length === 1;
    },

    /**
     * Claims up to `limit` incidents with an event due by `now`, the oldest incident first, by pushing
     * their next send past `leaseUntil`; returns them.
     */
    async claimDue(now: Date, leaseUntil: Date, limit: number): Promise<IncidentRow[]> {
      const result = await sql<Row>`
        update incidents set next_send_at = ${leaseUntil}::timestamptz
        where id in (select id from incidents
                     where next_send_at is not null and next_send_at <= ${now}::timestamptz
                     order by opened_at, id limit ${limit} for update skip locked)
        returning ${sql.join(COLUMNS.map((c) => sql.ref(c)))}
      `.execute(db);
      return result.rows.map(toIncident).sort((a, b) => a.openedAt.getTime() - b.openedAt.getTime());
    },

    /**
     * The opening event was delivered: the resolving one is due next if the incident has resolved,
     * else nothing is.
     */
    async openedSent(id: string, now: Date): Promise<void> {
      await db
        .updateTable('incidents')
        .set({
          opened_sent_at: now,
          send_attempts: 0,
          next_send_at: sql<Date | null>`case when resolved_at is null then null else ${now}::timestamptz end`,
        })
        .where('id', '=', id)
        .execute();
    },

    /** The resolving event was delivered: nothing remains to send. */
    async resolvedSent(id: string, now: Date): Promise<void> {
      await db
        .updateTable('incidents')
        .set({ resolved_sent_at: now, send_attempts: 0, next_send_at: null })
        .where('id', '=', id)
        .execute();
    },

    /** A send failed: counted, and tried again at `retryAt`. */
    async sendFailed(id: string, retryAt: Date): Promise<void> {
      await db
        .updateTable('incidents')
        .set({ send_attempts: sql<number>`send_attempts + 1`, next_send_at: retryAt })
        .where('id', '=', id)
        .execute();
    },
  };
}

export type IncidentRepository = ReturnType<typeof incidentRepository>;
