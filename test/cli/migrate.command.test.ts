// `refhub migrate` on a terminal: while a migration runs, one live line says which (and, past a
// second, for how long); when it ends, its end line takes that line's place. Real migrations, on an
// in-memory PGlite; the terminal is a stream that says it is one.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrate } from '../../src/cli/migrate.command.ts';
import { migrateToLatest, MIGRATION_NAMES, openStore, type Store } from '../../src/db/database.ts';

/** Carriage return and "erase the whole line". */
const REDRAW = '\r\x1b[2K';

function escaped(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

describe('refhub migrate on a terminal', () => {
  let store: Store;
  beforeAll(async () => {
    store = await openStore({ engine: 'pglite', dataDir: undefined, command: 'test' });
  }, 180_000);
  afterAll(async () => {
    await store.close();
  });

  it(
    'keeps a live line while each migration runs, and replaces it with the migration and its duration',
    {
      timeout: 180_000,
    },
    async () => {
      let written = '';
      const terminal = {
        isTTY: true,
        write: (text: string) => {
          written += text;
        },
      };
      await migrate(
        {
          known: MIGRATION_NAMES.length,
          migrate: async (progress) => {
            await migrateToLatest(store.db, progress);
          },
        },
        terminal,
      );
      const r = escaped(REDRAW);
      const each = MIGRATION_NAMES.map((name) => {
        const live = `Applying ${escaped(name)} …`;
        return `${live}(${r}${live} \\d+ s)*${r}Applied  ${escaped(name)} in \\d+(\\.\\d)? m?s\\n`;
      });
      expect(written).toMatch(
        new RegExp(
          `^${each.join('')}Applied ${MIGRATION_NAMES.length} migrations in \\d+(\\.\\d)? m?s, in one transaction: the database schema is up to date\\.\\n$`,
        ),
      );

      // What stays on the screen: one line per migration, and the total.
      const screen = written
        .split('\n')
        .map((line) => line.split(REDRAW).at(-1))
        .filter((line) => line !== '');
      expect(screen).toHaveLength(MIGRATION_NAMES.length + 1);
    },
  );
});
