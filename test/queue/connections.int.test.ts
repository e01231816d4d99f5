// Waiting for a Redis connection: every dispatch of the outbox relay may wait at once while Redis is
// down, and they must share one listener on the connection, each failing on its own timeout with the
// code the outbox records, and all going on once Redis answers.
import net from 'node:net';
import { Writable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/logger.ts';
import { connectRedis, connected, QUEUE_UNAVAILABLE, whenReady } from '../../src/queue/connections.ts';
import { testRedisUrl } from '../support/bridge.ts';

const WAITERS = 40;
const logger = createLogger(
  { logLevel: 'warn', env: 'test' },
  new Writable({
    write(_chunk, _encoding, done) {
      done();
    },
  }),
);

/** A loopback port with nothing listening on it. */
async function closedPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe('waiting for a Redis connection', () => {
  const warnings: string[] = [];
  const onWarning = (warning: Error) => warnings.push(warning.name);
  process.on('warning', onWarning);
  const opened: { disconnect(): void }[] = [];
  afterEach(() => {
    for (const redis of opened.splice(0)) redis.disconnect();
  });

  it('shares one listener while Redis is down, and fails each waiter on its own timeout', async () => {
    const redis = connectRedis(`redis://127.0.0.1:${await closedPort()}`, 'producer', logger);
    opened.push(redis);
    const own = redis.listenerCount('ready');
    const waits = Array.from({ length: WAITERS }, () =>
      connected(redis, 300).then(
        () => 'ready',
        (error: unknown) => (error as { code?: string }).code,
      ),
    );
    expect(redis.listenerCount('ready')).toBe(own + 1);
    const outcomes = await Promise.all(waits);
    expect(outcomes).toEqual(Array.from({ length: WAITERS }, () => QUEUE_UNAVAILABLE));
    // A later wait joins the same listener rather than adding one.
    await expect(connected(redis, 50)).rejects.toMatchObject({ code: QUEUE_UNAVAILABLE });
    expect(redis.listenerCount('ready')).toBe(own + 1);
    expect(warnings).not.toContain('MaxListenersExceededWarning');
  });

  it('lets every waiter go on once the connection is ready, and leaves no listener behind', async () => {
    const redis = connectRedis(testRedisUrl(), 'producer', logger);
    opened.push(redis);
    const own = redis.listenerCount('ready');
    expect(redis.status).toBe('wait');
    await Promise.all(Array.from({ length: WAITERS }, () => whenReady(redis, 5_000)));
    expect(redis.status).toBe('ready');
    expect(redis.listenerCount('ready')).toBe(own);
    expect(await redis.ping()).toBe('PONG');
    await whenReady(redis, 10);
  });
});
