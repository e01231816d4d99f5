// Loads the catalog (contract §1): systems, institutions, offerings, the providers' outcome codes and
// the reason codes of the lifecycle's operations from a JSON document. The
// document is checked whole before anything is written, and loading is one transaction and an
// upsert by ID, so loading the same file twice changes nothing and a bad file changes nothing.
import fs from 'node:fs/promises';
import { Type, type Static } from 'typebox';
import { Value } from 'typebox/value';
import { REFHUB_SYSTEM } from '../../domain/lifecycle.ts';
import { OUTCOME_CODE_PATTERN } from '../../domain/outcome.ts';
import { FHIR_PRIORITIES, PRIORITY_CODE_PATTERN } from '../../domain/priorities.ts';
import { REASON_ACTIONS, REASON_CODE_PATTERN } from '../../domain/reasons.ts';
import { INSTITUTION_ID_TYPES, OFFERING_CATEGORIES } from '../../domain/statuses.ts';
import { MAX_TRIAGE_WORKING_DAYS } from '../../domain/worklists.ts';
import { parseCalendarDate } from '../../domain/display-time.ts';
import { ValidationError } from '../../errors.ts';
import type { CatalogRepository } from '../../db/catalog.repository.ts';
import type { Stores } from '../../db/stores.ts';

const Text = (maxLength: number) => Type.String({ minLength: 1, maxLength });
const Id = Type.String({ pattern: '^[A-Za-z0-9._-]{1,64}$' });
const InstitutionRef = Type.Object(
  { idType: Type.Enum([...INSTITUTION_ID_TYPES]), id: Id },
  { additionalProperties: false },
);

export const CatalogDocument = Type.Object(
  {
    systems: Type.Array(Type.String({ pattern: '^[A-Za-z][A-Za-z0-9 ._-]{0,63}$' }), { maxItems: 1000 }),
    institutions: Type.Array(
      Type.Object(
        { idType: Type.Enum([...INSTITUTION_ID_TYPES]), id: Id, name: Text(200) },
        { additionalProperties: false },
      ),
      { maxItems: 100_000 },
    ),
    offerings: Type.Array(
      Type.Object(
        {
          id: Id,
          name: Text(200),
          category: Type.Enum([...OFFERING_CATEGORIES]),
          description: Text(4000),
          specialty: Text(200),
          ehrCode: Text(64),
          institution: InstitutionRef,
          system: Text(64),
          cancellable: Type.Optional(Type.Boolean()),
          active: Type.Optional(Type.Boolean()),
          priorities: Type.Optional(
            Type.Array(Type.String({ pattern: PRIORITY_CODE_PATTERN }), {
              minItems: 1,
              maxItems: 50,
              uniqueItems: true,
            }),
          ),
          triageWithin: Type.Optional(
            Type.Record(
              Type.String({ pattern: PRIORITY_CODE_PATTERN }),
              Type.Integer({ minimum: 1, maximum: MAX_TRIAGE_WORKING_DAYS }),
              { minProperties: 1, maxProperties: 50 },
            ),
          ),
        },
        { additionalProperties: false },
      ),
      { maxItems: 100_000 },
    ),
    outcomes: Type.Optional(
      Type.Array(
        Type.Object(
          {
            code: Type.String({ pattern: OUTCOME_CODE_PATTERN }),
            display: Text(200),
            summaryRequired: Type.Optional(Type.Boolean()),
            active: Type.Optional(Type.Boolean()),
          },
          { additionalProperties: false },
        ),
        { maxItems: 200 },
      ),
    ),
    priorities: Type.Optional(
      Type.Array(
        Type.Object(
          {
            code: Type.String({ pattern: PRIORITY_CODE_PATTERN }),
            display: Text(200),
            fhirPriority: Type.Enum([...FHIR_PRIORITIES]),
            active: Type.Optional(Type.Boolean()),
          },
          { additionalProperties: false },
        ),
        { maxItems: 50 },
      ),
    ),
    holidays: Type.Optional(
      Type.Array(
        Type.Object(
          {
            date: Type.String({ pattern: '^[0-9]{4}-[0-9]{2}-[0-9]{2}$' }),
            name: Text(200),
            active: Type.Optional(Type.Boolean()),
          },
          { additionalProperties: false },
        ),
        { maxItems: 10_000 },
      ),
    ),
    reasons: Type.Optional(
      Type.Array(
        Type.Object(
          {
            code: Type.String({ pattern: REASON_CODE_PATTERN }),
            display: Text(200),
            actions: Type.Array(Type.Enum([...REASON_ACTIONS]), { minItems: 1, uniqueItems: true }),
            commentRequired: Type.Optional(Type.Boolean()),
            active: Type.Optional(Type.Boolean()),
          },
          { additionalProperties: false },
        ),
        { maxItems: 500 },
      ),
    ),
  },
  { additionalProperties: false },
);
export type CatalogDocument = Static<typeof CatalogDocument>;

