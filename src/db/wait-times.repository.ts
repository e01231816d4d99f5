// Wait times per offering (domain/wait-times.ts states the rules): the computation, one statement over
// the timeline that the database aggregates itself, so that no referral is read into memory, and the
// table of figures it leaves, replaced whole by each run.
//
// The statement, step by step:
//   cohort     the referrals first submitted within the window (the partial index on submits), each
//              with its first submit;
//   marks      for each, its first acceptance, its first appointment booked, whether it was rejected;
//   waits      the intervals it waited for the sender: from a step that hands it to the sender to the
//              next submit. A request to act followed by a return to draft makes two intervals with the
//              same end; the earlier start is kept, so no time is taken off twice. An interval with no
//              end yet runs on (the referral still waits).
//   durations  seconds from the first submit to each mark, less the sender's waits before the mark;
//   the rest   per offering (every offering, with or without referrals): how many referrals each figure
//              has, its percentile_cont(0.5) and (0.9), and the referrals decided and declined.
// Every step read is one taken on the referral itself (`from_referral_id IS NULL`): a redirect's
// successor carries its predecessor's steps, which happened at another service.
import { sql } from 'kysely';
import { WAIT_TIME_STEPS, type ComputedWaitTimes, type OfferingWaitTimes } from '../domain/wait-times.ts';
import type { Executor } from './executor.ts';

interface ComputedRow {
  offering_id: string;
  accepted_referrals: number;
  accepted_p50: number | null;
  accepted_p90: number | null;
  appointment_referrals: number;
  appointment_p50: number | null;
  appointment_p90: number | null;
  decided: number;
  declined: number;
}

const num = (value: unknown): number | null => (value === null ? null : Number(value));

/** The statement's list of step types, as SQL values. */
const steps = (types: readonly string[]) =>
  sql.join(
    types.map((t) => sql.lit(t)),
    sql`, `,
  );

