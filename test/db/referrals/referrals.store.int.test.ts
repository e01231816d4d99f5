// Referrals in the data layer: tenancy (contract §2), the list query (§5.1) and compare-and-set on
// `version` (§4). Expected results come from a plain model of the fixture below, not from the SQL.
import { v7 as uuidv7 } from 'uuid';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Store } from '../../../src/db/database.ts';
import {
  type ListFilter,
  type ListSort,
  type NewReferral,
  type ReferralContent,
} from '../../../src/db/referrals/rows.ts';
import { createReferralStore } from '../../../src/db/referrals/referrals.store.ts';
import type { ReferralStore } from '../../../src/db/referrals/referrals.store.ts';
import type { InstitutionRef } from '../../../src/domain/access.ts';
import { CORE_STATUS_OF, CORE_STATUSES, type CoreStatus, type Status } from '../../../src/domain/statuses.ts';
import { ReferralNotFoundError } from '../../../src/errors.ts';
import { createCatalogService } from '../../../src/services/catalog/catalog.service.ts';
import { createStores } from '../../../src/db/stores.ts';
import { DEMO_CATALOG_FILE } from '../../../src/composition/demo-setup.ts';
import { ENGINES, openTestStore } from '../../support/engines.ts';
import { testDataKeys } from '../../support/data-keys.ts';
import { SEALED_COLUMNS, type DataKeys } from '../../../src/db/data-keys/data-keys.repository.ts';

const CLINIC_A = { idType: 'hci', id: 'S1234A' }; // sender
const CLINIC_B = { idType: 'hci', id: 'S2345B' }; // sender
const HOSPITAL_P = { idType: 'hci', id: 'S9001Z' }; // provides cgh-gastro
const HOSPITAL_Q = { idType: 'hci', id: 'S9002Y' }; // provides erh-cardio
const INSTITUTIONS = [CLINIC_A, CLINIC_B, HOSPITAL_P, HOSPITAL_Q];
const OFFERINGS = { 'cgh-gastro': HOSPITAL_P, 'erh-cardio': HOSPITAL_Q } as const;

const T0 = Date.parse('2026-03-01T00:00:00.000Z');
const at = (minutes: number) => new Date(T0 + minutes * 60_000);

interface Fixture {
  readonly name: string;
  readonly sender: InstitutionRef;
  readonly offering: keyof typeof OFFERINGS | null;
  readonly status: Status;
  readonly created: number;
  readonly submitted: number | null;
  readonly updated: number;
  readonly uin: string;
  readonly deleted?: boolean;
}

