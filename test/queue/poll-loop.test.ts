// The relays' loop: at once again after a full batch, a pause after an empty or failed pass, and a
// stop that waits for the pass in progress.
import { describe, expect, it } from 'vitest';
import { createPeriodicLoop, createPollLoop, errorCode } from '../../src/queue/poll-loop.ts';

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('the poll loop', () => {
  it('runs again at once after a full batch, and pauses after an empty one', async () => {
    const at: number[] = [];
    // Three full batches, then empty ones.
    const loop = createPollLoop(
      () => {
        at.push(performance.now());
        return Promise.resolve(at.length <= 3);
      },
      300,
      () => undefined,
    );
    loop.start();
    await pause(150);
    await loop.stop();
    // The three full passes and the first empty one ran at once; the next waits for the pause.
    expect(at.length).toBe(4);
  });

  it('reports a failed pass, pauses, and goes on', async () => {
    const errors: unknown[] = [];
    let passes = 0;
    const loop = createPollLoop(
      () => {
        passes++;
        return passes === 1 ? Promise.reject(new Error('boom')) : Promise.resolve(false);
      },
      20,
      (error) => errors.push(error),
    );
    loop.start();
    loop.start();
    await pause(100);
    await loop.stop();
    expect(errors).toEqual([new Error('boom')]);
    expect(passes).toBeGreaterThan(1);
  });

  it('waits for the pass in progress when stopped, and wakes a pause at once', async () => {
    let finished = false;
    const loop = createPollLoop(
      async () => {
        await pause(50);
        finished = true;
        return false;
      },
      60_000,
      () => undefined,
    );
    loop.start();
    await pause(10);
    const started = performance.now();
    await loop.stop();
    expect(finished).toBe(true);
    // The pause of a minute after the pass did not hold the stop.
    expect(performance.now() - started).toBeLessThan(5_000);
  });

  it('ends a pause at once when woken, and follows a pass that was woken without a pause', async () => {
    // An hour's pause: only a wake can start the passes this test waits for.
    let passes = 0;
    let release: (() => void) | undefined;
    const loop = createPollLoop(
      async () => {
        passes++;
        if (passes === 2) await new Promise<void>((resolve) => (release = resolve));
        return false;
      },
      3_600_000,
      () => undefined,
    );
    loop.start();
    await expect.poll(() => passes).toBe(1);
    loop.wake();
    // The second pass runs and holds; a wake while it runs means another pass follows it at once.
    await expect.poll(() => release).toBeDefined();
    loop.wake();
    release!();
    await expect.poll(() => passes, { timeout: 10_000 }).toBe(3);
    // The third was not woken during its run: the loop pauses again.
    await loop.stop();
    expect(passes).toBe(3);
  });

  it('gives a code, never a message', () => {
    expect(errorCode(Object.assign(new Error('patient Jane'), { code: 'ECONNREFUSED' }))).toBe(
      'ECONNREFUSED',
    );
    expect(errorCode(Object.assign(new Error('x'), { code: 'has space' }))).toBe('Error');
    expect(errorCode(new TypeError('patient Jane'))).toBe('TypeError');
    expect(errorCode('patient Jane')).toBe('Error');
  });
});

describe('the periodic loop (the reconciler, housekeeping, the audit sealer)', () => {
  it('first runs after one interval, then once per interval, never two runs at once', async () => {
    let runs = 0;
    let running = 0;
    let overlapped = false;
    const loop = createPeriodicLoop(
      async () => {
        runs++;
        running++;
        if (running > 1) overlapped = true;
        await pause(30);
        running--;
      },
      100,
      () => undefined,
    );
    loop.start();
    await pause(50);
    // Nothing yet: a job on a timer begins with its interval.
    expect(runs).toBe(0);
    await expect.poll(() => runs, { timeout: 2_000 }).toBeGreaterThanOrEqual(2);
    await loop.stop();
    expect(overlapped).toBe(false);
  });

  it('reports a failed run and runs again at the next interval', async () => {
    const errors: unknown[] = [];
    let runs = 0;
    const loop = createPeriodicLoop(
      () => {
        runs++;
        return Promise.reject(new Error('down'));
      },
      50,
      (error) => errors.push(error),
    );
    loop.start();
    await expect.poll(() => runs, { timeout: 2_000 }).toBeGreaterThanOrEqual(2);
    await loop.stop();
    expect(errors.length).toBe(runs);
  });

  it('stops at once when it waits, and waits for the run in progress', async () => {
    let finished = false;
    let started = false;
    const loop = createPeriodicLoop(
      async () => {
        started = true;
        await pause(100);
        finished = true;
      },
      20,
      () => undefined,
    );
    loop.start();
    await expect.poll(() => started).toBe(true);
    await loop.stop();
    expect(finished).toBe(true);

    const idle = createPeriodicLoop(
      () => Promise.resolve(),
      3_600_000,
      () => undefined,
    );
    idle.start();
    const before = performance.now();
    await idle.stop();
    expect(performance.now() - before).toBeLessThan(1_000);
  });
});
