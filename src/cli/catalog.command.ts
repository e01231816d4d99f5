// `refhub catalog load FILE`: loads the catalog of systems, institutions, offerings, outcome codes and
// reason codes,
// an upsert by ID, and says how much it loaded.
import type { CatalogService } from '../services/catalog/catalog.service.ts';
import { plural } from './plural.ts';

export interface LoadCatalogDeps {
  readonly catalog: Pick<CatalogService, 'loadFile'>;
}

export async function loadCatalog(deps: LoadCatalogDeps, file: string): Promise<void> {
  const loaded = await deps.catalog.loadFile(file);
  process.stdout.write(
    `Loaded ${plural(loaded.systems, 'system')}, ${plural(loaded.institutions, 'institution')}, ${plural(loaded.offerings, 'offering')}, ${plural(loaded.priorities, 'priority', 'priorities')}, ${plural(loaded.outcomes, 'outcome code')} and ${plural(loaded.reasons, 'reason code')}.\n`,
  );
}
