// Counts the statements refhub sends to its database while some work runs, on either engine: both
// reach their database through node-postgres (PGlite through its wire protocol), so every statement,
// BEGIN and COMMIT included, is one call of a pg client's `query`.
import pg from 'pg';

type Query = (this: unknown, ...args: unknown[]) => unknown;

/** The text of each statement `work` sent, in order. */
export async function statementsOf(work: () => Promise<unknown>): Promise<string[]> {
  const texts: string[] = [];
  const client = pg.Client.prototype as unknown as { query: Query };
  const original = client.query;
  client.query = function (this: unknown, ...args: unknown[]) {
    const [first] = args;
    texts.push(typeof first === 'string' ? first : String((first as { text?: unknown }).text));
    return original.apply(this, args);
  };
  try {
    await work();
  } finally {
    client.query = original;
  }
  return texts;
}