export function waitTimesRepository(db: Executor) {
  return {
    /** Every offering's figures over the referrals first submitted in [start, end), before the threshold. */
    async compute(window: { readonly start: Date; readonly end: Date }): Promise<ComputedWaitTimes[]> {
      const submitted = sql.lit(WAIT_TIME_STEPS.submitted);
      const { rows } = await sql<ComputedRow>`
        WITH cohort AS (
          SELECT s.referral_id, min(s.produced_at) AS submitted_at
          FROM timeline_events s
          WHERE s.type = ${submitted} AND s.from_referral_id IS NULL
            AND s.produced_at >= ${window.start} AND s.produced_at < ${window.end}
            AND NOT EXISTS (
              SELECT 1 FROM timeline_events e
              WHERE e.referral_id = s.referral_id AND e.type = ${submitted} AND e.from_referral_id IS NULL
                AND e.produced_at < ${window.start}
            )
          GROUP BY s.referral_id
        ),
        marks AS (
          SELECT c.referral_id, c.submitted_at,
            (SELECT min(e.produced_at) FROM timeline_events e
              WHERE e.referral_id = c.referral_id AND e.from_referral_id IS NULL
                AND e.type = ${sql.lit(WAIT_TIME_STEPS.accepted)}) AS accepted_at,
            (SELECT min(e.produced_at) FROM timeline_events e
              WHERE e.referral_id = c.referral_id AND e.from_referral_id IS NULL
                AND e.type IN (${steps(WAIT_TIME_STEPS.appointmentBooked)})) AS appointment_at,
            EXISTS (SELECT 1 FROM timeline_events e
              WHERE e.referral_id = c.referral_id AND e.from_referral_id IS NULL
                AND e.type = ${sql.lit(WAIT_TIME_STEPS.rejected)}) AS rejected
          FROM cohort c
        ),
        wait_steps AS (
          SELECT w.referral_id, w.produced_at AS started_at,
            (SELECT min(p.produced_at) FROM timeline_events p
              WHERE p.referral_id = w.referral_id AND p.type = ${submitted} AND p.from_referral_id IS NULL
                AND p.seq > w.seq) AS ended_at
          FROM timeline_events w
          JOIN cohort c ON c.referral_id = w.referral_id
          WHERE w.type IN (${steps(WAIT_TIME_STEPS.senderWaits)}) AND w.from_referral_id IS NULL
        ),
        waits AS (
          SELECT referral_id, min(started_at) AS started_at, ended_at
          FROM wait_steps
          GROUP BY referral_id, ended_at
        ),
        durations AS (
          SELECT r.offering_id, m.rejected, m.accepted_at IS NOT NULL AS accepted,
            extract(epoch FROM m.accepted_at - m.submitted_at)::float8 - coalesce((
              SELECT sum(greatest(0, extract(epoch FROM
                least(coalesce(w.ended_at, m.accepted_at), m.accepted_at) - w.started_at)::float8))
              FROM waits w WHERE w.referral_id = m.referral_id), 0) AS accepted_seconds,
            extract(epoch FROM m.appointment_at - m.submitted_at)::float8 - coalesce((
              SELECT sum(greatest(0, extract(epoch FROM
                least(coalesce(w.ended_at, m.appointment_at), m.appointment_at) - w.started_at)::float8))
              FROM waits w WHERE w.referral_id = m.referral_id), 0) AS appointment_seconds
          FROM marks m
          JOIN referrals r ON r.id = m.referral_id
        )
        SELECT o.id AS offering_id,
          count(d.accepted_seconds)::int AS accepted_referrals,
          percentile_cont(0.5) WITHIN GROUP (ORDER BY d.accepted_seconds) AS accepted_p50,
          percentile_cont(0.9) WITHIN GROUP (ORDER BY d.accepted_seconds) AS accepted_p90,
          count(d.appointment_seconds)::int AS appointment_referrals,
          percentile_cont(0.5) WITHIN GROUP (ORDER BY d.appointment_seconds) AS appointment_p50,
          percentile_cont(0.9) WITHIN GROUP (ORDER BY d.appointment_seconds) AS appointment_p90,
          count(*) FILTER (WHERE d.accepted OR d.rejected)::int AS decided,
          count(*) FILTER (WHERE d.rejected)::int AS declined
        FROM offerings o
        LEFT JOIN durations d ON d.offering_id = o.id
        GROUP BY o.id
        ORDER BY o.id
      `.execute(db);
      return rows.map((r) => ({
        offeringId: r.offering_id,
        accepted: {
          referrals: r.accepted_referrals,
          p50Seconds: num(r.accepted_p50),
          p90Seconds: num(r.accepted_p90),
        },
        firstAppointment: {
          referrals: r.appointment_referrals,
          p50Seconds: num(r.appointment_p50),
          p90Seconds: num(r.appointment_p90),
        },
        decided: r.decided,
        declined: r.declined,
      }));
    },

    /** Replaces every offering's figures with `figures` (call it in the computation's transaction). */
    async replace(figures: readonly OfferingWaitTimes[]): Promise<void> {
      await db.deleteFrom('wait_times').execute();
      if (figures.length === 0) return;
      await db
        .insertInto('wait_times')
        .values(
          figures.map((f) => ({
            offering_id: f.offeringId,
            computed_at: f.computedAt,
            window_start: f.windowStart,
            window_end: f.windowEnd,
            accepted_referrals: f.accepted.referrals,
            accepted_p50_seconds: f.accepted.p50Seconds,
            accepted_p90_seconds: f.accepted.p90Seconds,
            appointment_referrals: f.firstAppointment.referrals,
            appointment_p50_seconds: f.firstAppointment.p50Seconds,
            appointment_p90_seconds: f.firstAppointment.p90Seconds,
            decided_referrals: f.decided,
            declined_share: f.declinedShare,
          })),
        )
        .execute();
    },

    /** The offering's figures, or undefined when none were computed for it. */
    async find(offeringId: string): Promise<OfferingWaitTimes | undefined> {
      const row = await db
        .selectFrom('wait_times')
        .selectAll()
        .where('offering_id', '=', offeringId)
        .executeTakeFirst();
      return row === undefined ? undefined : figuresOf(row);
    },

    /** Every offering's figures (a catalog's worth of rows). */
    async all(): Promise<OfferingWaitTimes[]> {
      const rows = await db.selectFrom('wait_times').selectAll().orderBy('offering_id').execute();
      return rows.map(figuresOf);
    },
  };
}

function figuresOf(row: {
  offering_id: string;
  computed_at: Date;
  window_start: Date;
  window_end: Date;
  accepted_referrals: number;
  accepted_p50_seconds: number | null;
  accepted_p90_seconds: number | null;
  appointment_referrals: number;
  appointment_p50_seconds: number | null;
  appointment_p90_seconds: number | null;
  decided_referrals: number;
  declined_share: number | null;
}): OfferingWaitTimes {
  return {
    offeringId: row.offering_id,
    computedAt: row.computed_at,
    windowStart: row.window_start,
    windowEnd: row.window_end,
    accepted: {
      referrals: row.accepted_referrals,
      p50Seconds: num(row.accepted_p50_seconds),
      p90Seconds: num(row.accepted_p90_seconds),
    },
    firstAppointment: {
      referrals: row.appointment_referrals,
      p50Seconds: num(row.appointment_p50_seconds),
      p90Seconds: num(row.appointment_p90_seconds),
    },
    decided: row.decided_referrals,
    declinedShare: num(row.declined_share),
  };
}
