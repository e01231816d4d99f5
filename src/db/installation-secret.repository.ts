// Secrets an installation generated for itself (migration 0003), and its ID. Several processes may
// start at once on one database: the first insert wins, and every process reads back the winner.
import { randomUUID } from 'node:crypto';
import type { Executor } from './executor.ts';

/**
 * The installation's ID: a UUID made the first time anything asks, kept in its database, so every
 * process on one database shares it and no two databases do. It names the installation where two
 * could meet: its claim on a queue prefix in Redis (queue/prefix-claim.ts), its demo key file.
 */
const INSTALLATION_ID = 'installation-id';

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

    /** This installation's ID, made on first use. */
    installationId(): Promise<string> {
      return this.getOrCreate(INSTALLATION_ID, randomUUID());
    },
  };
}
