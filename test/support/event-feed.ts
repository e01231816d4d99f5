// Reading an institution's event feed through the API, as a client system does.
import { expect } from 'vitest';
import type { TestApp, TestParty } from './test-app.ts';

export interface FeedEvent {
  id: string;
  type: string;
  occurredAt: string;
  referralId: string;
  referralVersion: number;
  institution: { idType: string; id: string };
  system: string;
  description: string;
  reason?: { code: string; display: string };
}

export interface FeedPageJson {
  data: FeedEvent[];
  metadata: { next: string; hasMore: boolean };
}

export function feedUrl(party: TestParty, query: Record<string, string | number | undefined> = {}): string {
  const { institutionIdType, institutionId } = party.institution;
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) if (value !== undefined) params.set(name, String(value));
  const qs = params.toString();
  return `/api/v1/institutions/${institutionIdType}/${institutionId}/events${qs === '' ? '' : `?${qs}`}`;
}

export async function readFeedPage(
  t: TestApp,
  party: TestParty,
  query: { after?: string | undefined; limit?: number; wait?: number } = {},
): Promise<FeedPageJson> {
  const res = await t.request(party, { method: 'GET', url: feedUrl(party, query) });
  expect(res.statusCode, res.body).toBe(200);
  return res.json();
}

/** Every event from `after` to the end of what is ready now; returns them and the cursor to go on from. */
export async function readFeedToEnd(
  t: TestApp,
  party: TestParty,
  after?: string,
  limit = 100,
): Promise<{ events: FeedEvent[]; next: string | undefined }> {
  const events: FeedEvent[] = [];
  let cursor = after;
  for (;;) {
    const page = await readFeedPage(t, party, { after: cursor, limit });
    events.push(...page.data);
    cursor = page.metadata.next;
    if (!page.metadata.hasMore) return { events, next: cursor };
  }
}
