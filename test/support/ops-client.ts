// Calls the ops pages the way a browser does after its sign-in prompt (HTTP Basic, any user name, an
// API key as the password), and reads the audit rows they leave.
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import type { TestApp, TestParty } from './test-app.ts';

export const OPS_USER = 'lim.wl@ops.example';

export function basic(password: string, user = OPS_USER): string {
  return `Basic ${Buffer.from(`${user}:${password}`, 'utf8').toString('base64')}`;
}

/** A request to the ops pages signed in with `who`'s key (or with no credentials for null). */
export function opsRequest(
  t: TestApp,
  who: TestParty | null,
  options: InjectOptions & { url: string },
): Promise<LightMyRequestResponse> {
  return t.app.inject({
    ...options,
    headers: { ...(who === null ? {} : { authorization: basic(who.key) }), ...options.headers },
  });
}

export function opsGet(
  t: TestApp,
  url: string,
  who: TestParty | null = t.ops,
): Promise<LightMyRequestResponse> {
  return opsRequest(t, who, { method: 'GET', url });
}

export interface AuditRow {
  readonly action: string;
  readonly outcome: string;
  readonly apiKeyId: string | null;
  readonly requester: string | null;
  readonly referralIds: readonly string[];
  readonly requestId: string;
}

/** The audit rows of the ops pages, oldest first. */
export async function adminAudit(t: TestApp): Promise<AuditRow[]> {
  const rows = await t.ctx.db
    .selectFrom('audit_events')
    .select(['action', 'outcome', 'api_key_id', 'requester_identifier', 'referral_ids', 'request_id'])
    .where('action', 'like', 'admin.%')
    .orderBy('seq')
    .execute();
  return rows.map((r) => ({
    action: r.action,
    outcome: r.outcome,
    apiKeyId: r.api_key_id,
    requester: r.requester_identifier,
    referralIds: r.referral_ids,
    requestId: r.request_id,
  }));
}
