// Seals the audit trail and verifies it. Requests write their audit rows as before; the sealer chains
// them afterwards (domain/audit-chain.ts), so that no request waits for another's row: every few
// seconds one sealer at a time (an advisory lock) takes the rows written a little while ago, in the
// order written, links each to its chain's head, and records a checkpoint of the heads it moved,
// linked to the checkpoint before it and signed with AUDIT_SIGNING_KEY (a private Ed25519 JWK that is
// not in the database) as a compact JWS.
//
// The sealer keeps the trail's times in order whatever the clocks of the processes that seal: a row
// is never sealed before the last row of its chain, nor a checkpoint made before the one before it or
// before the rows it records.
//
// A trail begun without AUDIT_SIGNING_KEY has unsigned checkpoints. Once the key is set, the sealer
// signs the next ones, but that does not vouch for those before: the sealer cannot tell a trail kept
// without a key from one whose signatures were removed. `adopt`, run by an operator who knows which it
// is, signs a checkpoint with no heads after them, which vouches for every checkpoint before it.
//
// `verify` reads the trail in one snapshot and runs the checks of audit-chain-check.ts on it: every
// checkpoint (signatures, links, heads moving forward), every chain against every head recorded for
// it, and the rows the sealer should have sealed by now. The chains of a month retention archived and
// dropped (services/retention/) are left to `refhub retention verify` of its archive.
import { CompactSign, importJWK, type JWK } from 'jose';
import { chainOf, dayOfChain, GENESIS_HASH, HASH_FORM, rowHashOf } from '../../domain/audit-chain.ts';
import type { Clock } from '../../domain/clock.ts';
import type {
  AuditChainRepository,
  ChainHead,
  AuditChainRow,
  Checkpoint,
  SealedRow,
  SealingHead,
} from '../../db/audit/audit-chain.repository.ts';
import type { Stores } from '../../db/stores.ts';
import type { Metrics } from '../../observability/metrics.ts';
import { createPeriodicLoop } from '../../queue/poll-loop.ts';
import {
  CHECKPOINT_FORM,
  checkChain,
  checkCheckpoints,
  checkpointBytes,
  checkpointHashOf,
  isAdoption,
  publicJwkOf,
  SEAL_LATE_MS,
  type Break,
} from './audit-chain-check.ts';

// The checks are pure code of their own (audit-chain-check.ts), which `refhub audit verify --file`
// runs on an export too; these names stay importable from here.
export { checkpointBytes, SEAL_LATE_MS, type Break } from './audit-chain-check.ts';

/** A row is sealed once it is this old, so that rows still being written are chained in their order. */
export const SEAL_AFTER_MS = 2_000;
const BATCH = 500;
/** An export reads the rows this many at a time. */
const EXPORT_PAGE = 1_000;

/** What an export hands on, in order: the rows of its chains, then the checkpoints that name them. */
export type ExportItem =
  | { readonly type: 'row'; readonly row: AuditChainRow }
  | { readonly type: 'checkpoint'; readonly checkpoint: Checkpoint };

export interface AuditChainDeps {
  /** The trail's chains, read and sealed in transactions of their own. */
  readonly stores: Pick<Stores, 'transaction'>;
  readonly clock: Clock;
  /** AUDIT_SIGNING_KEY: a private Ed25519 JWK with a `kid`; checkpoints go unsigned without one. */
  readonly signingKey?: JWK | undefined;
  /**
   * AUDIT_PUBLIC_KEYS: the public keys AUDIT_SIGNING_KEY had before a rotation, each with its `kid`,
   * for the checkpoints they signed.
   */
  readonly earlierPublicKeys?: readonly JWK[] | undefined;
  /** Each round of `start` counted (`refhub_audit_checkpoint_…`), so an alert sees a sealer failing. */
  readonly metrics?: Pick<Metrics, 'auditSealed'>;
}

/** What `adopt` did. */
export type Adoption =
  | {
      readonly kind: 'adopted';
      readonly count: number;
      readonly oldest: Checkpoint;
      readonly newest: Checkpoint;
    }
  | { readonly kind: 'nothing' }
  | { readonly kind: 'refused'; readonly unsignedAfterSigned: Checkpoint };

export interface Verification {
  readonly chains: number;
  readonly rows: number;
  readonly checkpoints: number;
  readonly unsignedCheckpoints: number;
  /** The first broken link, or undefined when every chain holds. */
  readonly broken?: Break;
}

