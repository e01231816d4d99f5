// Secrets an installation generated for itself (migration 0003). Several processes may start at
// once on one database: the first insert wins, and every process reads back the winner.
import type { Executor } from './executor.ts';

export function installationSecretRepository(db: Executor) {
  return {
    /** The stored secret `name`, storing `candidate` first when there is none. */
    async getOrCreate(name: string, candidate: string): Promise<string> {
      await db
        .insertInto('installation_secrets')
        .values({ name, value: candidate })
        .onConflict((oc) => oc.column('name').doNothing())
        .execute();
      const row = await db
        .selectFrom('installation_secrets')
        .select('value')
        .where('name', '=', name)
        .executeTakeFirstOrThrow();
      return row.value;
    },
  };
}
