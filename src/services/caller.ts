// Who is calling: the authenticated API key, the institution it acts for in this request, and the
// person behind it. Every service function takes one, and every audit row is written from it.
import type { InstitutionRef } from '../domain/access.ts';
import type { Role } from '../domain/statuses.ts';

export interface Caller {
  readonly apiKeyId: string;
  readonly system: string;
  readonly role: Role;
  /** The institution named in the request, already checked against the key's institutions. */
  readonly institution: InstitutionRef;
  readonly requesterIdentifier: string | null;
  readonly requestId: string;
}
