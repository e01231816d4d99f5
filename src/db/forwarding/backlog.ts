// Each institution's backlog of forwards waiting for a worker, which ranks a new forward behind its
// institution's others (queue/forward.queue.ts says how the rank orders the queue). A forward joins
// as its job is added and leaves as a worker starts it; one whose job never starts counts only until
// it is older than the horizon, and is deleted when its institution's next forwards are ranked.
// Rows hold institution keys and job IDs only. Rows are deleted as fast as they are added, so both
// statements walk the table's indexes (migration 0032) rather than read what was deleted.
import { sql } from 'kysely';
import type { Executor } from '../executor.ts';

/** A forward in its institution's backlog: the institution key and the job's ID. */
export interface BacklogEntry {
  readonly institution: string;
  readonly jobId: string;
}

export function forwardBacklogRepository(db: Executor) {
  return {
    /**
     * Adds the forwards, in order (a job ID already there keeps its place), and answers each one's
     * rank: the size of its institution's backlog once it is in, so 1 for the only one waiting.
     * Entries added before `since` are deleted and counted no more. One statement; a batch ranked
     * at the same moment by another process may share ranks with this one, which only ties them.
     */
    async rank(entries: readonly BacklogEntry[], now: Date, since: Date): Promise<number[]> {
      if (entries.length === 0) return [];
      const institutions = [...new Set(entries.map((e) => e.institution))];
      // refhub_rank_forwards (migration 0032) deletes the entries older than the horizon, adds the
      // batch and counts each institution's backlog, planned as index scans whatever the statistics
      // say, so that the entries of forwards already started are marked and skipped, not read again.
      const { rows } = await sql<{ waiting: Record<string, number>; added: string[] }>`
        SELECT waiting, added_entries AS added FROM refhub_rank_forwards(
          ${institutions}::text[], ${entries.map((e) => e.institution)}::text[],
          ${entries.map((e) => e.jobId)}::text[], ${now}::timestamptz, ${since}::timestamptz)`.execute(db);
      const row = rows[0];
      if (row === undefined) throw new Error('the forward ranks were not written');
      // The statement reads the backlog as it was before this batch: count the batch in, in order.
      const waiting = new Map(Object.entries(row.waiting));
      const added = new Set(row.added);
      return entries.map((e) => {
        const entry = `${e.institution} ${e.jobId}`;
        let size = waiting.get(e.institution) ?? 0;
        if (added.delete(entry)) waiting.set(e.institution, ++size);
        return Math.max(1, size);
      });
    },

    /** Takes forwards out of their institutions' backlogs (started, or never added to the queue). */
    async forget(entries: readonly BacklogEntry[]): Promise<void> {
      if (entries.length === 0) return;
      // One index lookup per entry (refhub_forget_forwards, migration 0032), never a scan of the table.
      await sql`
        SELECT refhub_forget_forwards(
          ${entries.map((e) => e.institution)}::text[], ${entries.map((e) => e.jobId)}::text[])`.execute(db);
    },
  };
}