export function createAuditChain(deps: AuditChainDeps) {
  const signingKey = deps.signingKey;
  const privateKey = signingKey === undefined ? undefined : importJWK(signingKey, 'EdDSA');
  const publicJwk: JWK | undefined = signingKey === undefined ? undefined : publicJwkOf(signingKey);
  const publicKeys: readonly JWK[] = [
    ...(publicJwk === undefined ? [] : [publicJwk]),
    ...(deps.earlierPublicKeys ?? []).filter((k) => k.kid !== publicJwk?.kid).map((k) => publicJwkOf(k)),
  ];

  /**
   * Writes the checkpoint of `heads` after the newest: linked to it, and made no earlier than it or
   * than the rows it records (`sealedAt`).
   */
  async function writeCheckpoint(
    repo: AuditChainRepository,
    heads: Record<string, ChainHead>,
    sealedAt: Date | undefined,
  ): Promise<void> {
    const last = await repo.lastCheckpoint();
    const checkpoint = {
      createdAt: latest(deps.clock.now(), sealedAt, last?.createdAt),
      heads,
      form: CHECKPOINT_FORM,
      prevHash: last === undefined ? GENESIS_HASH : checkpointHashOf(last),
    };
    const signature = await sign(checkpointBytes(checkpoint));
    await repo.insertCheckpoint({ ...checkpoint, signature, keyId: signingKey?.kid ?? null });
  }

  async function sign(payload: Uint8Array): Promise<string | null> {
    if (privateKey === undefined) return null;
    return new CompactSign(payload)
      .setProtectedHeader({ alg: 'EdDSA', kid: signingKey?.kid ?? '' })
      .sign(await privateKey);
  }

  return {
    /** The public half of the signing key, for auditors; undefined without a key. */
    publicKey: publicJwk,

    /** Every public key a verification here checks signatures with: the signing key's, then earlier ones. */
    publicKeys,

    /** Chains every row old enough, and records a signed checkpoint; how many rows it sealed. */
    async seal(): Promise<number> {
      return deps.stores.transaction(async (tx) => {
        const repo = tx.audit.chain;
        await repo.lockSealer();
        let sealed = 0;
        const moved = new Map<string, SealingHead>();
        let lastSealedAt: Date | undefined;
        for (;;) {
          const now = deps.clock.now();
          const rows = await repo.unsealed(new Date(now.getTime() - SEAL_AFTER_MS), BATCH);
          if (rows.length === 0) break;
          const chains = [...new Set(rows.map(chainOf))];
          const heads = await repo.heads(chains);
          for (const [chain, head] of moved) heads.set(chain, head);
          const sealedRows: SealedRow[] = rows.map((row) => {
            const chain = chainOf(row);
            const head = heads.get(chain);
            const prevHash = head?.hash ?? GENESIS_HASH;
            const chainIndex = (head?.index ?? 0) + 1;
            // Never before the chain's last row: the clocks of the processes that seal may differ.
            const sealedAt = latest(now, head?.sealedAt ?? undefined);
            const rowHash = rowHashOf(prevHash, { ...row, chain, chainIndex, sealedAt }, HASH_FORM);
            const next = { index: chainIndex, hash: rowHash, sealedAt };
            heads.set(chain, next);
            moved.set(chain, next);
            lastSealedAt = latest(sealedAt, lastSealedAt);
            return { seq: row.seq, chain, chainIndex, prevHash, rowHash, sealedAt, hashForm: HASH_FORM };
          });
          await repo.seal(sealedRows, new Map(chains.map((c) => [c, heads.get(c) as ChainHead])));
          sealed += rows.length;
          if (rows.length < BATCH) break;
        }
        if (sealed === 0) return 0;
        await writeCheckpoint(
          repo,
          Object.fromEntries([...moved].map(([chain, { index, hash }]) => [chain, { index, hash }])),
          lastSealedAt,
        );
        return sealed;
      });
    },

    /**
     * Signs for the unsigned checkpoints of a trail begun without a key: a signed checkpoint with no
     * heads after them. Refused when an unsigned checkpoint follows a signed one (that is a break, not
     * a trail begun without a key). What it signed for, or why it wrote nothing.
     */
    async adopt(): Promise<Adoption> {
      if (privateKey === undefined) throw new Error('adopt needs AUDIT_SIGNING_KEY');
      return deps.stores.transaction(async (tx) => {
        const repo = tx.audit.chain;
        await repo.lockSealer();
        const checkpoints = await repo.checkpoints();
        const firstSigned = checkpoints.findIndex((c) => c.signature !== null);
        const late =
          firstSigned < 0 ? undefined : checkpoints.slice(firstSigned).find((c) => c.signature === null);
        if (late !== undefined) return { kind: 'refused', unsignedAfterSigned: late };
        const unsigned = checkpoints.filter((c) => c.signature === null);
        const [oldest] = unsigned;
        const newest = unsigned.at(-1);
        if (oldest === undefined || newest === undefined || checkpoints.some(isAdoption))
          return { kind: 'nothing' };
        await writeCheckpoint(repo, {}, undefined);
        return { kind: 'adopted', count: unsigned.length, oldest, newest };
      });
    },

    /**
     * Seals every `intervalMs` until the returned function is called; a round that fails is reported
     * to `onError` and the next one tries again (the rows wait, unsealed, meanwhile). Each round is
     * counted in the metrics, a success with its time.
     */
    start(intervalMs: number, onError: (error: unknown) => void): () => void {
      const round = async () => {
        try {
          await this.seal();
        } catch (error) {
          deps.metrics?.auditSealed('failed', deps.clock.now());
          throw error;
        }
        deps.metrics?.auditSealed('succeeded', deps.clock.now());
      };
      const loop = createPeriodicLoop(round, intervalMs, onError);
      loop.start();
      return () => {
        void loop.stop();
      };
    },

    /**
     * The sealed rows of the chains of the days `fromDay` to `toDay` (YYYY-MM-DD, both included), in
     * chain order, then every checkpoint that names one of those chains, oldest first: all from one
     * snapshot, so that rows and checkpoints agree however the sealer runs meanwhile. `write` takes
     * each in turn; how many of each there were.
     */
    async exportTrail(
      fromDay: string,
      toDay: string,
      write: (item: ExportItem) => Promise<void> | void,
    ): Promise<{ rows: number; checkpoints: number }> {
      return deps.stores.transaction(
        async (tx) => {
          const repo = tx.audit.chain;
          let rows = 0;
          let after: AuditChainRow | undefined;
          for (;;) {
            const page = await repo.exportRows(fromDay, toDay, after, EXPORT_PAGE);
            for (const row of page) await write({ type: 'row', row });
            rows += page.length;
            after = page.at(-1);
            if (page.length < EXPORT_PAGE) break;
          }
          const checkpoints = await repo.checkpointsNaming(fromDay, toDay);
          for (const checkpoint of checkpoints) await write({ type: 'checkpoint', checkpoint });
          return { rows, checkpoints: checkpoints.length };
        },
        { snapshot: true },
      );
    },

    /**
     * Checks every chain (of the days from `sinceDay` on) and every checkpoint, all from one snapshot;
     * names the first break. Signatures are checked with `keys` (by default `publicKeys`); with none,
     * they are not checked, and the heads are taken as recorded.
     */
    async verify(sinceDay?: string, keys: readonly JWK[] = publicKeys): Promise<Verification> {
      return deps.stores.transaction(
        async (tx) => {
          const repo = tx.audit.chain;
          const checkpoints = await repo.checkpoints();
          const checked = await checkCheckpoints(checkpoints, {
            keys: keys.length === 0 ? undefined : keys,
            whole: true,
            unsignedHint:
              ', or AUDIT_SIGNING_KEY was set on a trail begun without it (`refhub audit adopt` signs for its unsigned checkpoints)',
          });
          const unsignedCheckpoints = checked.unsigned;
          if (checked.broken !== undefined)
            return {
              chains: 0,
              rows: 0,
              checkpoints: checkpoints.length,
              unsignedCheckpoints,
              broken: checked.broken,
            };
          // The chains of a month retention archived and dropped are its archive's to check
          // (`refhub retention verify`): their rows are no longer here.
          const archived = new Set((await tx.retention.archived('audit_events')).map((a) => a.month));
          const chains = [...new Set([...(await repo.chains(sinceDay)), ...checked.heads.keys()])]
            .filter((chain) => sinceDay === undefined || dayOfChain(chain) >= sinceDay)
            .filter((chain) => !archived.has(dayOfChain(chain).slice(0, 7)))
            .sort();
          let rowsChecked = 0;
          const result = (broken?: Break): Verification => ({
            chains: chains.length,
            rows: rowsChecked,
            checkpoints: checkpoints.length,
            unsignedCheckpoints,
            ...(broken === undefined ? {} : { broken }),
          });
          for (const chain of chains) {
            const checkedChain = checkChain(
              chain,
              await repo.chainRows(chain),
              checked.heads.get(chain) ?? [],
            );
            rowsChecked += checkedChain.rows;
            if (checkedChain.broken !== undefined) return result(checkedChain.broken);
          }
          // A row the sealer should have chained by now.
          const late = await repo.unsealed(new Date(deps.clock.now().getTime() - SEAL_LATE_MS), 1);
          const [first] = late;
          if (first !== undefined)
            return result({
              chain: chainOf(first),
              rowId: first.id,
              problem:
                'a row older than the sealer allows is not sealed: it was inserted, or the sealer is stopped',
            });
          return result();
        },
        { snapshot: true },
      );
    },
  };
}

/** The latest of the times given. */
function latest(first: Date, ...more: (Date | undefined)[]): Date {
  return more.reduce<Date>((a, b) => (b !== undefined && b > a ? b : a), first);
}

export type AuditChain = ReturnType<typeof createAuditChain>;