export interface CatalogSummary {
  readonly systems: number;
  readonly institutions: number;
  readonly offerings: number;
  readonly outcomes: number;
  readonly priorities: number;
  readonly reasons: number;
  readonly holidays: number;
}

/** What the database already holds, so a file may refer to systems and institutions loaded before. */
export interface KnownCatalog {
  readonly systems: readonly string[];
  readonly institutions: ReadonlySet<string>;
  /** The priority codes already loaded, which offerings may name without this file listing them. */
  readonly priorities?: ReadonlySet<string>;
}

/** Checks the document's shape and references; throws ValidationError naming every problem. */
export function parseCatalog(
  document: unknown,
  known: KnownCatalog = { systems: [], institutions: new Set() },
): CatalogDocument {
  if (!Value.Check(CatalogDocument, document)) {
    throw new ValidationError(
      Value.Errors(CatalogDocument, document)
        // Each unknown property is reported twice; keep the entry that names it.
        .filter((e) => e.keyword !== 'additionalProperties')
        .slice(0, 20)
        .map((e) => ({
          path: e.instancePath || '/',
          message: e.keyword === 'boolean' ? 'is not a known field' : e.message,
        })),
    );
  }
  const problems: { path: string; message: string }[] = [];
  const systems = new Set(['Manual', ...known.systems, ...document.systems]);
  // refhub's own steps name it on the timeline; a catalog system of that name would let a client
  // system's key, or an offering, pass for refhub.
  document.systems.forEach((name, index) => {
    if (name === REFHUB_SYSTEM)
      problems.push({
        path: `/systems/${index}`,
        message: `${name} is refhub's own system, not a catalog's`,
      });
  });
  const institutions = new Set<string>();
  // A repeated row would make the upsert touch one row twice, which PostgreSQL refuses.
  document.institutions.forEach((i, index) => {
    const key = `${i.idType}:${i.id}`;
    if (institutions.has(key))
      problems.push({ path: `/institutions/${index}/id`, message: `repeats institution ${key}` });
    institutions.add(key);
  });
  const seen = new Set<string>();
  document.offerings.forEach((o, index) => {
    if (seen.has(o.id))
      problems.push({ path: `/offerings/${index}/id`, message: `repeats offering ${o.id}` });
    seen.add(o.id);
    if (!systems.has(o.system)) {
      problems.push({
        path: `/offerings/${index}/system`,
        message: `names system ${o.system}, which is neither in this file nor loaded`,
      });
    }
    const provider = `${o.institution.idType}:${o.institution.id}`;
    if (!institutions.has(provider) && !known.institutions.has(provider)) {
      problems.push({
        path: `/offerings/${index}/institution`,
        message: `names institution ${o.institution.idType}:${o.institution.id}, which is neither in this file nor loaded`,
      });
    }
  });
  const codes = new Set<string>();
  (document.outcomes ?? []).forEach((o, index) => {
    if (codes.has(o.code))
      problems.push({ path: `/outcomes/${index}/code`, message: `repeats outcome ${o.code}` });
    codes.add(o.code);
  });
  const priorities = new Set<string>();
  (document.priorities ?? []).forEach((p, index) => {
    if (priorities.has(p.code))
      problems.push({ path: `/priorities/${index}/code`, message: `repeats priority ${p.code}` });
    priorities.add(p.code);
  });
  const isPriority = (code: string) => priorities.has(code) || (known.priorities?.has(code) ?? false);
  document.offerings.forEach((o, index) => {
    (o.priorities ?? []).forEach((code, at) => {
      if (!isPriority(code))
        problems.push({
          path: `/offerings/${index}/priorities/${at}`,
          message: `names priority ${code}, which is neither in this file nor loaded`,
        });
    });
    Object.keys(o.triageWithin ?? {}).forEach((code) => {
      if (!isPriority(code))
        problems.push({
          path: `/offerings/${index}/triageWithin/${code}`,
          message: `names priority ${code}, which is neither in this file nor loaded`,
        });
      else if (o.priorities !== undefined && !o.priorities.includes(code))
        problems.push({
          path: `/offerings/${index}/triageWithin/${code}`,
          message: `names priority ${code}, which the offering does not take`,
        });
    });
  });
  const days = new Set<string>();
  (document.holidays ?? []).forEach((h, index) => {
    if (parseCalendarDate(h.date) === undefined)
      problems.push({ path: `/holidays/${index}/date`, message: `${h.date} is not a date of the calendar` });
    if (days.has(h.date))
      problems.push({ path: `/holidays/${index}/date`, message: `repeats holiday ${h.date}` });
    days.add(h.date);
  });
  const reasons = new Set<string>();
  (document.reasons ?? []).forEach((r, index) => {
    if (reasons.has(r.code))
      problems.push({ path: `/reasons/${index}/code`, message: `repeats reason ${r.code}` });
    reasons.add(r.code);
  });
  if (problems.length > 0) throw new ValidationError(problems);
  return document;
}

