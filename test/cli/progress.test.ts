// The progress line of long commands: on a terminal, one line redrawn in place and cleared at the
// end; anywhere else, nothing at all, so what a script reads is the result alone.
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { startProgress, withProgress } from '../../src/cli/progress.ts';

/** A stream that keeps what is written to it, a terminal when `isTTY` is set as on process.stderr. */
function stream(isTTY: boolean) {
  const written: string[] = [];
  const out = Object.assign(
    new Writable({
      write(chunk: Buffer, _encoding, done) {
        written.push(chunk.toString());
        done();
      },
    }),
    { isTTY },
  );
  return { out, written: () => written.join('') };
}

const REDRAW = '\r\x1b[2K';

describe('progress', () => {
  it('redraws one line on a terminal, only when it changes, and clears it at the end', async () => {
    const terminal = stream(true);
    const result = await withProgress(
      'Queueing failed forwards again',
      (report) => {
        report(500, 1200);
        report(500, 1200);
        report(1000, 1200);
        report(1200, 1200);
        return Promise.resolve('done');
      },
      terminal.out,
    );
    expect(result).toBe('done');
    expect(terminal.written()).toBe(
      `${REDRAW}Queueing failed forwards again: 500/1200` +
        `${REDRAW}Queueing failed forwards again: 1000/1200` +
        `${REDRAW}Queueing failed forwards again: 1200/1200` +
        REDRAW,
    );
  });

  it('never shows more done than in all: a total that grows is raised to what is done', () => {
    const terminal = stream(true);
    const progress = startProgress('Delivering events again', terminal.out);
    progress.report(3, 2);
    progress.end();
    expect(terminal.written()).toBe(`${REDRAW}Delivering events again: 3/3${REDRAW}`);
  });

  it('clears the line when the work fails, and passes the failure on', async () => {
    const terminal = stream(true);
    const failing = withProgress(
      'Applying migrations',
      (report) => {
        report(1, 4);
        return Promise.reject(new Error('migration 0002 failed'));
      },
      terminal.out,
    );
    await expect(failing).rejects.toThrow('migration 0002 failed');
    expect(terminal.written()).toBe(`${REDRAW}Applying migrations: 1/4${REDRAW}`);
  });

  it('writes nothing when the stream is not a terminal, and clears nothing it never drew', async () => {
    const pipe = stream(false);
    await withProgress(
      'Queueing failed forwards again',
      (report) => {
        report(1, 2);
        report(2, 2);
        return Promise.resolve();
      },
      pipe.out,
    );
    expect(pipe.written()).toBe('');
    const idle = stream(true);
    startProgress('Nothing to do', idle.out).end();
    expect(idle.written()).toBe('');
  });
});
