// Seeds a benchmark database fast: the demo catalog, API keys for the parties the scenarios act as,
// and drafts in bulk. A draft is written exactly as `POST /api/v1/referrals` writes it (without a
// requesterIdentifier): the referral row, its `referral.created` timeline event (the sentence sealed)
// and its `referral.create` audit row. The content goes through the API's own resolution
// (`resolveContent`) and the timeline sentence through the domain's own `timeline.created`, so the
// text and the columns cannot drift from what the API writes; test/system/bench/seed.int.test.ts
// compares the rows with API-made ones.
//
// Rows go in as multi-row INSERTs of a few hundred rows each, inside one transaction per batch, so
// 10,000 drafts take a second or two instead of the minutes 10,000 API calls would.
import type { Insertable, Kysely, Transaction } from 'kysely';
import { v7 as uuidv7 } from 'uuid';
import type { InstitutionRef } from '../src/domain/access.ts';
import { systemClock } from '../src/domain/clock.ts';
import { timeline } from '../src/domain/timeline.ts';
import { apiKeyRepository } from '../src/db/api-key.repository.ts';
import { catalogRepository } from '../src/db/catalog.repository.ts';
import type { AuditEventsTable, Database, ReferralsTable, TimelineEventsTable } from '../src/db/schema.ts';
import { createApiKeyIn } from '../src/services/api-key.service.ts';
import { loadCatalogIn, readCatalogFile } from '../src/services/catalog/catalog.service.ts';
import { DEMO_CATALOG_FILE } from '../src/composition/demo-setup.ts';
import { EMPTY_CONTENT, resolveContent, type ReferralFieldsInput } from '../src/services/referrals/input.ts';
import { newReferralRow } from '../src/db/referrals/rows.ts';
import { sealColumns } from '../src/db/data-keys/data-keys.repository.ts';
import { benchCipher } from './data-keys.ts';

/** The requester the scenarios name in reads and writes (audited with each). */
export const BENCH_REQUESTER = 'bench.clinician@example.org';

/** Who the scenarios act as: keys for institutions of the demo catalog. */
export interface BenchParty {
  readonly key: string;
  readonly apiKeyId: string;
  readonly system: string;
  readonly institution: InstitutionRef;
}

export interface BenchParties {
  /** Bukit Timah Family Clinic (HAS): the institution with 10,000 referrals that get and list read. */
  readonly reader: BenchParty;
  /** Tampines Medical Centre (Epic): submits and cancels the drafts of the write and forward scenarios. */
  readonly writer: BenchParty;
}

/** The offering the drafts go to: a specialist clinic, the typical (and cancellable) case. */
export const BENCH_OFFERING = 'cgh-gastro';

async function partyIn(trx: Transaction<Database>, system: string, id: string): Promise<BenchParty> {
  const institution = { idType: 'hci', id };
  const { key, record } = await createApiKeyIn(
    { apiKeys: apiKeyRepository(trx), catalog: catalogRepository(trx) },
    {
      system,
      role: 'sender',
      institutions: [institution],
      label: 'benchmark',
      environment: 'test',
    },
  );
  return { key, apiKeyId: record.id, system, institution };
}

/** Loads the demo catalog and creates the scenarios' keys, in one transaction. */
export async function seedCatalogAndKeys(db: Kysely<Database>): Promise<BenchParties> {
  const document = await readCatalogFile(DEMO_CATALOG_FILE);
  return db.transaction().execute(async (trx) => {
    await loadCatalogIn(catalogRepository(trx), document);
    return { reader: await partyIn(trx, 'HAS', 'S1234A'), writer: await partyIn(trx, 'Epic', 'S2345B') };
  });
}

/**
 * The demo catalog with clinics added until `count` institutions send referrals (the demo's two
 * clinics first), and a key for each sender; returns the senders in order, the reader and writer first.
 */
export async function seedSenders(db: Kysely<Database>, count: number): Promise<BenchParty[]> {
  const document = (await readCatalogFile(DEMO_CATALOG_FILE)) as {
    institutions: { idType: string; id: string; name: string }[];
  };
  const extra = Array.from({ length: Math.max(0, count - 2) }, (_, i) => ({
    idType: 'hci',
    id: `S${String(7001 + i)}${String.fromCharCode(65 + (i % 26))}`,
    name: `Benchmark Family Clinic ${i + 1}`,
  }));
  return db.transaction().execute(async (trx) => {
    await loadCatalogIn(catalogRepository(trx), {
      ...document,
      institutions: [...document.institutions, ...extra],
    });
    const parties = [await partyIn(trx, 'HAS', 'S1234A'), await partyIn(trx, 'Epic', 'S2345B')];
    for (const institution of extra) parties.push(await partyIn(trx, 'HAS', institution.id));
    return parties.slice(0, count);
  });
}

/**
 * The fields of a typical referral, as a client sends them: every patient and referrer field, and a
 * few lines of clinical information. `i` varies the patient so that rows are not all alike.
 */