/** The institutions that the document's offerings name and the database already holds. */
async function knownInstitutions(repo: CatalogRepository, document: unknown): Promise<Set<string>> {
  const known = new Set<string>();
  if (!Value.Check(CatalogDocument, document)) return known;
  const named = new Map(
    document.offerings.map((o) => [`${o.institution.idType}:${o.institution.id}`, o.institution]),
  );
  for (const [key, ref] of named) {
    if (await repo.findInstitution(ref)) known.add(key);
  }
  return known;
}

/** Loads a catalog document through `repo`, the catalog store of the caller's transaction. */
export async function loadCatalogIn(repo: CatalogRepository, document: unknown): Promise<CatalogSummary> {
  const catalog = parseCatalog(document, {
    systems: await repo.listSystems(),
    institutions: await knownInstitutions(repo, document),
    priorities: new Set((await repo.listPriorityCodes()).map((p) => p.code)),
  });
  await repo.upsertSystems(catalog.systems);
  await repo.upsertInstitutions(catalog.institutions);
  // Priorities first: the offerings name them.
  const priorityCodes = catalog.priorities ?? [];
  await repo.upsertPriorityCodes(priorityCodes.map((p) => ({ ...p, active: p.active ?? true })));
  await repo.upsertOfferings(
    catalog.offerings.map((o) => ({
      ...o,
      cancellable: o.cancellable ?? true,
      active: o.active ?? true,
      priorities: o.priorities ?? null,
      triageWithin: o.triageWithin ?? null,
    })),
  );
  const holidays = catalog.holidays ?? [];
  await repo.upsertHolidays(holidays.map((h) => ({ ...h, active: h.active ?? true })));
  const outcomes = catalog.outcomes ?? [];
  await repo.upsertOutcomeCodes(
    outcomes.map((o) => ({ ...o, summaryRequired: o.summaryRequired ?? true, active: o.active ?? true })),
  );
  const reasons = catalog.reasons ?? [];
  await repo.upsertReasonCodes(
    reasons.map((r) => ({ ...r, commentRequired: r.commentRequired ?? false, active: r.active ?? true })),
  );
  return {
    systems: catalog.systems.length,
    institutions: catalog.institutions.length,
    offerings: catalog.offerings.length,
    outcomes: outcomes.length,
    priorities: priorityCodes.length,
    reasons: reasons.length,
    holidays: holidays.length,
  };
}

/** Reads a catalog file as JSON; a missing or malformed file is a ValidationError naming it. */
export async function readCatalogFile(file: string): Promise<unknown> {
  try {
    return JSON.parse(await fs.readFile(file, 'utf8'));
  } catch (error) {
    // An AppError, so that `refhub catalog load` and a start with CATALOG_FILE report it plainly.
    const problem = (error as Error).message;
    throw new ValidationError(
      [{ path: file, message: `cannot be read: ${problem}` }],
      `Cannot read catalog ${file}: ${problem}`,
    );
  }
}

export function createCatalogService(deps: { stores: Pick<Stores, 'catalog' | 'transaction'> }) {
  return {
    load(document: unknown): Promise<CatalogSummary> {
      return deps.stores.transaction((tx) => loadCatalogIn(tx.catalog, document));
    },

    async loadFile(file: string): Promise<CatalogSummary> {
      return this.load(await readCatalogFile(file));
    },

    isEmpty: () => deps.stores.catalog.isEmpty(),

    /** Every offering, active or not, with its provider: what the web form lets a sender choose from. */
    listOfferings: () => deps.stores.catalog.listOfferings(),

    /** Every outcome code, in use or withdrawn, in the catalog file's order. */
    listOutcomeCodes: () => deps.stores.catalog.listOutcomeCodes(),

    /** One offering with its provider, active or not. */
    findOffering: (id: string) => deps.stores.catalog.findOffering(id),

    /** Every priority code, in use or withdrawn, in the catalog file's order. */
    listPriorityCodes: () => deps.stores.catalog.listPriorityCodes(),

    /** Every reason code, in use or withdrawn, in the catalog file's order. */
    listReasonCodes: () => deps.stores.catalog.listReasonCodes(),

    /** Every public holiday, in use or withdrawn, by date. */
    listHolidays: () => deps.stores.catalog.listHolidays(),
  };
}

export type CatalogService = ReturnType<typeof createCatalogService>;
