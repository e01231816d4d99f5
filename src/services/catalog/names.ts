// What a credential names of the catalog (its system, its institutions), checked when an API key or a
// client is made: one rule for both.
import type { InstitutionRef } from '../../domain/access.ts';
import type { Stores } from '../../db/stores.ts';

/**
 * What a credential (an API key, a client) names that the catalog does not list: its system and its
 * institutions, each a problem naming the field.
 */
export async function unknownToCatalog(
  catalog: Pick<Stores['catalog'], 'listSystems' | 'findInstitution'>,
  system: string,
  institutions: readonly InstitutionRef[],
): Promise<{ path: string; message: string }[]> {
  const problems: { path: string; message: string }[] = [];
  if (!(await catalog.listSystems()).includes(system))
    problems.push({ path: 'system', message: `${system} is not a system in the catalog` });
  for (const institution of institutions) {
    if (!(await catalog.findInstitution(institution))) {
      problems.push({
        path: 'institution',
        message: `${institution.idType}:${institution.id} is not an institution in the catalog`,
      });
    }
  }
  return problems;
}