export function typicalReferralFields(i: number): ReferralFieldsInput & { offeringId: string } {
  const serial = String(1_000_000 + (i % 9_000_000)).padStart(7, '0');
  return {
    offeringId: BENCH_OFFERING,
    patientUin: `S${serial}D`,
    patientName: `Tan Ah Kow ${i}`,
    dob: '1960-02-29',
    patientGender: i % 2 === 0 ? 'Male' : 'Female',
    nationality: 'SG',
    patientPhoneNumber: '91234567',
    residentialStatus: 'SC',
    referrerId: 'M12345A',
    referrerIdType: 'mcr',
    referrerName: 'Dr Lim Mei Ling',
    referrerEmail: 'mei.ling@bukittimah.example',
    referrerContactNumber: '61234567',
    clinicalInfo:
      'Dyspepsia for 3 months, worse after meals. No weight loss, no dysphagia, no GI bleeding.\n' +
      'H. pylori breath test negative. Trial of PPI for 8 weeks with partial response.\n' +
      'Please assess for upper endoscopy.',
    isUrgent: i % 10 === 0,
  };
}

export interface DraftBatch {
  readonly party: Omit<BenchParty, 'key'>;
  readonly count: number;
  /** Varies the patients; batches with different offsets hold different patients. */
  readonly offset?: number;
  /** The newest draft's creation time; each earlier one is a second older (default now). */
  readonly newest?: Date;
}

/** How many rows go into one INSERT: 31 columns × 500 rows stays far below PostgreSQL's 65,535 parameters. */
const ROWS_PER_STATEMENT = 500;

/** Inserts `batch.count` drafts as the API creates them; returns their IDs, oldest first. */
export async function seedDrafts(db: Kysely<Database>, batch: DraftBatch): Promise<string[]> {
  const offset = batch.offset ?? 0;
  const newest = (batch.newest ?? new Date()).getTime();
  const cipher = await benchCipher(db);
  return db.transaction().execute(async (trx) => {
    const sender = await catalogRepository(trx).findInstitution(batch.party.institution);
    if (!sender) throw new Error(`${batch.party.institution.id} is not in the catalog`);
    const created = timeline.created(sender.name);
    // The offering and its provider resolve once; each row's own fields need no database.
    const { content: resolved } = await resolveContent(
      systemClock,
      { offeringId: typicalReferralFields(offset).offeringId },
      (id) => catalogRepository(trx).findOffering(id),
    );
    const ids: string[] = [];
    for (let start = 0; start < batch.count; start += ROWS_PER_STATEMENT) {
      const referrals: Insertable<ReferralsTable>[] = [];
      const events: Insertable<TimelineEventsTable>[] = [];
      const audits: Insertable<AuditEventsTable>[] = [];
      for (let i = start; i < Math.min(batch.count, start + ROWS_PER_STATEMENT); i++) {
        const at = new Date(newest - (batch.count - 1 - i) * 1000);
        const id = uuidv7({ msecs: at.getTime() });
        // The offering was resolved once, above; the rest of the fields resolve without the database.
        const fields: ReferralFieldsInput = { ...typicalReferralFields(offset + i), offeringId: undefined };
        const content = {
          ...EMPTY_CONTENT,
          ...resolved,
          ...(await resolveContent(systemClock, fields, () => Promise.resolve(undefined))).content,
        };
        ids.push(id);
        referrals.push(
          newReferralRow(
            {
              ...content,
              id,
              sender: batch.party.institution,
              senderSystem: batch.party.system,
              now: at,
            },
            cipher,
          ),
        );
        const eventId = uuidv7({ msecs: at.getTime() });
        events.push({
          id: eventId,
          referral_id: id,
          type: created.type,
          system: batch.party.system,
          description: sealColumns(
            'timeline_events',
            { id: eventId },
            { description: created.description },
            cipher,
          ).description,
          produced_at: at,
        });
        audits.push({
          id: uuidv7({ msecs: at.getTime() }),
          occurred_at: at,
          request_id: uuidv7({ msecs: at.getTime() }),
          api_key_id: batch.party.apiKeyId,
          system: batch.party.system,
          institution_id_type: batch.party.institution.idType,
          institution_id: batch.party.institution.id,
          requester_identifier: null,
          action: 'referral.create',
          outcome: 'success',
          referral_ids: [id],
        });
      }
      await insertAll(trx, referrals, events, audits);
    }
    return ids;
  });
}

/**
 * Sends every `every`-th of `ids` back to its sender, as a provider asking it to act would leave it:
 * what the sender's `needs-action` worklist lists, for the list scenario's worklist page.
 */
export async function sendBack(db: Kysely<Database>, ids: readonly string[], every: number): Promise<number> {
  const chosen = ids.filter((_, i) => i % every === 0);
  for (let start = 0; start < chosen.length; start += ROWS_PER_STATEMENT) {
    await db
      .updateTable('referrals')
      .set((eb) => ({
        status: 'sender-action-required',
        submitted_at: eb.ref('created_at'),
        updated_at: eb.ref('created_at'),
      }))
      .where('id', 'in', chosen.slice(start, start + ROWS_PER_STATEMENT))
      .execute();
  }
  return chosen.length;
}

async function insertAll(
  trx: Transaction<Database>,
  referrals: Insertable<ReferralsTable>[],
  events: Insertable<TimelineEventsTable>[],
  audits: Insertable<AuditEventsTable>[],
): Promise<void> {
  if (referrals.length === 0) return;
  await trx.insertInto('referrals').values(referrals).execute();
  await trx.insertInto('timeline_events').values(events).execute();
  await trx.insertInto('audit_events').values(audits).execute();
}
