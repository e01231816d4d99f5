// Runs once before the `int` and `browser` projects (vitest.config.ts): their tests run on PostgreSQL
// (every repository test on PostgreSQL as well as PGlite) and Redis, so fail early, and clearly, when
// either cannot be reached. The `fast` and `embedded` projects need no server and run without this
// check.
import { serversMissing } from './servers.ts';

export default async function setup(): Promise<void> {
  const missing = await serversMissing();
  if (missing.length > 0) {
    throw new Error(`The int and browser tests need ${missing.map((m) => m.said).join(', and ')}`);
  }
}
