// Repositories take an Executor, so the same query runs on its own or inside a service's transaction.
import type { Kysely, Transaction } from 'kysely';
import type { Database } from './schema.ts';

export type Executor = Kysely<Database> | Transaction<Database>;
