// The operator's listings write times as every page a person reads does: in the display zone
// (DISPLAY_TIME_ZONE), with the zone named, by the one formatter of domain/display-time.ts. Run on
// the real services and repositories over in-memory PGlite (the commands' store code is the same on
// PostgreSQL); what the commands print is read from stdout.
import { v7 as uuidv7 } from 'uuid';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listKeys } from '../../src/cli/api-key.command.ts';
import { listWebhooks } from '../../src/cli/webhooks.command.ts';
import { DEMO_CATALOG_FILE } from '../../src/composition/demo-setup.ts';
import type { Store } from '../../src/db/database.ts';
import { webhookSubscriptionRepository } from '../../src/db/webhooks/subscriptions.repository.ts';
import { displayTimeIn } from '../../src/domain/display-time.ts';
import { createApiKeyService } from '../../src/services/api-key.service.ts';
import { createCatalogService } from '../../src/services/catalog/catalog.service.ts';
import { createStores } from '../../src/db/stores.ts';
import { testDataKeys } from '../support/data-keys.ts';
import { openTestStore } from '../support/engines.ts';
import { storesOf } from '../support/stores.ts';

const NOW = new Date('2026-06-04T03:15:07.000Z');
const DISPLAY_FORMAT = /^(Mon|Tue|Wed|Thu|Fri|Sat|Sun) \d{1,2} [A-Z][a-z]{2} \d{4}, \d{2}:\d{2} \S+$/;

/** What `run` writes to stdout, line by line. */
async function printed(run: () => Promise<void>): Promise<string[]> {
  const lines: string[] = [];
  const write = process.stdout.write.bind(process.stdout);
  process.stdout.write = (chunk: string | Uint8Array) => {
    lines.push(...String(chunk).split('\n').filter(Boolean));
    return true;
  };
  try {
    await run();
  } finally {
    process.stdout.write = write;
  }
  return lines;
}

describe('times in the command line’s listings', () => {
  let store: Store;
  const clock = { now: () => NOW };
  beforeAll(async () => {
    store = await openTestStore('pglite');
    await createCatalogService({ stores: createStores(store.db, testDataKeys()) }).loadFile(
      DEMO_CATALOG_FILE,
    );
  });
  afterAll(async () => {
    await store.close();
  });

  it.each([
    ['Asia/Singapore', 'Thu 4 Jun 2026, 11:15 SGT'],
    ['Europe/London', 'Thu 4 Jun 2026, 04:15 BST'],
  ])('keys list writes when a key was revoked in %s as the pages do', async (zone, shown) => {
    const apiKeys = createApiKeyService({ stores: storesOf(store.db), clock });
    const displayTime = displayTimeIn(zone);
    const { record } = await apiKeys.create({
      system: 'HAS',
      role: 'sender',
      institutions: [{ idType: 'hci', id: 'S1234A' }],
      environment: 'test',
    });
    await apiKeys.revoke(record.id);

    const lines = await printed(() => listKeys({ apiKeys, displayTime }));
    const row = lines.find((line) => line.startsWith(record.id));
    expect(row?.split('\t')).toContain(`revoked ${shown}`);
    expect(shown).toBe(displayTime.dateTime(NOW));
    expect(shown).toMatch(DISPLAY_FORMAT);
  });

  it('webhooks list writes when a subscription was disabled as the pages do', async () => {
    const displayTime = displayTimeIn('Asia/Singapore');
    const subscriptions = webhookSubscriptionRepository(store.db);
    const institution = { idType: 'hci', id: 'S9001Z' } as const;
    const created = await subscriptions.insert({
      id: uuidv7(),
      institution,
      url: 'https://hooks.example.org/refhub',
      eventTypes: null,
      description: null,
      secret: 'whsec_test',
      now: NOW,
    });
    await subscriptions.update(institution, created.id, { enabled: false }, NOW);

    const lines = await printed(() =>
      listWebhooks({ allSubscriptions: () => subscriptions.all(), displayTime }),
    );
    const row = lines.find((line) => line.startsWith(created.id))?.split('\t');
    expect(row?.[2]).toBe('disabled (by-institution) Thu 4 Jun 2026, 11:15 SGT');
    expect(row?.[2]).toBe(`disabled (by-institution) ${displayTime.dateTime(NOW)}`);
  });
});
