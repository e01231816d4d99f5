// Statements of a fixed shape, compiled once. Building and compiling a Kysely query is plain CPU in
// the process, every time: for a full referral read (about fifty columns, three joins, three
// subqueries) it took a fifth of the API process's busy time, more than PostgreSQL spent running the
// read. A statement used on every request is therefore compiled the first time with a placeholder for
// each argument; later runs reuse its SQL text and put their values where the placeholders were.
//
// Only for statements whose text does not depend on the values: comparisons with `=`, not `in` with a
// list whose length varies. `compiledOnce` checks what it can (each placeholder must become a
// parameter, never part of the text) and refuses a statement that breaks the rule. Every run shares
// the compiled query's ID, which is harmless because refhub's Kysely has no plugins (they keep state
// by query ID).
import { randomBytes } from 'node:crypto';
import type { Compilable, CompiledQuery } from 'kysely';
import type { Executor } from './executor.ts';

/** A statement compiled once; run it with an executor (the store, or a transaction) and its values. */
export type CompiledOnce<Args extends readonly string[], Row> = (
  db: Executor,
  ...args: Args
) => Promise<Row[]>;

/**
 * `build` receives one placeholder per argument and returns the statement built from them, on the
 * executor it is given (any of refhub's executors: they all compile PostgreSQL's SQL).
 */
export function compiledOnce<Args extends readonly string[], Row>(
  arity: Args['length'],
  build: (db: Executor, ...placeholders: Args) => Compilable<Row>,
): CompiledOnce<Args, Row> {
  let template: { readonly compiled: CompiledQuery<Row>; readonly slots: readonly Slot[] } | undefined;

  return async (db, ...args) => {
    template ??= compile(db, arity, (executor, placeholders) =>
      build(executor, ...(placeholders as unknown as Args)),
    );
    const parameters = template.slots.map((slot) => (slot.arg === undefined ? slot.value : args[slot.arg]));
    const result = await db.executeQuery<Row>({ ...template.compiled, parameters });
    return result.rows;
  };
}

/** A parameter of the compiled statement: an argument's value, or a constant of the statement itself. */
interface Slot {
  readonly arg?: number;
  readonly value?: unknown;
}

function compile<Row>(
  db: Executor,
  arity: number,
  build: (db: Executor, placeholders: readonly string[]) => Compilable<Row>,
) {
  const nonce = randomBytes(8).toString('hex');
  const placeholders = Array.from({ length: arity }, (_, i) => `\u0000placeholder-${nonce}-${i}`);
  const compiled = build(db, placeholders).compile();
  if (compiled.sql.includes(nonce)) {
    throw new Error('compiledOnce: a placeholder became part of the SQL text instead of a parameter');
  }
  const slots: Slot[] = compiled.parameters.map((value) => {
    const arg = typeof value === 'string' ? placeholders.indexOf(value) : -1;
    return arg === -1 ? { value } : { arg };
  });
  for (let i = 0; i < arity; i++) {
    if (!slots.some((slot) => slot.arg === i)) {
      throw new Error(`compiledOnce: placeholder ${i} is not a parameter of the statement`);
    }
  }
  return { compiled, slots };
}
