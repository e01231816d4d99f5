// An institution's event feed: every event of the referrals it may see, in one total order, a page at
// a time after an opaque cursor (see db/events.repository.ts for why nothing is skipped under
// concurrent writes). A system that missed webhook deliveries, or never subscribed, reads exactly what
// it missed. With `wait`, an empty page is held open until an event arrives or the wait ends.
import type { Kysely } from 'kysely';
import type { Clock } from '../domain/clock.ts';
import { toEventView, type EventView } from '../domain/events.ts';
import { ForbiddenRoleError, ValidationError } from '../errors.ts';
import { auditEventOf, auditRepository } from '../db/audit.repository.ts';
import { FEED_START, referralEventRepository, type FeedPosition } from '../db/events.repository.ts';
import type { Database } from '../db/schema.ts';
import type { Caller } from './caller.ts';

export interface FeedPage {
  readonly data: EventView[];
  readonly metadata: {
    /** Pass as `after` to read on; the same cursor again when the page is empty. */
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

export function decodeCursor(cursor: string): FeedPosition {
  const text = /^[A-Za-z0-9_-]{1,64}$/.test(cursor) ? Buffer.from(cursor, 'base64url').toString('utf8') : '';
  const match = /^(\d{1,20})\.(\d{1,19})$/.exec(text);
  if (match?.[1] === undefined || match[2] === undefined) {
    throw new ValidationError([
      { path: 'query.after', message: 'is not a cursor this feed handed out (metadata.next)' },
    ]);
  }
  return { xid: match[1], position: match[2] };
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

export function createEventFeed(deps: { readonly db: Kysely<Database>; readonly clock: Clock }) {
  return {
    async read(caller: Caller, request: FeedRequest): Promise<FeedPage> {
      if (caller.role === 'ops') throw new ForbiddenRoleError('An ops key may not read an event feed.');
      const from = request.after === undefined ? FEED_START : decodeCursor(request.after);
      const events = referralEventRepository(deps.db);
      const deadline = Date.now() + request.waitSeconds * 1000;
      let page = await events.pageFor(caller.institution, from, request.limit + 1);
      while (page.length === 0 && Date.now() < deadline && request.signal?.aborted !== true) {
        await sleep(Math.min(POLL_MS, deadline - Date.now()), request.signal);
        page = await events.pageFor(caller.institution, from, request.limit + 1);
      }
      const shown = page.slice(0, request.limit);
      const last = shown.at(-1);
      const referralIds = [...new Set(shown.map((e) => e.referralId))];
      await auditRepository(deps.db).record(
        auditEventOf(caller, 'events.read', referralIds, deps.clock.now()),
      );
      return {
        data: shown.map((e) => toEventView(e, caller.institution)),
        metadata: {
          next: encodeCursor(last?.at ?? from),
          hasMore: page.length > request.limit,
        },
      };
    },
  };
}

export type EventFeed = ReturnType<typeof createEventFeed>;
