// The README's walk-through, run as a reader runs it: its commands (with the web form's and the queue
// pages' that follow it, up to stopping refhub), in order, in a terminal, in a copy of the project with
// its own data directory, with the machine's own `node` first on PATH as in a reader's shell. What the
// terminal shows must be exactly the answers the README promises, one after the other, and the run
// must leave no file that git would list. Only the port differs, so that it cannot collide with
// anything else.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { childEnv, SYSTEM_PATH } from '../../support/child-env.ts';
import { freePort } from '../../support/free-port.ts';
import {
  loopbackOnlyAllowed,
  renderTerminal,
  runInTerminal,
  type TerminalRun,
} from '../../support/terminal.ts';

const ROOT = path.resolve(import.meta.dirname, '../../..');
const COPIED = ['package.json', '.npmrc', '.gitignore', 'bin', 'src', 'catalog'];
/** The sections a reader follows from the start of the walk-through to stopping refhub. */
const SECTIONS = ['## Walk-through', '## The web form', '## Watching the queues'];
const README_PORT = '127.0.0.1:3000';

const README = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8');

function section(heading: string): string {
  const start = README.indexOf(`\n${heading}\n`);
  expect(start, heading).toBeGreaterThan(0);
  const end = README.indexOf('\n## ', start + 1);
  return README.slice(start, end);
}

/** The commands a reader copies: every bash or sh block of the sections, in order. */
function commands(): string {
  const blocks = SECTIONS.flatMap((heading) =>
    [...section(heading).matchAll(/```(?:bash|sh)\n([\s\S]*?)```/g)].map((m) => m[1] ?? ''),
  );
  expect(blocks.length).toBeGreaterThan(10);
  return blocks.join('\n');
}

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/**
 * A whole answer as the README writes it, as a pattern for the line a reader sees: `…` and `<…>`
 * stand for any value, everything else is literal.
 */
function promisedLine(text: string, port: number): RegExp {
  const literal = text.replaceAll(README_PORT, `127.0.0.1:${port}`);
  return new RegExp(
    `^${literal
      .split(/…|<[^>]+>/)
      .map(escape)
      .join('.+?')}$`,
  );
}

