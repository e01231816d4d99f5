// The audit trail's chains (migrations 0016 and 0020): the rows the sealer has yet to chain, the head of
// each chain, the sealed rows of a chain in order, and the signed checkpoints.
import { sql, type Selectable } from 'kysely';
import type { AuditContent } from '../../domain/audit-chain.ts';
import type { Executor } from '../executor.ts';
import type { AuditEventsTable } from '../schema.ts';
import { AUDIT_COLUMNS, AUDIT_SEAL_COLUMNS, auditContentOf, type AuditColumn } from './audit.repository.ts';

export interface AuditChainRow extends AuditContent {
  readonly seq: string;
  readonly chain: string | null;
  readonly chainIndex: number | null;
  readonly prevHash: string | null;
  readonly rowHash: string | null;
  readonly sealedAt: Date | null;
  readonly hashForm: number | null;
}

export interface SealedRow {
  readonly seq: string;
  readonly chain: string;
  readonly chainIndex: number;
  readonly prevHash: string;
  readonly rowHash: string;
  readonly sealedAt: Date;
  readonly hashForm: number;
}

export interface ChainHead {
  readonly index: number;
  readonly hash: string;
}

/** A chain's head as the sealer continues it: with the time its last row was sealed. */
export interface SealingHead extends ChainHead {
  readonly sealedAt: Date | null;
}

export interface Checkpoint {
  readonly seq: string;
  readonly createdAt: Date;
  readonly heads: Readonly<Record<string, ChainHead>>;
  readonly signature: string | null;
  readonly keyId: string | null;
  /** What the signature covers (services/audit/audit-chain-check.ts): 1, or 2 with `prevHash`. */
  readonly form: number;
  /** Form 2: the hash of the checkpoint before it; null in form 1. */
  readonly prevHash: string | null;
}

/** Every column of a row the chain reads: what a writer set, then what the sealer set. */
const COLUMNS = ['seq', ...AUDIT_COLUMNS, ...AUDIT_SEAL_COLUMNS] as const;

function toRow(
  r: Pick<Selectable<AuditEventsTable>, 'seq' | AuditColumn | (typeof AUDIT_SEAL_COLUMNS)[number]>,
): AuditChainRow {
  return {
    seq: r.seq,
    ...auditContentOf(r),
    chain: r.chain,
    chainIndex: r.chain_index,
    prevHash: r.prev_hash,
    rowHash: r.row_hash,
    sealedAt: r.sealed_at,
    hashForm: r.hash_form,
  };
}

function toCheckpoint(r: {
  seq: string;
  created_at: Date;
  heads: Record<string, ChainHead>;
  signature: string | null;
  key_id: string | null;
  form: number;
  prev_hash: string | null;
}): Checkpoint {
  return {
    seq: r.seq,
    createdAt: r.created_at,
    heads: r.heads,
    signature: r.signature,
    keyId: r.key_id,
    form: r.form,
    prevHash: r.prev_hash,
  };
}

