// `refhub catalog load FILE`: loads the catalog of systems, institutions, offerings, priorities,
// outcome codes, reason codes and public holidays, an upsert by ID, and says how much it loaded.
import type { CatalogService } from '../services/catalog/catalog.service.ts';
import { plural } from './plural.ts';

export interface LoadCatalogDeps {
  readonly catalog: Pick<CatalogService, 'loadFile'>;
}

export async function loadCatalog(deps: LoadCatalogDeps, file: string): Promise<void> {
  const loaded = await deps.catalog.loadFile(file);
  process.stdout.write(
    `Loaded ${plural(loaded.systems, 'system')}, ${plural(loaded.institutions, 'institution')}, ${plural(loaded.offerings, 'offering')}, ${plural(loaded.priorities, 'priority', 'priorities')}, ${plural(loaded.outcomes, 'outcome code')}, ${plural(loaded.reasons, 'reason code')} and ${plural(loaded.holidays, 'public holiday')}.\n`,
  );
}
