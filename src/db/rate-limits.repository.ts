// The clients' rate-limit buckets in the database, where the queues are (QUEUE_BACKEND=postgres: the
// embedded default on PGlite, and PostgreSQL without Redis), so every API process on the database
// shares them. Each request is one statement: an UPSERT that applies domain/rate-limits.ts's
// `takeFrom` to the client's row under the row's lock, and, when it refuses, reads the row as it was.
// The table is unlogged and its updates stay in their page (migration 0031): a request costs one
// index lookup and one row version, no WAL.
import { sql } from 'kysely';
import {
  burstToleranceMs,
  emissionIntervalMs,
  type BucketTake,
  type RateLimitPolicy,
} from '../domain/rate-limits.ts';
import type { Executor } from './executor.ts';

export function rateLimitRepository(db: Executor) {
  return {
    /**
     * One request against `clientId`'s bucket at `nowMs`: `takeFrom` in one statement. A new row is
     * a full bucket taken once; an existing one moves only if the request is let through.
     */
    async take(clientId: string, nowMs: number, policy: RateLimitPolicy): Promise<BucketTake> {
      const now = sql`${nowMs}::float8`;
      const interval = sql`${emissionIntervalMs(policy)}::float8`;
      const tolerance = sql`${burstToleranceMs(policy)}::float8`;
      // `tatReadAt`: the stored TAT, or now when it is past or further ahead than a burst can leave it.
      const held = sql`(CASE WHEN b.tat_ms < ${now} OR b.tat_ms - ${now} > ${tolerance}
                             THEN ${now} ELSE b.tat_ms END)`;
      const { rows } = await sql<{ allowed: boolean; tat_ms: number }>`
        WITH taken AS (
          INSERT INTO rate_limit_buckets AS b (client_id, tat_ms)
          VALUES (${clientId}::uuid, ${now} + ${interval})
          ON CONFLICT (client_id) DO UPDATE SET tat_ms = ${held} + ${interval}
            WHERE ${held} + ${interval} - ${now} <= ${tolerance}
          RETURNING b.tat_ms
        )
        SELECT true AS allowed, tat_ms FROM taken
        UNION ALL
        SELECT false, tat_ms FROM rate_limit_buckets
         WHERE client_id = ${clientId}::uuid AND NOT EXISTS (SELECT 1 FROM taken)
      `.execute(db);
      const row = rows[0];
      // Refused on a row committed after this statement's snapshot was taken: it is a full burst
      // ahead, as near as can be said.
      if (row === undefined) return { allowed: false, tatMs: nowMs + burstToleranceMs(policy) };
      return { allowed: row.allowed, tatMs: row.tat_ms };
    },
  };
}

export type RateLimitRepository = ReturnType<typeof rateLimitRepository>;
