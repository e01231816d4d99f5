// Wake-ups from PostgreSQL when work commits. Triggers (migration 0009) send a notification in the
// statement that writes an outbox row or a feed event, and PostgreSQL delivers it when, and only if,
// the transaction commits. One dedicated connection listens and calls the relay that has new work, so
// a submit reaches the queue at once instead of at the next poll.
//
// A wake-up is only a hint: the relays still poll, which is what finds work whose notification was
// lost (the listening connection was down, or the process started after the commit), rows waiting out
// a retry delay, and every change on PGlite, which has no second connection to listen on. After the
// connection is (re)made, every handler is called once, for whatever committed while nobody listened.
import pg from 'pg';

/** What the listener says: that it lost its connection (a code, never a message) and got it back. */
export interface ChangeListenerLog {
  warn(details: { readonly err: { readonly code: string } }, message: string): void;
  info(message: string): void;
}

/** The channels the triggers notify, by what they carry news of. */
export const CHANGE_CHANNELS = {
  /** Outbox rows: forwards, reminders and withdrawals to hand to the queues. */
  outbox: 'refhub_outbox',
  /** Events of the feed, for the webhook relay. */
  events: 'refhub_events',
} as const;

export type ChangeChannel = keyof typeof CHANGE_CHANNELS;

export interface ChangeListener {
  /** Stops listening and closes the connection; no handler is called after it resolves. */
  close(): Promise<void>;
}

export interface ChangeListenerOptions {
  readonly logger: ChangeListenerLog;
  /** The first wait before connecting again after a failure; it doubles up to `maxRetryMs`. */
  readonly retryMs?: number;
  readonly maxRetryMs?: number;
  /** How the connection shows in pg_stat_activity. */
  readonly applicationName?: string;
}

/** Listens on PostgreSQL at `url` and calls each channel's handler when a change on it commits. */
export function listenForChanges(
  url: string,
  handlers: Readonly<Partial<Record<ChangeChannel, () => void>>>,
  options: ChangeListenerOptions,
): ChangeListener {
  const { logger } = options;
  const firstRetryMs = options.retryMs ?? 1_000;
  const maxRetryMs = options.maxRetryMs ?? 30_000;
  const byChannel = new Map<string, () => void>(
    Object.entries(handlers).map(([name, handler]) => [CHANGE_CHANNELS[name as ChangeChannel], handler]),
  );
  let closed = false;
  /** Read after an await: `close()` may have been called meanwhile. */
  const isClosed = () => closed;
  let client: pg.Client | undefined;
  let retry: NodeJS.Timeout | undefined;
  let retryMs = firstRetryMs;
  let lost = false;

  const wakeAll = () => {
    for (const handler of byChannel.values()) handler();
  };

  function scheduleRetry() {
    if (closed || retry !== undefined) return;
    retry = setTimeout(() => {
      retry = undefined;
      void connect();
    }, retryMs);
    retryMs = Math.min(retryMs * 2, maxRetryMs);
  }

  function dropped(error: unknown) {
    if (!lost) {
      lost = true;
      const code = (error as { code?: unknown } | undefined)?.code;
      logger.warn(
        { err: { code: typeof code === 'string' ? code : 'connection-ended' } },
        'change notifications stopped; the relays poll until they are back',
      );
    }
    scheduleRetry();
  }

  async function connect() {
    if (closed) return;
    const connection = new pg.Client({
      connectionString: url,
      connectionTimeoutMillis: 5_000,
      application_name: options.applicationName ?? 'refhub change listener',
    });
    client = connection;
    connection.on('notification', (message) => {
      byChannel.get(message.channel)?.();
    });
    connection.on('error', (error) => {
      if (client === connection) client = undefined;
      void connection.end().catch(() => undefined);
      if (!closed) dropped(error);
    });
    connection.on('end', () => {
      if (client !== connection) return;
      client = undefined;
      if (!closed) dropped(undefined);
    });
    try {
      await connection.connect();
      for (const channel of byChannel.keys()) await connection.query(`LISTEN ${channel}`);
    } catch (error) {
      if (client === connection) client = undefined;
      await connection.end().catch(() => undefined);
      if (!isClosed()) dropped(error);
      return;
    }
    if (isClosed()) {
      await connection.end().catch(() => undefined);
      return;
    }
    retryMs = firstRetryMs;
    if (lost) {
      lost = false;
      logger.info('change notifications are back');
    }
    wakeAll();
  }

  void connect();

  return {
    async close() {
      closed = true;
      clearTimeout(retry);
      retry = undefined;
      const connection = client;
      client = undefined;
      await connection?.end().catch(() => undefined);
    },
  };
}