const FIXTURES: readonly Fixture[] = [
  {
    name: 'a-draft',
    sender: CLINIC_A,
    offering: 'cgh-gastro',
    status: 'draft',
    created: 1,
    submitted: null,
    updated: 20,
    uin: 'S1000001A',
  },
  {
    name: 'a-draft-no-offering',
    sender: CLINIC_A,
    offering: null,
    status: 'draft',
    created: 2,
    submitted: null,
    updated: 2,
    uin: 'S1000002B',
  },
  {
    name: 'a-pending',
    sender: CLINIC_A,
    offering: 'cgh-gastro',
    status: 'pending-acceptance',
    created: 3,
    submitted: 4,
    updated: 5,
    uin: 'S1000001A',
  },
  {
    name: 'a-accepted',
    sender: CLINIC_A,
    offering: 'cgh-gastro',
    status: 'accepted',
    created: 6,
    submitted: 12,
    updated: 13,
    uin: 'S1000003C',
  },
  {
    name: 'a-action',
    sender: CLINIC_A,
    offering: 'erh-cardio',
    status: 'sender-action-required',
    created: 7,
    submitted: 8,
    updated: 30,
    uin: 'S1000001A',
  },
  {
    name: 'a-scheduled',
    sender: CLINIC_A,
    offering: 'erh-cardio',
    status: 'scheduled',
    created: 9,
    submitted: 10,
    updated: 11,
    uin: 'S1000004D',
  },
  {
    name: 'a-rejected',
    sender: CLINIC_A,
    offering: 'cgh-gastro',
    status: 'rejected',
    created: 14,
    submitted: 15,
    updated: 16,
    uin: 'S1000005E',
  },
  {
    name: 'a-cancelled',
    sender: CLINIC_A,
    offering: 'cgh-gastro',
    status: 'cancelled',
    created: 17,
    submitted: 18,
    updated: 19,
    uin: 'S1000006F',
  },
  // Two rows with equal timestamps: ties are broken by ID, newest first.
  {
    name: 'a-tie-1',
    sender: CLINIC_A,
    offering: 'cgh-gastro',
    status: 'pending-acceptance',
    created: 21,
    submitted: 22,
    updated: 23,
    uin: 'S1000007G',
  },
  {
    name: 'a-tie-2',
    sender: CLINIC_A,
    offering: 'cgh-gastro',
    status: 'pending-acceptance',
    created: 21,
    submitted: 22,
    updated: 23,
    uin: 'S1000008H',
  },
  {
    name: 'a-deleted',
    sender: CLINIC_A,
    offering: 'cgh-gastro',
    status: 'draft',
    created: 24,
    submitted: null,
    updated: 25,
    uin: 'S1000001A',
    deleted: true,
  },
  {
    name: 'b-pending',
    sender: CLINIC_B,
    offering: 'cgh-gastro',
    status: 'pending-acceptance',
    created: 26,
    submitted: 27,
    updated: 28,
    uin: 'S1000001A',
  },
  {
    name: 'b-draft',
    sender: CLINIC_B,
    offering: 'cgh-gastro',
    status: 'draft',
    created: 29,
    submitted: null,
    updated: 29,
    uin: 'S1000009I',
  },
  {
    name: 'b-action',
    sender: CLINIC_B,
    offering: 'cgh-gastro',
    status: 'sender-action-required',
    created: 31,
    submitted: 32,
    updated: 33,
    uin: 'S1000010J',
  },
  // A hospital can refer to itself: it is then both sender and provider.
  {
    name: 'p-self',
    sender: HOSPITAL_P,
    offering: 'cgh-gastro',
    status: 'accepted',
    created: 34,
    submitted: 35,
    updated: 36,
    uin: 'S1000011K',
  },
];

const same = (a: InstitutionRef | null, b: InstitutionRef) =>
  a !== null && a.idType === b.idType && a.id === b.id;
const providerOf = (f: Fixture) => (f.offering === null ? null : OFFERINGS[f.offering]);

/** The model: which side of `f` the institution may see it from. */
function visibleTo(f: Fixture, inst: InstitutionRef, side?: 'sender' | 'provider'): boolean {
  if (f.deleted === true) return false;
  const asSender = same(f.sender, inst);
  const asProvider = same(providerOf(f), inst) && f.status !== 'draft';
  return side === 'sender' ? asSender : side === 'provider' ? asProvider : asSender || asProvider;
}

function matchesCore(f: Fixture, inst: InstitutionRef, cores: readonly CoreStatus[]): boolean {
  if (cores.length === 0) return true;
  return cores.some((core) =>
    core === 'sender-action-required'
      ? f.status === 'sender-action-required' && same(f.sender, inst)
      : CORE_STATUS_OF[f.status] === core,
  );
}