/** The inline code span of the walk-through that starts with `prefix`: an answer the text promises. */
function promised(prefix: string): string {
  const span = [...section('## Walk-through').matchAll(/`([^`\n]+)`/g)]
    .map((m) => m[1] ?? '')
    .find((code) => code.startsWith(prefix));
  expect(span, prefix).toBeDefined();
  return span!;
}

/** The timeline the walk-through promises, line by line. */
function promisedTimeline(): string[] {
  const block = /The timeline reads[^\n]*\n\n```text\n([\s\S]*?)```/.exec(section('## Walk-through'))?.[1];
  expect(block).toBeDefined();
  return block!.trimEnd().split('\n');
}

function untracked(dir: string): string[] {
  return execFileSync('git', ['status', '--porcelain', '--untracked-files=all'], {
    cwd: dir,
    encoding: 'utf8',
  })
    .split('\n')
    .filter((line) => line !== '');
}

describe('the README walk-through', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'refhub-readme-'));
  const scriptDir = fs.mkdtempSync(path.join(os.tmpdir(), 'refhub-readme-script-'));
  let run: TerminalRun | undefined;
  let finished = false;
  afterAll(async () => {
    // A run cut short: its shell's exit trap stops the refhub it started in the background. What the
    // reader would have seen, and refhub's last lines, say where it stopped.
    run?.stop();
    const cut = await run?.done;
    if (cut !== undefined && !finished) {
      const log = path.join(dir, 'refhub.log');
      const tail = fs.existsSync(log) ? fs.readFileSync(log, 'utf8').split('\n').slice(-30) : [];
      console.error(
        [
          'The walk-through was cut short. The terminal:',
          ...renderTerminal(cut.output),
          'refhub.log:',
          ...tail,
        ].join('\n'),
      );
    }
    fs.rmSync(dir, { recursive: true, force: true });
    fs.rmSync(scriptDir, { recursive: true, force: true });
  });

  it('shows a reader in a terminal exactly the answers it promises, and leaves no file behind', async () => {
    for (const entry of COPIED) fs.cpSync(path.join(ROOT, entry), path.join(dir, entry), { recursive: true });
    fs.symlinkSync(path.join(ROOT, 'node_modules'), path.join(dir, 'node_modules'));
    execFileSync('git', ['init', '--quiet'], { cwd: dir });
    const before = untracked(dir);

    const port = await freePort();
    const script = path.join(scriptDir, 'walk-through.sh');
    fs.writeFileSync(
      script,
      [
        // Job control, so that `kill %1` and `wait %1` mean what they do in a terminal; and if the
        // test ends the run early, no refhub is left running.
        'set -m',
        "trap 'kill $(jobs -p) 2>/dev/null' EXIT",
        commands().replaceAll(README_PORT, `127.0.0.1:${port}`),
      ].join('\n'),
    );
    // A new user's machine: nothing but Node. Where the machine allows it, nothing but loopback
    // answers; either way no REDIS_URL is set, so the queues are in the embedded database.
    run = runInTerminal(script, {
      cwd: dir,
      loopbackOnly: loopbackOnlyAllowed(),
      env: {
        ...childEnv({
          PATH: SYSTEM_PATH,
          PORT: String(port),
          TERM: 'xterm-256color',
        }),
        REDIS_URL: undefined,
        // A reader's terminal, not CI's: npm draws its progress there.
        CI: undefined,
      },
    });
    const { code, output } = await run.done;
    finished = true;
    const screen = renderTerminal(output);
    const shown = screen.join('\n');
    expect(code, shown).toBe(0);

    // The answers whose values the run chose, read back from the screen.
    const upsert = promisedLine(promised('{"referralId"'), port);
    const referralId = /^\{"referralId":"([^"]+)"/.exec(screen[0] ?? '')?.[1];
    expect(referralId, shown).toBeDefined();
    const ledger = screen.find((line) => line.startsWith('{"data":'));
    const sha256 = /"sha256":"([0-9a-f]{64})"/.exec(ledger ?? '')?.[1];
    expect(sha256, shown).toBeDefined();
    const opsKey = /^demo-ops\s+(\S+)/m.exec(
      fs.readFileSync(path.join(dir, 'data/demo-keys.txt'), 'utf8'),
    )?.[1];
    expect(opsKey).toBeDefined();

    // `curl -i`: the status line, the headers, a blank line and the body. Which headers there are is not
    // promised; that they are headers, and that the ETag is W/"2", is.
    const status = screen.indexOf('HTTP/1.1 200 OK');
    const blank = screen.indexOf('', status);
    expect(status, shown).toBeGreaterThan(0);
    const headers = screen.slice(status + 1, blank);
    for (const header of headers) expect(header).toMatch(/^[A-Za-z-]+: \S/);
    expect(headers).toContain('etag: W/"2"');

    const matching = (pattern: RegExp): unknown => expect.stringMatching(pattern);
    const referral = (version: number, fragments: string[]) =>
      matching(
        new RegExp(
          `^\\{"id":"${referralId}","version":${version},.*${fragments.map(escape).join('.*')}.*\\}$`,
        ),
      );
    const expected: unknown[] = [
      matching(upsert),
      referral(2, ['"status":"pending-acceptance"', '"coreStatus":"pending"']),
      'HTTP/1.1 200 OK',
      ...headers,
      '',
      referral(2, ['"status":"pending-acceptance"', '"ehrForm":"<!doctype html>', '"ehrFormType":"']),
      matching(promisedLine(promised('{"data":[').replace('<referral ID>', referralId!), port)),
      sha256,
      sha256,
      promised('ServiceRequest '),
      matching(
        new RegExp(
          `^\\{"id":"[^"]+","content":"We will call the patient this week\\.",.*${escape(promised('"authorInstitution"'))}.*\\}$`,
        ),
      ),
      referral(4, ['"status":"cancelled"']),
      ...promisedTimeline().map((line) => matching(promisedLine(line, port))),
      // The web form: a new draft's link, then a fresh link to it, answered as the walk-through's upsert.
      matching(new RegExp(`^http://127\\.0\\.0\\.1:${port}/l/[A-Za-z0-9_-]{43}$`)),
      matching(upsert),
      // The queue pages: the demo ops key.
      opsKey,
    ];
    expect(screen).toEqual(expected);
    // The fresh link is for the web form's draft, not for the walk-through's cancelled referral.
    expect(screen.at(-2)).not.toContain(referralId);

    // refhub's log went to its file, with no line for the readiness polls at the default level.
    const log = fs.readFileSync(path.join(dir, 'refhub.log'), 'utf8');
    expect(log).toContain('"route":"/api/v1/links/upsert"');
    expect(log).not.toContain('/readyz"');
    // Stopped, and nothing left that git would list.
    expect(fs.existsSync(path.join(dir, 'data', 'refhub.lock'))).toBe(false);
    expect(untracked(dir)).toEqual(before);
  }, 600_000);
});
