// Who is calling: the authenticated API key, the institution it acts for in this request, and the
// person behind it. Every service function takes one, and every audit row is written from it.
import type { InstitutionRef } from '../domain/access.ts';
import type { Role } from '../domain/statuses.ts';
import type { IdempotentWrite } from '../db/idempotency.repository.ts';

export interface Caller {
  readonly apiKeyId: string;
  readonly system: string;
  readonly role: Role;
  /** The institution named in the request, already checked against the key's institutions. */
  readonly institution: InstitutionRef;
  readonly requesterIdentifier: string | null;
  readonly requestId: string;
  /**
   * A person in refhub's own web form (system `Manual`), acting through the session a one-time link
   * opened. The timeline names them by `requesterIdentifier`, and they are handed no new one-time
   * links: `links[]` are buttons for a client system's screen, and this person is already in the form.
   */
  readonly inWebForm?: boolean;
  /** The request's Idempotency-Key record, written in the write's own statement. */
  readonly idempotency?: IdempotentWrite | undefined;
}
