// Each queue's name is spelled once: in its definition, and at most in one index. The forward,
// reminder and scan queues take their names from the outbox topics (domain/lifecycle.ts), which are
// stored in outbox rows; the others' are their own (queue/webhooks.queue.ts, queue/wait-times.queue.ts,
// and so on). Every other file reaches a queue by its constant, so a queue cannot be renamed in one
// place and missed in another.
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  ATTACHMENT_SCAN_QUEUE,
  FORWARD_QUEUE,
  INCIDENTS_QUEUE,
  QUEUE_NAMES,
  REMINDERS_QUEUE,
  RETENTION_QUEUE,
  TRIAGE_OVERDUE_QUEUE,
  WAIT_TIMES_QUEUE,
  WEBHOOKS_QUEUE,
} from '../../src/queue/registry.ts';

const ROOT = join(import.meta.dirname, '..', '..');
const SRC = join(ROOT, 'src');

/** Where each queue's name is spelled: its definition. */
const DEFINED_IN: Readonly<Record<string, string>> = {
  [FORWARD_QUEUE]: 'src/domain/lifecycle.ts',
  [REMINDERS_QUEUE]: 'src/domain/lifecycle.ts',
  [ATTACHMENT_SCAN_QUEUE]: 'src/domain/lifecycle.ts',
  [WEBHOOKS_QUEUE]: 'src/queue/webhooks.queue.ts',
  [TRIAGE_OVERDUE_QUEUE]: 'src/queue/triage-overdue.queue.ts',
  [WAIT_TIMES_QUEUE]: 'src/queue/wait-times.queue.ts',
  [INCIDENTS_QUEUE]: 'src/queue/incidents.queue.ts',
  [RETENTION_QUEUE]: 'src/queue/retention.queue.ts',
};

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * The text with the uses of the same words that name something else left out: a store of the same
 * name (`Pick<Stores, 'webhooks'>`, `Stores['reminders']`), a table of the same name
 * (`.selectFrom('incidents')`), the `webhooks` command of the CLI, and the ledgers an operator searches,
 * `forwards` and `webhooks`, named together.
 */
function withoutOtherUses(text: string): string {
  return text
    .replace(/Pick<(?:Capability)?Stores,[^>]*>/g, '')
    .replace(/\bStores\[[^\]]*\]/g, '')
    .replace(/\.(?:selectFrom|updateTable|insertInto|deleteFrom)\('[a-z_]+'\)/g, '')
    .replace(/\.command\('[a-z-]+'\)/g, '')
    .replace(/(['"`])forwards\1(,| \|| or) (['"`])webhooks\3/g, '');
}

/** The files of src that spell `name` as a string (in quotes or backticks), test-relative. */
function spelledIn(name: string): string[] {
  const spelled = new RegExp(`['"\`]${escape(name)}['"\`]`);
  return sourceFiles(SRC)
    .filter((file) => spelled.test(withoutOtherUses(readFileSync(file, 'utf8'))))
    .map((file) => relative(ROOT, file).split('\\').join('/'))
    .sort();
}

describe("a queue's name", () => {
  it.each(QUEUE_NAMES.map((name) => [name]))('%s is spelled only in its definition', (name) => {
    expect(spelledIn(name)).toEqual([DEFINED_IN[name]]);
  });

  it('is found where it is spelled: a name spelled in a file of src is seen', () => {
    // The search itself: the definitions do spell the names, so an empty result above is not a
    // search that finds nothing.
    for (const name of QUEUE_NAMES) expect(spelledIn(name)).toContain(DEFINED_IN[name]);
  });
});