export function auditChainRepository(db: Executor) {
  return {
    /**
     * Holds the sealer's lock until the transaction ends: one sealer at a time, across processes. A
     * transaction-scoped advisory lock, so a sealer that dies releases it with its connection.
     */
    async lockSealer(): Promise<void> {
      await sql`select pg_advisory_xact_lock(hashtext('refhub:audit-sealer'))`.execute(db);
    },

    /** Up to `limit` rows not yet sealed that occurred before `before`, in the order written. */
    async unsealed(before: Date, limit: number): Promise<AuditChainRow[]> {
      const rows = await db
        .selectFrom('audit_events')
        .select(COLUMNS)
        .where('sealed_at', 'is', null)
        .where('occurred_at', '<', before)
        .orderBy('seq')
        .limit(limit)
        .execute();
      return rows.map(toRow);
    },

    /** The heads of `chains`, each with when its last row was sealed. */
    async heads(chains: readonly string[]): Promise<Map<string, SealingHead>> {
      if (chains.length === 0) return new Map();
      const rows = await db
        .selectFrom('audit_chain_heads as h')
        .leftJoin('audit_events as e', (join) =>
          join.onRef('e.chain', '=', 'h.chain').onRef('e.chain_index', '=', 'h.chain_index'),
        )
        .select(['h.chain', 'h.chain_index', 'h.row_hash', 'e.sealed_at'])
        .where('h.chain', 'in', [...chains])
        .execute();
      return new Map(
        rows.map((r) => [r.chain, { index: r.chain_index, hash: r.row_hash, sealedAt: r.sealed_at }]),
      );
    },

    /**
     * Seals `rows` and moves their chains' heads, in the caller's transaction: one statement for the
     * rows and one for the heads, whatever their number.
     */
    async seal(rows: readonly SealedRow[], heads: ReadonlyMap<string, ChainHead>): Promise<void> {
      if (rows.length > 0) {
        await sql`
          update audit_events a
             set chain = v.chain, chain_index = v.chain_index, prev_hash = v.prev_hash,
                 row_hash = v.row_hash, sealed_at = v.sealed_at, hash_form = v.hash_form
            from unnest(${rows.map((r) => r.seq)}::bigint[], ${rows.map((r) => r.chain)}::text[],
                        ${rows.map((r) => r.chainIndex)}::integer[], ${rows.map((r) => r.prevHash)}::text[],
                        ${rows.map((r) => r.rowHash)}::text[],
                        ${rows.map((r) => r.sealedAt.toISOString())}::timestamptz[],
                        ${rows.map((r) => r.hashForm)}::smallint[])
                 as v(seq, chain, chain_index, prev_hash, row_hash, sealed_at, hash_form)
           where a.seq = v.seq and a.sealed_at is null`.execute(db);
      }
      if (heads.size > 0) {
        const entries = [...heads];
        await sql`
          insert into audit_chain_heads (chain, chain_index, row_hash)
          select * from unnest(${entries.map(([chain]) => chain)}::text[],
                               ${entries.map(([, head]) => head.index)}::integer[],
                               ${entries.map(([, head]) => head.hash)}::text[])
          on conflict (chain) do update
            set chain_index = excluded.chain_index, row_hash = excluded.row_hash`.execute(db);
      }
    },

    async insertCheckpoint(checkpoint: Omit<Checkpoint, 'seq'>): Promise<void> {
      await db
        .insertInto('audit_checkpoints')
        .values({
          created_at: checkpoint.createdAt,
          heads: JSON.stringify(checkpoint.heads),
          signature: checkpoint.signature,
          key_id: checkpoint.keyId,
          form: checkpoint.form,
          prev_hash: checkpoint.prevHash,
        })
        .execute();
    },

    /** The newest checkpoint, which the next one links to. */
    async lastCheckpoint(): Promise<Checkpoint | undefined> {
      const row = await db
        .selectFrom('audit_checkpoints')
        .selectAll()
        .orderBy('seq', 'desc')
        .limit(1)
        .executeTakeFirst();
      return row === undefined ? undefined : toCheckpoint(row);
    },

    /** Every checkpoint, oldest first. */
    async checkpoints(): Promise<Checkpoint[]> {
      const rows = await db.selectFrom('audit_checkpoints').selectAll().orderBy('seq').execute();
      return rows.map(toCheckpoint);
    },

    /**
     * The chains of the days from `sinceDay` (YYYY-MM-DD) on, or of every day: those with a head, and
     * those any sealed row names (a row written straight into a chain of its own is checked too).
     */
    async chains(sinceDay?: string): Promise<string[]> {
      const rows = await db
        .selectFrom('audit_chain_heads')
        .select('chain')
        .union(
          db
            .selectFrom('audit_events')
            .select(sql<string>`chain`.as('chain'))
            .where('chain', 'is not', null),
        )
        .execute();
      return rows
        .map((r) => r.chain)
        .filter((chain) => sinceDay === undefined || chain.slice(chain.lastIndexOf('/') + 1) >= sinceDay)
        .sort();
    },

    /** The sealed rows of `chain`, in chain order. */
    async chainRows(chain: string): Promise<AuditChainRow[]> {
      const rows = await db
        .selectFrom('audit_events')
        .select(COLUMNS)
        .where('chain', '=', chain)
        .orderBy('chain_index')
        .orderBy('seq')
        .execute();
      return rows.map(toRow);
    },

    /**
     * Up to `limit` sealed rows of the chains of the days `fromDay` to `toDay` (YYYY-MM-DD, both
     * included), in chain order (chain, index, then the order written), after the row `after`: an
     * export reads a few days' chains page by page.
     */
    async exportRows(
      fromDay: string,
      toDay: string,
      after: Pick<AuditChainRow, 'chain' | 'chainIndex' | 'seq'> | undefined,
      limit: number,
    ): Promise<AuditChainRow[]> {
      let query = db
        .selectFrom('audit_events')
        .select(COLUMNS)
        .where('chain', 'is not', null)
        .where(sql<string>`right(chain, 10)`, '>=', fromDay)
        .where(sql<string>`right(chain, 10)`, '<=', toDay);
      if (after !== undefined)
        query = query.where(
          sql<boolean>`(chain, chain_index, seq) > (${after.chain}, ${after.chainIndex}::integer, ${after.seq}::bigint)`,
        );
      const rows = await query.orderBy('chain').orderBy('chain_index').orderBy('seq').limit(limit).execute();
      return rows.map(toRow);
    },

    /**
     * The checkpoints from the first that names a chain of the days `fromDay` to `toDay` (both
     * included) to the last that does, every one between included, oldest first: a run in which each
     * checkpoint of form 2 links to the one before it. When the run holds unsigned checkpoints, it goes
     * on to the adoption that signed for them (a signed checkpoint with no heads), if there is one.
     */
    async checkpointsNaming(fromDay: string, toDay: string): Promise<Checkpoint[]> {
      const { rows } = await sql<Parameters<typeof toCheckpoint>[0]>`
        with run as (
          select min(c.seq) as first, max(c.seq) as last from audit_checkpoints c
           where exists (select 1 from jsonb_object_keys(c.heads) as k(chain)
                         where right(k.chain, 10) between ${fromDay} and ${toDay})),
        adoption as (
          select min(a.seq) as seq from audit_checkpoints a, run
           where a.signature is not null and a.heads = '{}'::jsonb
             and a.seq > (select max(u.seq) from audit_checkpoints u
                           where u.signature is null and u.seq between run.first and run.last))
        select c.seq, c.created_at, c.heads, c.signature, c.key_id, c.form, c.prev_hash
          from audit_checkpoints c, run
         where c.seq >= run.first and c.seq <= greatest(run.last, (select seq from adoption))
         order by c.seq`.execute(db);
      return rows.map(toCheckpoint);
    },
  };
}

export type AuditChainRepository = ReturnType<typeof auditChainRepository>;
