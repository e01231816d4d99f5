// A warning on every API response to an institution whose webhook subscription refhub disabled (the
// receiver answered 410 Gone, or deliveries kept failing): `Webhook-Subscriptions-Disabled` lists
// those subscriptions' IDs, until the institution enables or deletes them. Which institutions have
// one is read from the database at most every few seconds per process, not per request.
import type { FastifyInstance } from 'fastify';
import type { Stores } from '../db/stores.ts';
import { isApiRoute } from './http.ts';

export const WEBHOOK_WARNING_HEADER = 'Webhook-Subscriptions-Disabled';
const REFRESH_MS = 5_000;

export type WebhookWarningDeps = { readonly stores: Pick<Stores, 'webhooks'> };

export function registerWebhookWarning(app: FastifyInstance, deps: WebhookWarningDeps): void {
  let known: { at: number; byInstitution: ReadonlyMap<string, readonly string[]> } | undefined;
  let loading: Promise<ReadonlyMap<string, readonly string[]>> | undefined;

  const load = async () => {
    const byInstitution = new Map<string, string[]>();
    for (const s of await deps.stores.webhooks.subscriptions.disabledByRefhub()) {
      const key = `${s.institution.idType}:${s.institution.id}`;
      byInstitution.set(key, [...(byInstitution.get(key) ?? []), s.id]);
    }
    known = { at: Date.now(), byInstitution };
    return byInstitution;
  };

  const current = async () => {
    if (known !== undefined && Date.now() - known.at < REFRESH_MS) return known.byInstitution;
    loading ??= load().finally(() => {
      loading = undefined;
    });
    try {
      return await loading;
    } catch {
      // The warning is advice: a database that cannot answer it does not fail the response.
      return known?.byInstitution ?? new Map<string, readonly string[]>();
    }
  };

  app.addHook('onSend', async (request, reply, payload) => {
    const key = request.apiKey;
    if (key === null || key.institutions.length === 0 || !isApiRoute(request)) return payload;
    const byInstitution = await current();
    const ids = key.institutions.flatMap((i) => byInstitution.get(`${i.idType}:${i.id}`) ?? []);
    if (ids.length > 0) void reply.header(WEBHOOK_WARNING_HEADER, ids.join(', '));
    return payload;
  });
}
