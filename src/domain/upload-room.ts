// The room uploads take in one process's memory (docs/attachments.md, "Storage"), as rules: who may
// hold what, and who waits for whom. The API's attachment route and the web form take it through
// api/upload-budget.ts, which adds the clock (how long an upload may wait) and the HTTP answers.
//
// An upload holds room in three ways, each in its own pools:
// - a claim, before a byte is read: the length it declares (at most the size limit), counted in its
//   credential's share and its institution's share. The claims in a share never exceed it, so every
//   upload a share admitted can arrive in full: a credential's or an institution's uploads never wait
//   for each other's bytes, and whatever they do (trickle a byte every few seconds) stays within
//   their own share.
// - its body as it arrives, a block at a time, counted in the room for arriving bodies and in the
//   total. That room is the total less what is kept for checking and storing, so bodies arriving,
//   however slowly, can never keep a body that has arrived from being stored. A block is given only
//   while every upload admitted could still arrive in full, one after another, each taking what those
//   before it gave back (the banker's rule, the claims being what each may still need): so the bodies
//   arriving can never all be waiting for each other's room, and a slow one is left to finish last.
// - once its body has arrived, the room to check and store it (several copies of it), counted in the
//   total alone; its claim and its place among the arriving bodies are given back then.
// Requests are granted in the order they were made, except that one that fits never waits for an
// earlier one held back by other pools: a request waits only for those ahead of it in a pool it needs.
// Blocks, all small, do not queue behind each other: any block that keeps the rule above is given.
// A request larger than a pool still goes when nothing else holds any of that pool.

/** Which room an upload lacked: its credential's share, its institution's, or the process's. */
export type RoomShortage = 'credential' | 'institution' | 'server';

export interface UploadRoomLimits {
  /** Everything uploads may hold at once: bodies arriving, and bodies being checked and stored. */
  readonly totalBytes: number;
  /** What bodies still arriving may hold together; the rest of the total is for checking and storing. */
  readonly arrivingBytes: number;
  /** What one credential's uploads may claim at once. */
  readonly perCredentialBytes: number;
  /** What one institution's uploads may claim at once. */
  readonly perInstitutionBytes: number;
}

/** Who an upload is for: the credential it came with, and the institution it acts for when known. */
export interface UploadParty {
  readonly credential: string;
  readonly institution: string | undefined;
}

/** A request for room that was not granted: given up after its wait, or its upload released. */
export class NoRoomError extends Error {
  override readonly name = 'NoRoomError';
  readonly shortage: RoomShortage;
  constructor(shortage: RoomShortage) {
    super(`no room for the upload (${shortage})`);
    this.shortage = shortage;
  }
}

/** The room one upload holds. One request at a time. */
export interface UploadHold {
  /** Claims `bytes` of the credential's and the institution's shares. */
  claim(bytes: number): Promise<void>;
  /** Takes room for `bytes` more of the body, as they arrive. */
  arrive(bytes: number): Promise<void>;
  /**
   * Takes room to check and store the body: `bytes` held in all (what the body holds counts towards
   * it). Once granted, the claim and the room among arriving bodies are given back.
   */
  store(bytes: number): Promise<void>;
  /** Ends the request waiting, if one is: it fails with NoRoomError naming the room it lacked. */
  giveUp(): void;
  /** Gives back everything, and ends a request still waiting. Once only. */
  release(): void;
  /** Bytes this upload holds of the total. */
  readonly held: number;
}

export interface UploadRoom {
  open(party: UploadParty): UploadHold;
  /** Bytes held of the total, by every upload. */
  readonly held: number;
  /** Requests waiting for room. */
  readonly waiting: number;
}

interface Pool {
  readonly shortage: RoomShortage;
  /** A share's key among the shares; none for the process's own pools. */
  readonly key?: string;
  readonly limit: number;
  held: number;
  /** Uploads that count in this pool (for the shares, which exist only while someone uses them). */
  users: number;
}

interface Request {
  readonly kind: 'claim' | 'arrive' | 'store';
  readonly adds: readonly (readonly [Pool, number])[];
  /** Pools whose bytes of this upload are given back once the request is granted. */
  readonly leaves: readonly Pool[];
  readonly resolve: () => void;
  readonly reject: (error: NoRoomError) => void;
}

interface Holder {
  readonly pools: readonly Pool[];
  readonly amounts: Map<Pool, number>;
  /** What its claims came to: the most its body may still bring, less what has arrived. */
  claimed: number;
  pending: Request | undefined;
  /** The first pool a waiting request did not fit, when it was last looked at. */
  blockedBy: Pool | undefined;
  released: boolean;
}

