// A budget of bytes held at once, given out in order: what bounds the forms the forward jobs hold
// (workers/forwarding/form-budget.ts) and the answers the API has yet to hand to the network
// (api/response-budget.ts). Whatever asks first goes first once its bytes fit; something larger than
// the whole budget goes alone, when nothing else holds any of it.

export interface ByteBudget {
  /** Takes `bytes` now if they fit (or nothing is held) and nobody waits, returning how to give them back. */
  tryTake(bytes: number): (() => void) | undefined;
  /** Takes `bytes` once they fit, after everything that asked earlier. */
  take(bytes: number): Promise<() => void>;
  /**
   * Takes `bytes` now, whether they fit or not: for bytes that exist already and must be counted
   * (an answer to a write that has committed). They hold the others back until they are given back.
   */
  takeAnyway(bytes: number): () => void;
  /** Bytes held now. */
  readonly held: number;
  /** Takers waiting for room. */
  readonly waiting: number;
}

export function createByteBudget(limitBytes: number): ByteBudget {
  let held = 0;
  const queue: { bytes: number; grant: (release: () => void) => void }[] = [];
  const fits = (bytes: number) => held === 0 || held + bytes <= limitBytes;
  const grant = (bytes: number): (() => void) => {
    held += bytes;
    let given = false;
    return () => {
      if (given) return;
      given = true;
      held -= bytes;
      // In order: the first in line goes as soon as it fits, and nobody overtakes it.
      for (let next = queue[0]; next !== undefined && fits(next.bytes); next = queue[0]) {
        queue.shift();
        next.grant(grant(next.bytes));
      }
    };
  };
  const tryTake = (bytes: number) => (queue.length === 0 && fits(bytes) ? grant(bytes) : undefined);
  return {
    tryTake,
    take(bytes) {
      const now = tryTake(bytes);
      if (now !== undefined) return Promise.resolve(now);
      return new Promise((resolve) => {
        queue.push({ bytes, grant: resolve });
      });
    },
    takeAnyway: grant,
    get held() {
      return held;
    },
    get waiting() {
      return queue.length;
    },
  };
}
