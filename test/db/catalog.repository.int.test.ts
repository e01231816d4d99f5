// The catalog (contract §1): loading is a checked, all-or-nothing upsert by ID, and the demo catalog
// that ships with the project has everything the README's walk-through needs.
import fs from 'node:fs';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { catalogRepository } from '../../src/db/catalog.repository.ts';
import type { Store } from '../../src/db/database.ts';
import { ValidationError, type AppError } from '../../src/errors.ts';
import { createCatalogService, type CatalogService } from '../../src/services/catalog/catalog.service.ts';
import { createStores } from '../../src/db/stores.ts';
import { testDataKeys } from '../support/data-keys.ts';
import { DEMO_CATALOG_FILE } from '../../src/composition/demo-setup.ts';
import { ENGINES, openTestStore } from '../support/engines.ts';

interface DemoOffering {
  id: string;
  name: string;
  category: string;
  description: string;
  specialty: string;
  ehrCode: string;
  institution: { idType: string; id: string };
  system: string;
  cancellable?: boolean;
  active?: boolean;
  priorities?: string[];
  triageWithin?: Record<string, number>;
}
interface DemoCatalog {
  systems: string[];
  institutions: { idType: string; id: string; name: string }[];
  offerings: DemoOffering[];
  outcomes: { code: string; display: string; summaryRequired?: boolean; active?: boolean }[];
  priorities: { code: string; display: string; fhirPriority: string; active?: boolean }[];
  reasons: {
    code: string;
    display: string;
    actions: string[];
    commentRequired?: boolean;
    active?: boolean;
  }[];
  holidays: { date: string; name: string; active?: boolean }[];
}

const DEMO = JSON.parse(fs.readFileSync(DEMO_CATALOG_FILE, 'utf8')) as DemoCatalog;

/** A deep copy of the demo catalog, to spoil one thing in. */
function demo(): DemoCatalog {
  return structuredClone(DEMO);
}

/** Everything the catalog tables hold, timestamps included. */
async function snapshot(store: Store) {
  return {
    systems: await store.db.selectFrom('systems').selectAll().orderBy('name').execute(),
    institutions: await store.db
      .selectFrom('institutions')
      .selectAll()
      .orderBy('id_type')
      .orderBy('id')
      .execute(),
    offerings: await store.db.selectFrom('offerings').selectAll().orderBy('id').execute(),
    outcomes: await store.db.selectFrom('outcome_codes').selectAll().orderBy('code').execute(),
    reasons: await store.db.selectFrom('reason_codes').selectAll().orderBy('code').execute(),
    priorities: await store.db.selectFrom('priority_codes').selectAll().orderBy('code').execute(),
    holidays: await store.db
      .selectFrom('public_holidays')
      .select([sql<string>`day::text`.as('day'), 'name', 'active', 'created_at', 'updated_at'])
      .orderBy('day')
      .execute(),
  };
}

async function rejection(promise: Promise<unknown>): Promise<AppError> {
  const error: unknown = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ValidationError);
  return error as AppError;
}

describe('the demo catalog', () => {
  const providers = new Set(DEMO.offerings.map((o) => `${o.institution.idType}:${o.institution.id}`));
  const institutions = DEMO.institutions.map((i) => `${i.idType}:${i.id}`);

  it('has at least two sender clinics and two providers', () => {
    const senders = institutions.filter((i) => !providers.has(i));
    expect(senders.length).toBeGreaterThanOrEqual(2);
    expect(providers.size).toBeGreaterThanOrEqual(2);
    for (const provider of providers) expect(institutions).toContain(provider);
  });

  it('lists outcomes a provider reports, one of which needs no summary', () => {
    const outcomes = DEMO.outcomes;
    expect(outcomes.map((o) => o.code)).toEqual(
      expect.arrayContaining(['seen-discharged', 'seen-follow-up', 'referred-on', 'did-not-attend']),
    );
    expect(outcomes.find((o) => o.code === 'did-not-attend')?.summaryRequired).toBe(false);
  });

  it('lists the systems HAS, Epic and PartnersBuddy', () => {
    expect(DEMO.systems).toEqual(expect.arrayContaining(['HAS', 'Epic', 'PartnersBuddy']));
  });

  it('has at least six offerings across gpfirst, ae and soc, each with a specialty and an ehrCode', () => {
    expect(DEMO.offerings.length).toBeGreaterThanOrEqual(6);
    for (const category of ['gpfirst', 'ae', 'soc']) {
      expect(
        DEMO.offerings.some((o) => o.category === category),
        category,
      ).toBe(true);
    }
    for (const o of DEMO.offerings) {
      expect(o.specialty.trim(), o.id).not.toBe('');
      expect(o.ehrCode.trim(), o.id).not.toBe('');
    }
  });
});