export function createUploadRoom(limits: UploadRoomLimits, onChange?: (held: number) => void): UploadRoom {
  const total: Pool = { shortage: 'server', limit: limits.totalBytes, held: 0, users: 0 };
  const arriving: Pool = { shortage: 'server', limit: limits.arrivingBytes, held: 0, users: 0 };
  const shares = new Map<string, Pool>();
  /** Uploads admitted whose bodies have not yet arrived whole. */
  const arrivers = new Set<Holder>();
  const waiting: { readonly holder: Holder; readonly request: Request }[] = [];

  const shareOf = (shortage: 'credential' | 'institution', id: string): Pool => {
    const key = `${shortage}\u0000${id}`;
    let pool = shares.get(key);
    if (pool === undefined) {
      const limit = shortage === 'credential' ? limits.perCredentialBytes : limits.perInstitutionBytes;
      pool = { shortage, key, limit, held: 0, users: 0 };
      shares.set(key, pool);
    }
    return pool;
  };
  const own = (holder: Holder, pool: Pool) => holder.amounts.get(pool) ?? 0;
  // Whether, with `bytes` more for `asker`, every body arriving could still arrive in full: taken in
  // the order of what each still needs, each finds room in what is free and what those before it
  // gave back.
  const safeWith = (asker: Holder, bytes: number) => {
    let free = arriving.limit - arriving.held - bytes;
    const rest = [...arrivers]
      .map((holder) => {
        const held = own(holder, arriving) + (holder === asker ? bytes : 0);
        return { held, needs: Math.max(0, holder.claimed - held) };
      })
      .sort((a, b) => a.needs - b.needs);
    for (const { held, needs } of rest) {
      if (needs > free) return false;
      free += held;
    }
    return true;
  };
  const fits = (pool: Pool, holder: Holder, bytes: number) =>
    (pool.held + bytes <= pool.limit || pool.held === own(holder, pool)) &&
    (pool !== arriving || safeWith(holder, bytes));

  const grant = (holder: Holder, request: Request) => {
    for (const [pool, bytes] of request.adds) {
      pool.held += bytes;
      holder.amounts.set(pool, own(holder, pool) + bytes);
    }
    for (const pool of request.leaves) {
      pool.held -= own(holder, pool);
      holder.amounts.set(pool, 0);
    }
    if (request.kind === 'claim') {
      holder.claimed += request.adds[0]?.[1] ?? 0;
      arrivers.add(holder);
    }
    if (request.kind === 'store') arrivers.delete(holder);
    holder.pending = undefined;
    holder.blockedBy = undefined;
    request.resolve();
  };

  // Grants what fits, in order; a request that does not fit holds back the later ones in the pools it
  // lacks, and only there. A grant may give room back (a store leaves the arriving bodies' room), so
  // the waiting are looked at again until nothing more is granted.
  const settle = () => {
    for (let granted = true; granted;) {
      granted = false;
      const closed = new Set<Pool>();
      for (let i = 0; i < waiting.length;) {
        const { holder, request } = waiting[i] ?? {};
        if (holder === undefined || request === undefined) break;
        const short = request.adds
          .filter(([pool, bytes]) => closed.has(pool) || !fits(pool, holder, bytes))
          .map(([pool]) => pool);
        if (short.length === 0) {
          waiting.splice(i, 1);
          grant(holder, request);
          granted = true;
          continue;
        }
        holder.blockedBy = short[0];
        for (const pool of short) if (pool !== arriving) closed.add(pool);
        i += 1;
      }
    }
  };
  const changed = () => onChange?.(total.held);

  const ask = (
    holder: Holder,
    kind: Request['kind'],
    adds: Request['adds'],
    leaves: readonly Pool[],
  ): Promise<void> => {
    if (holder.released) return Promise.reject(new NoRoomError('server'));
    if (holder.pending !== undefined) throw new Error('an upload asks for room one request at a time');
    return new Promise<void>((resolve, reject) => {
      const request = { kind, adds, leaves, resolve, reject };
      holder.pending = request;
      waiting.push({ holder, request });
      settle();
      changed();
    });
  };
  const stopWaiting = (holder: Holder) => {
    const request = holder.pending;
    if (request === undefined) return;
    waiting.splice(
      waiting.findIndex((waiter) => waiter.holder === holder),
      1,
    );
    const shortage = (holder.blockedBy ?? total).shortage;
    holder.pending = undefined;
    holder.blockedBy = undefined;
    request.reject(new NoRoomError(shortage));
  };

  return {
    open(party) {
      const pools = [
        shareOf('credential', party.credential),
        ...(party.institution === undefined ? [] : [shareOf('institution', party.institution)]),
      ];
      for (const pool of pools) pool.users += 1;
      const holder: Holder = {
        pools,
        amounts: new Map(),
        claimed: 0,
        pending: undefined,
        blockedBy: undefined,
        released: false,
      };
      return {
        claim: (bytes) =>
          ask(
            holder,
            'claim',
            pools.map((pool) => [pool, bytes] as const),
            [],
          ),
        arrive: (bytes) =>
          ask(
            holder,
            'arrive',
            [
              [arriving, bytes],
              [total, bytes],
            ],
            [],
          ),
        store: (bytes) =>
          ask(holder, 'store', [[total, Math.max(0, bytes - own(holder, total))]], [...pools, arriving]),
        giveUp() {
          if (holder.pending === undefined) return;
          stopWaiting(holder);
          settle();
          changed();
        },
        release() {
          if (holder.released) return;
          holder.released = true;
          arrivers.delete(holder);
          stopWaiting(holder);
          for (const [pool, bytes] of holder.amounts) pool.held -= bytes;
          holder.amounts.clear();
          for (const pool of pools) {
            pool.users -= 1;
            if (pool.users === 0 && pool.key !== undefined) shares.delete(pool.key);
          }
          settle();
          changed();
        },
        get held() {
          return own(holder, total);
        },
      };
    },
    get held() {
      return total.held;
    },
    get waiting() {
      return waiting.length;
    },
  };
}
