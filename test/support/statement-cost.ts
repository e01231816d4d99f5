// What the statements of some work cost the database, on either engine, counted in the pages
// (shared buffers) PostgreSQL touched rather than in time: a count does not move with a busy machine.
// The work runs once in a transaction that is rolled back, which tells each statement's text and
// values; each is then run again under EXPLAIN (ANALYZE, BUFFERS), in another transaction rolled
// back, on the same data. Both engines reach their database through node-postgres, so every statement
// is one call of a pg client's `query`, as statement-counter.ts counts them.
//
// refhub keeps its statements prepared (src/db/database.ts), and PostgreSQL plans a prepared statement
// for its values for five runs, then may keep one generic plan for any values. A statement that runs
// all day runs on either, so `plan` chooses which one is measured.
import { CompiledQuery, type Kysely, type Transaction } from 'kysely';
import pg from 'pg';
import type { Database } from '../../src/db/schema.ts';

type Query = (this: unknown, ...args: unknown[]) => unknown;

interface Sent {
  readonly text: string;
  readonly values: readonly unknown[];
}

interface PlanNode {
  readonly 'Node Type': string;
  readonly 'Index Name'?: string;
  readonly 'Relation Name'?: string;
  readonly 'Shared Hit Blocks'?: number;
  readonly 'Shared Read Blocks'?: number;
  readonly Plans?: readonly PlanNode[];
}

export interface StatementCost {
  /** Shared buffers hit or read, all statements together. */
  readonly buffers: number;
  /** Each statement's plan, one line of node names (with their index or table) per statement. */
  readonly plans: readonly string[];
}

class RolledBack extends Error {}

const nodes = (node: PlanNode): string[] => [
  `${node['Node Type']}${node['Index Name'] === undefined ? (node['Relation Name'] === undefined ? '' : ` on ${node['Relation Name']}`) : ` using ${node['Index Name']}`}`,
  ...(node.Plans ?? []).flatMap(nodes),
];

async function rolledBack(db: Kysely<Database>, work: (trx: Transaction<Database>) => Promise<void>) {
  await db
    .transaction()
    .execute(async (trx) => {
      await work(trx);
      throw new RolledBack();
    })
    .catch((error: unknown) => {
      if (!(error instanceof RolledBack)) throw error;
    });
}

let prepared = 0;

/** A value as SQL text, for the kinds of values refhub's statements take. */
function literal(value: unknown): string {
  if (value === null || value === undefined) return 'NULL';
  if (typeof value === 'number' || typeof value === 'bigint') return String(value);
  if (typeof value === 'boolean') return value ? 'TRUE' : 'FALSE';
  if (value instanceof Date) return `'${value.toISOString()}'`;
  if (typeof value === 'string') return `'${value.replaceAll("'", "''")}'`;
  throw new TypeError(`no literal for a parameter of type ${typeof value}`);
}

/** The pages the statements `work` sends make PostgreSQL touch, and their plans. Changes nothing. */
export async function costOf(
  db: Kysely<Database>,
  work: (trx: Transaction<Database>) => Promise<unknown>,
  plan: 'custom' | 'generic' = 'custom',
): Promise<StatementCost> {
  const sent: Sent[] = [];
  const client = pg.Client.prototype as unknown as { query: Query };
  const original = client.query;
  await rolledBack(db, async (trx) => {
    client.query = function (this: unknown, ...args: unknown[]) {
      const [first, second] = args;
      const text = typeof first === 'string' ? first : String((first as { text?: unknown }).text);
      const values = (typeof first === 'string' ? second : (first as { values?: unknown }).values) ?? [];
      sent.push({ text, values: values as unknown[] });
      return original.apply(this, args);
    };
    try {
      await work(trx);
    } finally {
      client.query = original;
    }
  });
  let buffers = 0;
  const plans: string[] = [];
  const explain = 'EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON)';
  await rolledBack(db, async (trx) => {
    const run = (text: string, values: readonly unknown[] = []) =>
      trx.executeQuery<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(CompiledQuery.raw(text, [...values]));
    if (plan === 'generic') await run('SET LOCAL plan_cache_mode = force_generic_plan');
    for (const [i, { text, values }] of sent.entries()) {
      let result;
      if (plan === 'custom') result = await run(`${explain} ${text}`, values);
      else {
        // A prepared statement outlives the transaction, so it is given back at once.
        const name = `statement_cost_${++prepared}_${i}`;
        await run(`PREPARE ${name} AS ${text}`);
        // EXECUTE is not planned when it is parsed, so it takes its values as literals.
        const literals = values.map(literal).join(', ');
        result = await run(`${explain} EXECUTE ${name}${values.length === 0 ? '' : `(${literals})`}`);
        await run(`DEALLOCATE ${name}`);
      }
      const top = result.rows[0]?.['QUERY PLAN'][0].Plan;
      if (top === undefined) throw new Error(`no plan for ${text}`);
      buffers += (top['Shared Hit Blocks'] ?? 0) + (top['Shared Read Blocks'] ?? 0);
      plans.push(nodes(top).join(' > '));
    }
  });
  return { buffers, plans };
}