describe.each(ENGINES)('referral repository on %s', (engine) => {
  let store: Store;
  let repo: ReferralStore;
  let keys: DataKeys;
  const ids = new Map<string, string>();
  const fixtureOf = new Map<string, Fixture>();

  function content(f: Pick<Fixture, 'offering' | 'uin'>): ReferralContent {
    const provider = f.offering === null ? null : OFFERINGS[f.offering];
    return {
      offeringId: f.offering,
      providerIdType: provider?.idType ?? null,
      providerId: provider?.id ?? null,
      patientUin: f.uin,
      patientName: 'Tan Ah Kow',
      patientDob: '1960-05-17',
      patientGender: 'Male',
      patientNationality: 'SG',
      patientPhoneNumber: '91234567',
      patientResidentialStatus: 'SC',
      referrerId: 'M12345A',
      referrerIdType: 'mcr',
      referrerName: 'Dr Lim',
      referrerEmail: 'lim@example.org',
      referrerContactNumber: '61234567',
      clinicalInfo: 'Epigastric pain for 3 weeks.',
      isUrgent: false,
      priority: null,
    };
  }

  async function insertDraft(
    sender: InstitutionRef,
    offering: Fixture['offering'] = 'cgh-gastro',
    now = at(100),
  ): Promise<string> {
    const id = uuidv7();
    const referral: NewReferral = {
      id,
      sender,
      senderSystem: 'HAS',
      now,
      ...content({ offering, uin: 'S9999999Z' }),
    };
    await repo.insert(referral);
    return id;
  }

  /** The model's answer for a list filter: fixture names in the expected order. */
  function expected(filter: Omit<ListFilter, 'offset' | 'pageSize'>): string[] {
    const key = (f: Fixture): number | null =>
      filter.sort === 'updatedAt' ? f.updated : filter.sort === 'createdAt' ? f.created : f.submitted;
    return FIXTURES.filter(
      (f) =>
        visibleTo(f, filter.institution, filter.side) &&
        matchesCore(f, filter.institution, filter.coreStatuses) &&
        (filter.patientUin === undefined || f.uin === filter.patientUin),
    )
      .sort((x, y) => {
        const kx = key(x);
        const ky = key(y);
        if (kx !== ky) {
          if (kx === null) return 1;
          if (ky === null) return -1;
          return ky - kx;
        }
        const ix = ids.get(x.name)!;
        const iy = ids.get(y.name)!;
        return ix < iy ? 1 : ix > iy ? -1 : 0;
      })
      .map((f) => f.name);
  }

  async function listed(filter: Omit<ListFilter, 'offset' | 'pageSize'>): Promise<string[]> {
    const { records, total, hasNext } = await repo.list({ ...filter, offset: 0, pageSize: 1000 });
    expect(hasNext).toBe(false);
    expect(total).toBe(records.length);
    return records.map((r) => fixtureOf.get(r.id)!.name);
  }

  beforeAll(async () => {
    store = await openTestStore(engine);
    await createCatalogService({ stores: createStores(store.db, testDataKeys()) }).loadFile(
      DEMO_CATALOG_FILE,
    );
    keys = testDataKeys();
    repo = createReferralStore(store.db, keys);
    for (const f of FIXTURES) {
      const id = uuidv7();
      ids.set(f.name, id);
      fixtureOf.set(id, f);
      await repo.insert({ id, sender: f.sender, senderSystem: 'HAS', now: at(f.created), ...content(f) });
      let version = 1;
      if (f.status !== 'draft' || f.updated !== f.created) {
        const patch = { status: f.status, submittedAt: f.submitted === null ? null : at(f.submitted) };
        expect(await repo.compareAndSet(id, version, patch, at(f.updated))).toBe(true);
        version++;
      }
      if (f.deleted === true) expect(await repo.softDelete(id, version, at(f.updated))).toBe(true);
    }
  });
  afterAll(async () => {
    await store.close();
  });

  describe('tenancy', () => {
    it('shows each referral to its sender, to its provider once submitted, and to nobody else', async () => {
      for (const f of FIXTURES) {
        for (const inst of INSTITUTIONS) {
          const found = await repo.findVisible(ids.get(f.name)!, inst);
          expect(found !== undefined, `${f.name} seen by ${inst.id}`).toBe(visibleTo(f, inst));
        }
      }
      // Spot checks of the model itself.
      expect(visibleTo(fixtureOf.get(ids.get('a-draft')!)!, HOSPITAL_P)).toBe(false);
      expect(visibleTo(fixtureOf.get(ids.get('a-pending')!)!, HOSPITAL_P)).toBe(true);
      expect(visibleTo(fixtureOf.get(ids.get('a-pending')!)!, HOSPITAL_Q)).toBe(false);
      expect(visibleTo(fixtureOf.get(ids.get('a-pending')!)!, CLINIC_B)).toBe(false);
    });

    it('reads back every stored field with the names of both institutions', async () => {
      const id = ids.get('a-accepted')!;
      const record = await repo.findVisible(id, HOSPITAL_P);
      expect(record).toEqual({
        id,
        version: 2,
        status: 'accepted',
        sender: { idType: 'hci', id: 'S1234A', name: 'Bukit Timah Family Clinic' },
        senderSystem: 'HAS',
        provider: HOSPITAL_P,
        offering: {
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
        },
        patient: {
          uin: 'S1000003C',
          name: 'Tan Ah Kow',
          dob: '1960-05-17',
          gender: 'Male',
          nationality: 'SG',
          phoneNumber: '91234567',
          residentialStatus: 'SC',
        },
        referrer: {
          id: 'M12345A',
          idType: 'mcr',
          name: 'Dr Lim',
          email: 'lim@example.org',
          contactNumber: '61234567',
        },
        clinicalInfo: 'Epigastric pain for 3 weeks.',
        isUrgent: false,
        priority: null,
        ehr: {
          state: 'not-sent',
          attempts: 0,
          lastAttemptAt: null,
          sha256: null,
          dueVersion: null,
          forwardedVersion: null,
        },
        createdAt: at(6),
        updatedAt: at(13),
        submittedAt: at(12),
        redirectedFrom: null,
        redirectedTo: null,
        triageDueAt: null,
      });
      const draft = await repo.findVisible(ids.get('a-draft-no-offering')!, CLINIC_A);
      expect(draft).toMatchObject({
        status: 'draft',
        version: 1,
        offering: null,
        provider: null,
        submittedAt: null,
      });
    });

    it('getVisible throws ReferralNotFoundError for a referral the institution may not see', async () => {
      await expect(repo.getVisible(ids.get('a-draft')!, HOSPITAL_P)).rejects.toBeInstanceOf(
        ReferralNotFoundError,
      );
      await expect(repo.getVisible(ids.get('a-pending')!, CLINIC_B)).rejects.toBeInstanceOf(
        ReferralNotFoundError,
      );
      await expect(repo.getVisible(ids.get('a-deleted')!, CLINIC_A)).rejects.toBeInstanceOf(
        ReferralNotFoundError,
      );
      const unknown = uuidv7();
      await expect(repo.getVisible(unknown, CLINIC_A)).rejects.toThrow(unknown);
      await expect(repo.getVisible(unknown, CLINIC_A)).rejects.toMatchObject({
        code: 'referral_not_found',
        status: 404,
      });
      expect((await repo.getVisible(ids.get('a-pending')!, HOSPITAL_P)).id).toBe(ids.get('a-pending'));
    });

    it('findForSystem sees any referral that is not deleted, drafts included', async () => {
      expect((await repo.findForSystem(ids.get('b-draft')!))?.status).toBe('draft');
      expect(await repo.findForSystem(ids.get('a-deleted')!)).toBeUndefined();
    });
  });

  describe('list', () => {
    const sorts: ListSort[] = ['updatedAt', 'submittedAt', 'createdAt'];

    it.each(sorts)('lists everything an institution sees, newest first by %s', async (sort) => {
      for (const institution of INSTITUTIONS) {
        expect(await listed({ institution, coreStatuses: [], sort }), institution.id).toEqual(
          expected({ institution, coreStatuses: [], sort }),
        );
      }
    });

    it('puts referrals without submittedAt last when sorting by submittedAt', async () => {
      const names = await listed({ institution: CLINIC_A, coreStatuses: [], sort: 'submittedAt' });
      expect(names.slice(-2).sort()).toEqual(['a-draft', 'a-draft-no-offering']);
      expect(names[0]).toBe(expected({ institution: CLINIC_A, coreStatuses: [], sort: 'submittedAt' })[0]);
      // Sanity of the model: by updatedAt the draft touched last leads.
      expect((await listed({ institution: CLINIC_A, coreStatuses: [], sort: 'updatedAt' }))[0]).toBe(
        'a-action',
      );
    });

    it('breaks ties by ID, newest first', async () => {
      const names = await listed({ institution: CLINIC_A, coreStatuses: ['pending'], sort: 'createdAt' });
      const ties = names.filter((n) => n.startsWith('a-tie-'));
      const byId = ['a-tie-1', 'a-tie-2'].sort((x, y) => (ids.get(x)! < ids.get(y)! ? 1 : -1));
      expect(ties).toEqual(byId);
    });

    it('narrows to one side', async () => {
      expect(
        await listed({ institution: HOSPITAL_P, side: 'sender', coreStatuses: [], sort: 'updatedAt' }),
      ).toEqual(['p-self']);
      const asProvider = await listed({
        institution: HOSPITAL_P,
        side: 'provider',
        coreStatuses: [],
        sort: 'updatedAt',
      });
      expect(asProvider).toEqual(
        expected({ institution: HOSPITAL_P, side: 'provider', coreStatuses: [], sort: 'updatedAt' }),
      );
      expect(asProvider).toContain('p-self');
      expect(asProvider).not.toContain('a-draft');
      expect(asProvider).not.toContain('b-draft');
      for (const institution of INSTITUTIONS) {
        for (const side of ['sender', 'provider'] as const) {
          expect(await listed({ institution, side, coreStatuses: [], sort: 'createdAt' })).toEqual(
            expected({ institution, side, coreStatuses: [], sort: 'createdAt' }),
          );
        }
      }
    });

    it('filters by each coreStatus, and by several at once', async () => {
      for (const institution of INSTITUTIONS) {
        for (const core of CORE_STATUSES) {
          const filter = { institution, coreStatuses: [core], sort: 'updatedAt' as const };
          expect(await listed(filter), `${institution.id} ${core}`).toEqual(expected(filter));
        }
        const several = {
          institution,
          coreStatuses: ['draft', 'confirmed', 'cancelled'] as CoreStatus[],
          sort: 'createdAt' as const,
        };
        expect(await listed(several)).toEqual(expected(several));
      }
      // `pending` covers pending-acceptance and accepted.
      const ties = ['a-tie-1', 'a-tie-2'].sort((x, y) => (ids.get(x)! < ids.get(y)! ? 1 : -1));
      expect(await listed({ institution: CLINIC_A, coreStatuses: ['pending'], sort: 'updatedAt' })).toEqual([
        ...ties,
        'a-accepted',
        'a-pending',
      ]);
    });

    it('lists sender-action-required only for the sender, who is asked to act', async () => {
      const sar = (institution: InstitutionRef, side?: 'sender' | 'provider') =>
        listed({
          institution,
          ...(side ? { side } : {}),
          coreStatuses: ['sender-action-required'],
          sort: 'updatedAt',
        });
      expect(await sar(CLINIC_A)).toEqual(['a-action']);
      expect(await sar(CLINIC_B)).toEqual(['b-action']);
      expect(await sar(CLINIC_B, 'sender')).toEqual(['b-action']);
      // The providers see those referrals, but are not the ones asked to act.
      expect(await listed({ institution: HOSPITAL_Q, coreStatuses: [], sort: 'updatedAt' })).toContain(
        'a-action',
      );
      expect(await listed({ institution: HOSPITAL_P, coreStatuses: [], sort: 'updatedAt' })).toContain(
        'b-action',
      );
      expect(await sar(HOSPITAL_Q)).toEqual([]);
      expect(await sar(HOSPITAL_P)).toEqual([]);
      expect(await sar(HOSPITAL_P, 'provider')).toEqual([]);
      // Combined with another status, the provider still gets that other status.
      const mixed = await listed({
        institution: HOSPITAL_P,
        coreStatuses: ['sender-action-required', 'pending'],
        sort: 'updatedAt',
      });
      expect(mixed).toEqual(
        expected({ institution: HOSPITAL_P, coreStatuses: ['pending'], sort: 'updatedAt' }),
      );
      expect(mixed.length).toBeGreaterThan(0);
    });

    it('filters by patientUin, within what the institution may see', async () => {
      const filter = {
        institution: CLINIC_A,
        coreStatuses: [],
        patientUin: 'S1000001A',
        sort: 'updatedAt' as const,
      };
      expect(await listed(filter)).toEqual(['a-action', 'a-draft', 'a-pending']);
      expect(await listed(filter)).toEqual(expected(filter));
      const provider = {
        institution: HOSPITAL_P,
        coreStatuses: [],
        patientUin: 'S1000001A',
        sort: 'updatedAt' as const,
      };
      expect(await listed(provider)).toEqual(['b-pending', 'a-pending']);
      expect(await listed({ ...filter, patientUin: 'S0000000X' })).toEqual([]);
      expect(await listed({ ...filter, patientUin: 'S1000001A', coreStatuses: ['draft'] })).toEqual([
        'a-draft',
      ]);
    });

    it('pages with offset and pageSize, reporting hasNext and the total', async () => {
      const filter = { institution: CLINIC_A, coreStatuses: [], sort: 'submittedAt' as const };
      const all = expected(filter);
      expect(all.length).toBe(10);
      const seen: string[] = [];
      for (let offset = 0; offset < all.length; offset += 3) {
        const page = await repo.list({ ...filter, offset, pageSize: 3 });
        expect(page.total).toBe(all.length);
        expect(page.hasNext).toBe(offset + 3 < all.length);
        expect(page.records.length).toBe(Math.min(3, all.length - offset));
        seen.push(...page.records.map((r) => fixtureOf.get(r.id)!.name));
      }
      expect(seen).toEqual(all);
      const exact = await repo.list({ ...filter, offset: 0, pageSize: all.length });
      expect(exact).toMatchObject({ total: all.length, hasNext: false });
      expect(exact.records).toHaveLength(all.length);
      const beyond = await repo.list({ ...filter, offset: 50, pageSize: 10 });
      expect(beyond).toEqual({ records: [], total: all.length, hasNext: false });
      const one = await repo.list({ ...filter, offset: all.length - 1, pageSize: 1 });
      expect(one.records.map((r) => fixtureOf.get(r.id)!.name)).toEqual([all.at(-1)]);
      expect(one.hasNext).toBe(false);
    });

    it('never lists or counts soft-deleted referrals', async () => {
      const everything = await repo.list({
        institution: CLINIC_A,
        coreStatuses: [],
        sort: 'createdAt',
        offset: 0,
        pageSize: 1000,
      });
      expect(everything.records.map((r) => r.id)).not.toContain(ids.get('a-deleted'));
      expect(everything.total).toBe(
        FIXTURES.filter((f) => f.sender === CLINIC_A && f.deleted !== true).length,
      );
      const drafts = await listed({
        institution: CLINIC_A,
        coreStatuses: ['draft'],
        patientUin: 'S1000001A',
        sort: 'createdAt',
      });
      expect(drafts).toEqual(['a-draft']);
    });
  });

  describe('writes', () => {
    it('soft-deletes once, only at the expected version, and the row stays for the audit trail', async () => {
      const id = await insertDraft(CLINIC_A);
      expect(await repo.softDelete(id, 2, at(101))).toBe(false);
      expect(await repo.findVisible(id, CLINIC_A)).toBeDefined();
      expect(await repo.softDelete(id, 1, at(101))).toBe(true);
      expect(await repo.softDelete(id, 2, at(102))).toBe(false);
      expect(await repo.findVisible(id, CLINIC_A)).toBeUndefined();
      expect(await repo.compareAndSet(id, 2, { clinicalInfo: 'after delete' }, at(103))).toBe(false);
      const row = await store.db
        .selectFrom('referrals')
        .select(['version', 'deleted_at', 'personal_data'])
        .where('id', '=', id)
        .executeTakeFirstOrThrow();
      expect(row).toMatchObject({ version: 2, deleted_at: at(101) });
      // The row keeps its content, sealed: it opens to what was written.
      const content = (await keys.cipher(store.db)).open(row.personal_data ?? '', {
        table: 'referrals',
        column: 'personal_data',
        row: id,
      });
      expect(JSON.parse(content)).toMatchObject({ clinical_info: 'Epigastric pain for 3 weeks.' });
    });

    it('seals the patient data of a referral as one value, which a list page opens once a referral', async () => {
      const id = await insertDraft(CLINIC_B, 'erh-cardio', at(150));
      expect(await repo.compareAndSet(id, 1, { patientName: 'Lim Bee Hoon' }, at(151))).toBe(true);
      const row = await store.db
        .selectFrom('referrals')
        .selectAll()
        .where('id', '=', id)
        .executeTakeFirstOrThrow();
      expect(row.personal_data).toMatch(/^rh1:/);
      for (const column of SEALED_COLUMNS.referrals.columns) expect(row[column], column).toBeNull();
      expect(await repo.getVisible(id, CLINIC_B)).toMatchObject({
        patient: { name: 'Lim Bee Hoon', uin: 'S9999999Z', dob: '1960-05-17' },
        clinicalInfo: 'Epigastric pain for 3 weeks.',
      });

      let opened = 0;
      const counting: DataKeys = {
        ...keys,
        reading: (db, read) =>
          keys.reading(db, (cipher) =>
            read({
              ...cipher,
              open: (value, place) => {
                opened += 1;
                return cipher.open(value, place);
              },
            }),
          ),
      };
      const { records } = await createReferralStore(store.db, counting).list({
        institution: CLINIC_B,
        coreStatuses: [],
        sort: 'updatedAt',
        offset: 0,
        pageSize: 1000,
      });
      expect(records.length).toBeGreaterThan(1);
      expect(opened).toBe(records.length);
    });

    it('compare-and-set succeeds once for a version and fails for a stale one', async () => {
      const id = await insertDraft(CLINIC_A);
      expect(await repo.compareAndSet(id, 1, { clinicalInfo: 'first' }, at(110))).toBe(true);
      expect(await repo.compareAndSet(id, 1, { clinicalInfo: 'stale' }, at(111))).toBe(false);
      expect(await repo.compareAndSet(id, 3, { clinicalInfo: 'future' }, at(111))).toBe(false);
      let record = await repo.getVisible(id, CLINIC_A);
      expect(record).toMatchObject({
        version: 2,
        clinicalInfo: 'first',
        updatedAt: at(110),
        status: 'draft',
      });
      expect(record.patient.name).toBe('Tan Ah Kow');

      expect(
        await repo.compareAndSet(
          id,
          2,
          { status: 'pending-acceptance', submittedAt: at(120), ehrDue: 3 },
          at(120),
        ),
      ).toBe(true);
      record = await repo.getVisible(id, HOSPITAL_P);
      expect(record).toMatchObject({
        version: 3,
        status: 'pending-acceptance',
        submittedAt: at(120),
        updatedAt: at(120),
      });
      expect(record.ehr).toMatchObject({ state: 'queued', dueVersion: 3, attempts: 0 });
      // Back to draft clears submittedAt; the provider loses sight of it again.
      expect(
        await repo.compareAndSet(id, 3, { status: 'draft', submittedAt: null, patientName: null }, at(130)),
      ).toBe(true);
      record = await repo.getVisible(id, CLINIC_A);
      expect(record).toMatchObject({ version: 4, status: 'draft', submittedAt: null });
      expect(record.patient.name).toBeNull();
      expect(await repo.findVisible(id, HOSPITAL_P)).toBeUndefined();
      expect(await repo.compareAndSet(uuidv7(), 1, { clinicalInfo: 'nobody' }, at(140))).toBe(false);
    });

    it('lets exactly one of many concurrent compare-and-sets on one version win', async () => {
      const id = await insertDraft(CLINIC_A);
      const attempts = Array.from({ length: 6 }, (_, i) =>
        store.db.transaction().execute(async (trx) => {
          const won = await createReferralStore(trx, keys).compareAndSet(
            id,
            1,
            { clinicalInfo: `writer ${i}` },
            at(200 + i),
          );
          return won ? i : undefined;
        }),
      );
      const winners = (await Promise.all(attempts)).filter((w) => w !== undefined);
      expect(winners).toHaveLength(1);
      const record = await repo.getVisible(id, CLINIC_A);
      expect(record.version).toBe(2);
      expect(record.clinicalInfo).toBe(`writer ${winners[0]}`);
    });

    it('makes a compare-and-set that races an open transaction wait for it, then lose', async () => {
      const id = await insertDraft(CLINIC_A);
      let racerSettled = false;
      // Another request's transaction, open while this one races it.
      const trx = await store.db.startTransaction().execute();
      expect(
        await createReferralStore(trx, keys).compareAndSet(id, 1, { clinicalInfo: 'holder' }, at(300)),
      ).toBe(true);
      // Same version, outside the transaction: on PostgreSQL a second connection that blocks on the
      // row lock, on PGlite a query that waits for the one connection.
      const racer = repo.compareAndSet(id, 1, { clinicalInfo: 'racer' }, at(301));
      void racer.finally(() => (racerSettled = true));
      await new Promise((resolve) => setTimeout(resolve, 150));
      expect(racerSettled).toBe(false);
      await trx.commit().execute();
      expect(await racer).toBe(false);
      const record = await repo.getVisible(id, CLINIC_A);
      expect(record).toMatchObject({ version: 2, clinicalInfo: 'holder' });
    });

    it('loses nothing when the winner of a race rolls back', async () => {
      const id = await insertDraft(CLINIC_A);
      const trx = await store.db.startTransaction().execute();
      expect(
        await createReferralStore(trx, keys).compareAndSet(id, 1, { clinicalInfo: 'rolled back' }, at(400)),
      ).toBe(true);
      const racer = repo.compareAndSet(id, 1, { clinicalInfo: 'second chance' }, at(401));
      await new Promise((resolve) => setTimeout(resolve, 100));
      await trx.rollback().execute();
      expect(await racer).toBe(true);
      expect(await repo.getVisible(id, CLINIC_A)).toMatchObject({
        version: 2,
        clinicalInfo: 'second chance',
      });
    });
  });
});