describe.each(ENGINES)('catalog on %s', (engine) => {
  let store: Store;
  let catalog: CatalogService;
  beforeAll(async () => {
    store = await openTestStore(engine);
    catalog = createCatalogService({ stores: createStores(store.db, testDataKeys()) });
  });
  afterAll(async () => {
    await store.close();
  });
  beforeEach(async () => {
    // Each test starts from the demo catalog as shipped.
    await catalog.load(DEMO);
  });

  it('loads the demo file with every row in place', async () => {
    const summary = await catalog.loadFile(DEMO_CATALOG_FILE);
    expect(summary).toEqual({
      systems: DEMO.systems.length,
      institutions: DEMO.institutions.length,
      offerings: DEMO.offerings.length,
      outcomes: DEMO.outcomes.length,
      priorities: DEMO.priorities.length,
      reasons: DEMO.reasons.length,
      holidays: DEMO.holidays.length,
    });
    const repo = catalogRepository(store.db);
    expect(await repo.listSystems()).toEqual(['Epic', 'HAS', 'Manual', 'PartnersBuddy']);
    expect(await repo.isEmpty()).toBe(false);
    const gastro = await repo.findOffering('cgh-gastro');
    expect(gastro).toEqual({
      id: 'cgh-gastro',
      name: 'Gastroenterology Specialist Clinic',
      category: 'soc',
      description: 'Please read the referral guidelines at https://example.org/guide/gastro first.',
      specialty: 'Gastroenterology',
      ehrCode: 'GASTRO-SOC',
      system: 'Epic',
      cancellable: true,
      active: true,
      priorities: null,
      triageWithin: { routine: 10, urgent: 2, 'two-week-wait': 1 },
      institution: { idType: 'hci', id: 'S9001Z', name: 'Central General Hospital' },
    });
    expect((await repo.findOffering('cgh-ae'))?.cancellable).toBe(false);
    // The public holidays, by date, each in use.
    expect(await repo.listHolidays()).toEqual(DEMO.holidays.map((h) => ({ ...h, active: true })));
    expect(await repo.holidaysFrom('2027-01-01')).toEqual(
      new Set(DEMO.holidays.map((h) => h.date).filter((d) => d >= '2027-01-01')),
    );
    expect(await repo.findInstitution({ idType: 'hci', id: 'S1234A' })).toEqual({
      idType: 'hci',
      id: 'S1234A',
      name: 'Bukit Timah Family Clinic',
    });
    expect(await repo.findOffering('nope')).toBeUndefined();
    // The outcome codes, in the file's order, with their defaults.
    expect((await repo.listOutcomeCodes()).map((o) => o.code)).toEqual(DEMO.outcomes.map((o) => o.code));
    expect(await repo.findOutcomeCode('seen-discharged')).toEqual({
      code: 'seen-discharged',
      display: 'Seen and discharged to the referring clinic',
      summaryRequired: true,
      active: true,
    });
    expect(await repo.findOutcomeCode('nope')).toBeUndefined();
    // The priorities, in the file's order; an offering's list of them, or none (every one).
    expect((await repo.listPriorityCodes()).map((p) => p.code)).toEqual([
      'routine',
      'urgent',
      'two-week-wait',
    ]);
    expect((await repo.findOffering('cgh-ae'))?.priorities).toEqual(['urgent']);
    expect((await repo.findOffering('cgh-gastro'))?.priorities).toBeNull();
    // The reason codes, in the file's order, with their defaults (no comment required, in use).
    const reasons = await repo.listReasonCodes();
    expect(reasons.map((r) => r.code)).toEqual(DEMO.reasons.map((r) => r.code));
    expect(reasons.find((r) => r.code === 'wrong-service')).toEqual({
      code: 'wrong-service',
      display: 'Referred to the wrong service',
      actions: ['reject', 'redirect', 'cancel'],
      commentRequired: false,
      active: true,
    });
    expect(await repo.findInstitution({ idType: 'hci', id: 'NOPE' })).toBeUndefined();
  });

  it('changes nothing when the same file is loaded twice', async () => {
    await catalog.loadFile(DEMO_CATALOG_FILE);
    const first = await snapshot(store);
    await catalog.loadFile(DEMO_CATALOG_FILE);
    const second = await snapshot(store);
    // The catalog's systems, Manual, and refhub's own.
    expect(second.systems).toHaveLength(DEMO.systems.length + 2);
    expect(second.institutions).toHaveLength(DEMO.institutions.length);
    expect(second.offerings).toHaveLength(DEMO.offerings.length);
    // Timestamps included: an identical load rewrites nothing.
    expect(second).toEqual(first);
  });

  it('updates outcome words by code and keeps a code left out of a later file', async () => {
    const changed = demo();
    changed.outcomes = [
      { code: 'did-not-attend', display: 'Did not attend two appointments', summaryRequired: true },
      { code: 'seen-discharged', display: 'Seen and discharged', active: false },
    ];
    await catalog.load(changed);
    const repo = catalogRepository(store.db);
    expect(await repo.findOutcomeCode('did-not-attend')).toEqual({
      code: 'did-not-attend',
      display: 'Did not attend two appointments',
      summaryRequired: true,
      active: true,
    });
    expect((await repo.findOutcomeCode('seen-discharged'))?.active).toBe(false);
    // A code is never deleted: referrals completed with it keep it. The new file's order comes first.
    const codes = (await repo.listOutcomeCodes()).map((o) => o.code);
    expect(codes.slice(0, 2)).toEqual(['did-not-attend', 'seen-discharged']);
    expect(codes).toContain('referred-on');
  });

  it('updates a reason by code, its words and operations too, and keeps a code left out of a later file', async () => {
    const changed = demo();
    changed.reasons = [
      { code: 'duplicate', display: 'Duplicate referral', actions: ['cancel'], commentRequired: true },
      { code: 'wrong-service', display: 'Wrong service', actions: ['reject'], active: false },
    ];
    await catalog.load(changed);
    const reasons = await catalogRepository(store.db).listReasonCodes();
    expect(['duplicate', 'wrong-service'].map((code) => reasons.find((r) => r.code === code))).toEqual([
      {
        code: 'duplicate',
        display: 'Duplicate referral',
        actions: ['cancel'],
        commentRequired: true,
        active: true,
      },
      {
        code: 'wrong-service',
        display: 'Wrong service',
        actions: ['reject'],
        commentRequired: false,
        active: false,
      },
    ]);
    // A code is never deleted: referrals that carry it keep it.
    expect(reasons.map((r) => r.code)).toContain('other');
  });

  it('updates service levels by offering, and holidays by date, withdrawing one with active false', async () => {
    const doc = demo();
    doc.offerings[2]!.triageWithin = { routine: 15, 'two-week-wait': 1 };
    doc.holidays = [
      { date: '2026-12-25', name: 'Christmas Day', active: false },
      { date: '2026-12-31', name: 'New Year’s Eve (afternoon)' },
    ];
    await catalog.load(doc);
    const repo = catalogRepository(store.db);
    expect((await repo.findOffering(doc.offerings[2]!.id))?.triageWithin).toEqual({
      routine: 15,
      'two-week-wait': 1,
    });
    const holidays = await repo.listHolidays();
    expect(holidays.find((h) => h.date === '2026-12-25')).toEqual({
      date: '2026-12-25',
      name: 'Christmas Day',
      active: false,
    });
    // A day a later file leaves out stays; a withdrawn one is a working day again.
    expect(holidays.map((h) => h.date)).toEqual(expect.arrayContaining(['2026-12-31', '2027-01-01']));
    expect(await repo.holidaysFrom('2026-12-01')).not.toContain('2026-12-25');
    expect(await repo.holidaysFrom('2026-12-01')).toContain('2026-12-31');
  });

  it('updates names and offering fields by ID', async () => {
    const changed = demo();
    changed.institutions[0]!.name = 'Bukit Timah Family Clinic (Upper Bukit Timah)';
    const gastro = changed.offerings.find((o) => o.id === 'cgh-gastro')!;
    Object.assign(gastro, {
      name: 'Gastroenterology & Hepatology Clinic',
      category: 'polyclinic',
      description: 'New guidelines: https://example.org/guide/gi',
      specialty: 'Hepatology',
      ehrCode: 'GI-SOC',
      system: 'HAS',
      cancellable: false,
      active: false,
      priorities: ['routine', 'two-week-wait'],
      triageWithin: { routine: 20, 'two-week-wait': 2 },
      institution: { idType: 'hci', id: 'S9002Y' },
    });
    await catalog.load(changed);
    const repo = catalogRepository(store.db);
    expect((await repo.findInstitution({ idType: 'hci', id: 'S1234A' }))?.name).toBe(
      'Bukit Timah Family Clinic (Upper Bukit Timah)',
    );
    expect(await repo.findOffering('cgh-gastro')).toEqual({
      id: 'cgh-gastro',
      name: 'Gastroenterology & Hepatology Clinic',
      category: 'polyclinic',
      description: 'New guidelines: https://example.org/guide/gi',
      specialty: 'Hepatology',
      ehrCode: 'GI-SOC',
      system: 'HAS',
      cancellable: false,
      active: false,
      priorities: ['routine', 'two-week-wait'],
      triageWithin: { routine: 20, 'two-week-wait': 2 },
      institution: { idType: 'hci', id: 'S9002Y', name: 'Eastside Regional Hospital' },
    });
    const rows = await snapshot(store);
    expect(rows.offerings).toHaveLength(DEMO.offerings.length);
    // Untouched rows stay as they were.
    expect((await repo.findOffering('erh-cardio'))?.name).toBe('Cardiology Specialist Clinic');
  });

  it('defaults cancellable and active to true', async () => {
    const doc = demo();
    const extra: DemoOffering = { ...doc.offerings[0]!, id: 'cgh-defaults' };
    delete extra.cancellable;
    delete extra.active;
    doc.offerings.push(extra);
    await catalog.load(doc);
    const found = await catalogRepository(store.db).findOffering('cgh-defaults');
    expect(found).toMatchObject({ cancellable: true, active: true });
    await store.db.deleteFrom('offerings').where('id', '=', 'cgh-defaults').execute();
  });

  it('always has the Manual system, which offerings may name without listing it', async () => {
    const doc = demo();
    doc.systems = [];
    doc.offerings = doc.offerings.filter((o) => o.system !== 'HAS').map((o) => ({ ...o, system: 'Manual' }));
    await catalog.load(doc);
    expect(await catalogRepository(store.db).listSystems()).toContain('Manual');
    expect((await catalogRepository(store.db).findOffering('cgh-gastro'))?.system).toBe('Manual');
  });

  it('refuses a system named refhub, which names refhub’s own steps, and an offering of it', async () => {
    const doc = demo();
    doc.systems = [...doc.systems, 'refhub'];
    const error = await rejection(catalog.load(doc));
    expect(error.errors).toEqual([
      { path: `/systems/${doc.systems.length - 1}`, message: expect.stringContaining('refhub') as string },
    ]);
    const offering = demo();
    offering.offerings = offering.offerings.map((o) => ({ ...o, system: 'refhub' }));
    const unknown = await rejection(catalog.load(offering));
    expect(unknown.errors?.[0]).toMatchObject({ path: '/offerings/0/system' });
    // The store holds refhub (its steps' timeline rows refer to it), but not as a catalog system.
    expect(await catalogRepository(store.db).listSystems()).not.toContain('refhub');
    const held = await store.db.selectFrom('systems').select('name').where('name', '=', 'refhub').execute();
    expect(held).toEqual([{ name: 'refhub' }]);
  });

  it('accepts offerings naming systems loaded earlier', async () => {
    const doc = demo();
    doc.systems = [];
    await expect(catalog.load(doc)).resolves.toMatchObject({ offerings: DEMO.offerings.length });
  });

  it('accepts offerings naming institutions loaded earlier', async () => {
    const doc = demo();
    doc.institutions = [];
    doc.systems = [];
    await expect(catalog.load(doc)).resolves.toMatchObject({
      institutions: 0,
      offerings: DEMO.offerings.length,
    });
  });

  const spoilt: [string, (doc: DemoCatalog) => void, string, RegExp][] = [
    [
      'an unknown top-level field',
      (doc) => Object.assign(doc, { hospitals: [] }),
      '/hospitals',
      /is not a known field/,
    ],
    [
      'an unknown offering field',
      (doc) => Object.assign(doc.offerings[2]!, { colour: 'red' }),
      '/offerings/2/colour',
      /is not a known field/,
    ],
    [
      'an unknown institution field',
      (doc) => Object.assign(doc.institutions[1]!, { phone: '61234567' }),
      '/institutions/1/phone',
      /is not a known field/,
    ],
    [
      'an offering naming an unlisted institution',
      (doc) => (doc.offerings[1]!.institution = { idType: 'hci', id: 'S0000X' }),
      '/offerings/1/institution',
      /hci:S0000X/,
    ],
    [
      'an offering naming an unlisted system',
      (doc) => (doc.offerings[3]!.system = 'Cerner'),
      '/offerings/3/system',
      /Cerner/,
    ],
    [
      'a duplicate offering id',
      (doc) => doc.offerings.push({ ...doc.offerings[0]!, name: 'Another' }),
      `/offerings/${DEMO.offerings.length}/id`,
      /cgh-gpfirst/,
    ],
    [
      'a duplicate institution id',
      (doc) => doc.institutions.push({ ...doc.institutions[0]!, name: 'Another' }),
      `/institutions/${DEMO.institutions.length}/id`,
      /S1234A/,
    ],
    [
      'a duplicate outcome code',
      (doc) => doc.outcomes.push({ ...doc.outcomes[0]!, display: 'Another' }),
      `/outcomes/${DEMO.outcomes.length}/code`,
      /seen-discharged/,
    ],
    [
      'an outcome code with capitals',
      (doc) => (doc.outcomes[1]!.code = 'Seen'),
      '/outcomes/1/code',
      /pattern|match/,
    ],
    [
      'an outcome without words',
      (doc) => (doc.outcomes[2]!.display = ''),
      '/outcomes/2/display',
      /fewer|least|short/,
    ],
    [
      'a duplicate priority code',
      (doc) => doc.priorities.push({ ...doc.priorities[0]!, display: 'Another' }),
      `/priorities/${DEMO.priorities.length}/code`,
      /routine/,
    ],
    [
      'a priority mapped to no FHIR priority',
      (doc) => (doc.priorities[0]!.fhirPriority = 'whenever'),
      '/priorities/0/fhirPriority',
      /allowed values|whenever/,
    ],
    [
      'an offering naming a priority nobody listed',
      (doc) => ((doc.offerings[0] as DemoOffering & { priorities?: string[] }).priorities = ['soonish']),
      '/offerings/0/priorities/0',
      /soonish/,
    ],
    [
      'a service level for a priority nobody listed',
      (doc) => (doc.offerings[2]!.triageWithin = { soonish: 3 }),
      '/offerings/2/triageWithin/soonish',
      /soonish/,
    ],
    [
      'a service level for a priority the offering does not take',
      (doc) => (doc.offerings[1]!.triageWithin = { routine: 3 }),
      '/offerings/1/triageWithin/routine',
      /does not take/,
    ],
    [
      'a service level of no working days',
      (doc) => (doc.offerings[2]!.triageWithin = { routine: 0 }),
      '/offerings/2/triageWithin/routine',
      /greater|minimum|>=/,
    ],
    [
      'a holiday on a day the calendar does not have',
      (doc) => doc.holidays.push({ date: '2027-02-30', name: 'Nowhere Day' }),
      `/holidays/${DEMO.holidays.length}/date`,
      /not a date/,
    ],
    [
      'a holiday listed twice',
      (doc) => doc.holidays.push({ ...doc.holidays[0]!, name: 'Again' }),
      `/holidays/${DEMO.holidays.length}/date`,
      /repeats holiday/,
    ],
    [
      'a duplicate reason code',
      (doc) => doc.reasons.push({ ...doc.reasons[0]!, display: 'Another' }),
      `/reasons/${DEMO.reasons.length}/code`,
      /more-information-needed/,
    ],
    [
      'a reason for an operation that takes none',
      (doc) => (doc.reasons[1]!.actions = ['accept']),
      '/reasons/1/actions/0',
      /allowed values|accept/,
    ],
    [
      'a reason for no operation',
      (doc) => (doc.reasons[2]!.actions = []),
      '/reasons/2/actions',
      /fewer|least|short|items/,
    ],
    [
      'a bad category',
      (doc) => (doc.offerings[4]!.category = 'dental'),
      '/offerings/4/category',
      /allowed values|dental/,
    ],
  ];

  it.each(spoilt)('rejects %s, naming the path, and changes nothing', async (_what, spoil, path, message) => {
    const before = await snapshot(store);
    const doc = demo();
    // A valid change alongside the bad one proves the whole load is one transaction.
    doc.institutions[0]!.name = 'Renamed Clinic';
    doc.systems.push('NewSystem');
    spoil(doc);
    const error = await rejection(catalog.load(doc));
    const problem = error.errors?.find((e) => e.path === path);
    expect(problem, JSON.stringify(error.errors)).toBeDefined();
    expect(`${problem!.path} ${problem!.message} ${error.message}`).toMatch(message);
    expect(error.message).toContain(path);
    expect(await snapshot(store)).toEqual(before);
  });

  it('rejects a document that is not a catalog at all', async () => {
    const before = await snapshot(store);
    const error = await rejection(catalog.load({ systems: 'HAS' }));
    expect(error.errors?.map((e) => e.path)).toEqual(expect.arrayContaining(['/systems']));
    await expect(catalog.loadFile('/nonexistent/catalog.json')).rejects.toThrow(
      /Cannot read catalog \/nonexistent\/catalog\.json/,
    );
    expect(await snapshot(store)).toEqual(before);
  });

  it("reads a new draft's offering and sender in one statement, each absent when unknown", async () => {
    await catalog.loadFile(DEMO_CATALOG_FILE);
    const repo = catalogRepository(store.db);
    const [offering] = DEMO.offerings;
    const [sender] = DEMO.institutions;
    const ref = { idType: sender!.idType, id: sender!.id };
    const both = await repo.forNewDraft(offering!.id, ref);
    expect(both.senderName).toBe(sender!.name);
    expect(both.offering).toEqual(await repo.findOffering(offering!.id));
    // The draft is refused then: nothing else is needed.
    expect(await repo.forNewDraft('no-such-offering', ref)).toEqual({});
    expect(await repo.forNewDraft(undefined, ref)).toEqual({ senderName: sender!.name });
    expect(await repo.forNewDraft(null, ref)).toEqual({ senderName: sender!.name });
    expect(await repo.forNewDraft(offering!.id, { idType: 'hci', id: 'NOT-LISTED' })).toEqual({
      offering: both.offering,
    });
  });
});
