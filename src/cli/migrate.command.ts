// `refhub migrate`: applies the pending migrations, which opening the store does, and says so.
export interface MigrateDeps {
  /** Opens the configured store (which migrates it) and closes it again. */
  readonly migrate: () => Promise<void>;
}

export async function migrate(deps: MigrateDeps): Promise<void> {
  await deps.migrate();
  process.stdout.write('The database schema is up to date.\n');
}
