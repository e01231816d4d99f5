// The audit trail's chains (migration 0016): the rows the sealer has yet to chain, the head of each
// chain, the sealed rows of a chain in order, and the signed checkpoints.
import { sql } from 'kysely';
import type { AuditContent } from '../domain/audit-chain.ts';
import type { Executor } from './executor.ts';

export interface AuditChainRow extends AuditContent {
  readonly seq: string;
  readonly chain: string | null;
  readonly chainIndex: number | null;
  readonly prevHash: string | null;
  readonly rowHash: string | null;
  readonly sealedAt: Date | null;
}

export interface SealedRow {
  readonly seq: string;
  readonly chain: string;
  readonly chainIndex: number;
  readonly prevHash: string;
  readonly rowHash: string;
}

export interface ChainHead {
  readonly index: number;
  readonly hash: string;
}

export interface Checkpoint {
  readonly seq: string;
  readonly createdAt: Date;
  readonly heads: Readonly<Record<string, ChainHead>>;
  readonly signature: string | null;
  readonly keyId: string | null;
}

const COLUMNS = [
  'seq',
  'id',
  'occurred_at',
  'request_id',
  'api_key_id',
  'system',
  'institution_id_type',
  'institution_id',
  'requester_identifier',
  'action',
  'outcome',
  'referral_ids',
  'chain',
  'chain_index',
  'prev_hash',
  'row_hash',
  'sealed_at',
] as const;

function toRow(r: {
  seq: string;
  id: string;
  occurred_at: Date;
  request_id: string;
  api_key_id: string | null;
  system: string | null;
  institution_id_type: string | null;
  institution_id: string | null;
  requester_identifier: string | null;
  action: string;
  outcome: string;
  referral_ids: string[];
  chain: string | null;
  chain_index: number | null;
  prev_hash: string | null;
  row_hash: string | null;
  sealed_at: Date | null;
}): AuditChainRow {
  return {
    seq: r.seq,
    id: r.id,
    occurredAt: r.occurred_at,
    requestId: r.request_id,
    apiKeyId: r.api_key_id,
    system: r.system,
    institution:
      r.institution_id_type === null || r.institution_id === null
        ? null
        : { idType: r.institution_id_type, id: r.institution_id },
    requesterIdentifier: r.requester_identifier,
    action: r.action,
    outcome: r.outcome,
    referralIds: r.referral_ids,
    chain: r.chain,
    chainIndex: r.chain_index,
    prevHash: r.prev_hash,
    rowHash: r.row_hash,
    sealedAt: r.sealed_at,
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

    async heads(chains: readonly string[]): Promise<Map<string, ChainHead>> {
      if (chains.length === 0) return new Map();
      const rows = await db
        .selectFrom('audit_chain_heads')
        .select(['chain', 'chain_index', 'row_hash'])
        .where('chain', 'in', [...chains])
        .execute();
      return new Map(rows.map((r) => [r.chain, { index: r.chain_index, hash: r.row_hash }]));
    },

    /**
     * Seals `rows` and moves their chains' heads, in the caller's transaction: one statement for the
     * rows and one for the heads, whatever their number.
     */
    async seal(rows: readonly SealedRow[], heads: ReadonlyMap<string, ChainHead>, now: Date): Promise<void> {
      if (rows.length > 0) {
        await sql`
          update audit_events a
             set chain = v.chain, chain_index = v.chain_index, prev_hash = v.prev_hash,
                 row_hash = v.row_hash, sealed_at = ${now}
            from unnest(${rows.map((r) => r.seq)}::bigint[], ${rows.map((r) => r.chain)}::text[],
                        ${rows.map((r) => r.chainIndex)}::integer[], ${rows.map((r) => r.prevHash)}::text[],
                        ${rows.map((r) => r.rowHash)}::text[])
                 as v(seq, chain, chain_index, prev_hash, row_hash)
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
        })
        .execute();
    },

    /** Every checkpoint, oldest first. */
    async checkpoints(): Promise<Checkpoint[]> {
      const rows = await db.selectFrom('audit_checkpoints').selectAll().orderBy('seq').execute();
      return rows.map((r) => ({
        seq: r.seq,
        createdAt: r.created_at,
        heads: r.heads,
        signature: r.signature,
        keyId: r.key_id,
      }));
    },

    /** The chains with a head, of the days from `sinceDay` (YYYY-MM-DD) on, or of every day. */
    async chains(sinceDay?: string): Promise<string[]> {
      const rows = await db.selectFrom('audit_chain_heads').select('chain').execute();
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

    /** The checkpoints that name a chain of the days `fromDay` to `toDay` (both included), oldest first. */
    async checkpointsNaming(fromDay: string, toDay: string): Promise<Checkpoint[]> {
      const rows = await db
        .selectFrom('audit_checkpoints')
        .selectAll()
        .where(
          sql<boolean>`exists (select 1 from jsonb_object_keys(heads) as k(chain)
                       where right(k.chain, 10) between ${fromDay} and ${toDay})`,
        )
        .orderBy('seq')
        .execute();
      return rows.map((r) => ({
        seq: r.seq,
        createdAt: r.created_at,
        heads: r.heads,
        signature: r.signature,
        keyId: r.key_id,
      }));
    },
  };
}

export type AuditChainRepository = ReturnType<typeof auditChainRepository>;
