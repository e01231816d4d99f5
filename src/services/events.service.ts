// An institution's event feed: every event of the referrals it may see, in one total order, a page at
// a time after an opaque cursor (see db/events.repository.ts for why nothing is skipped under
// concurrent writes). A system that missed webhook deliveries, or never subscribed, reads exactly what
// it missed. With `wait`, an empty page is held open until an event arrives or the wait ends.
import type { Clock } from '../domain/clock.ts';
import { toEventView, type EventView } from '../domain/events.ts';
import { ForbiddenRoleError, ValidationError } from '../errors.ts';
import { auditEventOf } from '../domain/audit.ts';
import { FEED_START, type FeedPosition } from '../domain/events.ts';
import type { Stores } from '../db/stores.ts';
import type { Caller } from './caller.ts';

export interface FeedPage {
  readonly data: EventView[];
  readonly metadata: {
    /**
     * Pass as `after` to read on. When the page is empty, the last position the caller may see at or
     * before the cursor it sent: that cursor, when the feed handed it out.
     */
    readonly next: string;
    /** More events are ready now: read again without waiting. */
    readonly hasMore: boolean;
  };
}

export interface FeedRequest {
  readonly after?: string | undefined;
  readonly limit: number;
  /** Seconds to hold an empty page open for a new event; 0 answers at once. */
  readonly waitSeconds: number;
  /** Ends the wait early (the client went away). */
  readonly signal?: AbortSignal | undefined;
}

const POLL_MS = 250;

/** The opaque cursor of a feed position: base64url of `<xid>.<position>`. */
export function encodeCursor(at: FeedPosition): string {
  return Buffer.from(`${at.xid}.${at.position}`, 'utf8').toString('base64url');
}

/** The largest value of each part's column type: `xid8` (unsigned 64 bits) and `bigint`. */
const XID8_MAX = 2n ** 64n - 1n;
const BIGINT_MAX = 2n ** 63n - 1n;

/**
 * The position a cursor names, checked against what its columns hold: digits that fit `xid8` and
 * `bigint`. A forged cursor past them would reach the database's casts and fail there (22003).
 */
export function decodeCursor(cursor: string): FeedPosition {
  const text = /^[A-Za-z0-9_-]{1,64}$/.test(cursor) ? Buffer.from(cursor, 'base64url').toString('utf8') : '';
  const match = /^(\d{1,20})\.(\d{1,19})$/.exec(text);
  const xid = match?.[1];
  const position = match?.[2];
  if (
    xid === undefined ||
    position === undefined ||
    BigInt(xid) > XID8_MAX ||
    BigInt(position) > BIGINT_MAX
  ) {
    throw new ValidationError([
      { path: 'query.after', message: 'is not a cursor this feed handed out (metadata.next)' },
    ]);
  }
  return { xid: BigInt(xid).toString(), position: BigInt(position).toString() };
}

const sleep = (ms: number, signal: AbortSignal | undefined) =>
  new Promise<void>((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });

export function createEventFeed(deps: {
  readonly stores: Pick<Stores, 'events' | 'audit'>;
  readonly clock: Clock;
}) {
  return {
    async read(caller: Caller, request: FeedRequest): Promise<FeedPage> {
      if (caller.role === 'ops') throw new ForbiddenRoleError('An ops key may not read an event feed.');
      const from = request.after === undefined ? FEED_START : decodeCursor(request.after);
      const events = deps.stores.events;
      const deadline = Date.now() + request.waitSeconds * 1000;
      let page = await events.pageFor(caller.institution, from, request.limit + 1);
      while (page.length === 0 && Date.now() < deadline && request.signal?.aborted !== true) {
        await sleep(Math.min(POLL_MS, deadline - Date.now()), request.signal);
        page = await events.pageFor(caller.institution, from, request.limit + 1);
      }
      const shown = page.slice(0, request.limit);
      const last = shown.at(-1);
      const referralIds = [...new Set(shown.map((e) => e.referralId))];
      await deps.stores.audit.record(auditEventOf(caller, 'events.read', referralIds, deps.clock.now()));
      // An empty page hands back the last real position at or before the cursor sent: the cursor
      // itself when the feed handed it out, never one made up past the end, whose holder would
      // otherwise keep it and skip what is written after the real end.
      const next = last?.at ?? (await events.lastFor(caller.institution, from)) ?? FEED_START;
      return {
        data: shown.map((e) => toEventView(e, caller.institution)),
        metadata: { next: encodeCursor(next), hasMore: page.length > request.limit },
      };
    },
  };
}

export type EventFeed = ReturnType<typeof createEventFeed>;
