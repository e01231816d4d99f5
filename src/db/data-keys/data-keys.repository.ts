// The data keys (wrapped) and the keys this process has opened: what every repository that reads or
// writes patient data seals and opens with (domain/data-keys.ts). Also the list of the columns that
// hold sealed values, which the sweep (services/data-keys.service.ts) walks to seal what is still in
// the clear or under an older key.
import { createSecretKey, type KeyObject } from 'node:crypto';
import { sql } from 'kysely';
import {
  fieldCipher,
  KeyRingError,
  sealedUnderPattern,
  type BlindIndexKind,
  newDataKeyId,
  newSecretKey,
  UnknownDataKeyError,
  type FieldCipher,
  type FieldPlace,
  type KeyEncryptionKeys,
} from '../../domain/data-keys.ts';
import type { Executor } from '../executor.ts';

/**
 * Every column that holds patient data, by table, with the columns that make a row's place (the
 * additional data each value is sealed with). attachment_contents is sealed too, in chunks of its own
 * format (domain/data-keys.ts), read and sealed again by db/attachments.repository.ts.
 */
export const SEALED_COLUMNS = {
  referrals: {
    key: ['id'],
    // Sealed together, as one JSON object: a read opens one value where it would open eleven, which is
    // most of what a page of a list spends on its patient data.
    together: 'personal_data',
    columns: [
      'patient_uin',
      'patient_name',
      'patient_dob',
      'patient_gender',
      'patient_nationality',
      'patient_phone_number',
      'patient_residential_status',
      'referrer_name',
      'referrer_email',
      'referrer_contact_number',
      'clinical_info',
    ],
    blindIndex: { column: 'patient_uin_index', of: 'patient_uin', kind: 'patient-uin' },
  },
  appointments: { key: ['referral_id', 'id'], columns: ['location'] },
  notes: { key: ['id'], columns: ['content'] },
  referral_outcomes: { key: ['referral_id'], columns: ['summary'] },
  // A file's name can name its patient.
  attachments: { key: ['id'], columns: ['file_name'] },
  // The form as sent to the EHR, and the files it listed (a copy of each one's name).
  ehr_forms: {
    key: ['message_id'],
    columns: ['html'],
    inLists: [{ column: 'attachments', field: 'fileName', itemKey: 'id' }],
  },
  // A keyed write's stored response holds the referral it answered with.
  idempotency_keys: { key: ['api_key_id', 'key'], columns: ['response_body'] },
  // The timeline's sentences quote what people typed (a cancel note, a reason, a location). The event
  // feed's copy of each sentence quotes nothing, so it is not sealed (domain/timeline.ts).
  timeline_events: { key: ['id'], columns: ['description'] },
} as const satisfies Record<string, SealedTableColumns>;

interface SealedTableColumns {
  readonly key: readonly string[];
  readonly columns: readonly string[];
  /**
   * The column that holds `columns` sealed together, as one JSON object; `columns` themselves are then
   * empty (null). Rows written before hold them in their own columns, one by one, sealed or in the
   * clear: they are read as they are, and a sweep moves them into this one.
   */
  readonly together?: string;
  /** The column that holds the blind index of one of `columns`, kept with it by every write. */
  readonly blindIndex?: { readonly column: string; readonly of: string; readonly kind: BlindIndexKind };
  /**
   * JSON columns that hold a list of objects, each with a text `field` sealed in place (the rest of
   * the object is no patient data). Each item's place is its row's and its own `itemKey`.
   */
  readonly inLists?: readonly SealedListField[];
}

interface SealedListField {
  readonly column: string;
  readonly field: string;
  readonly itemKey: string;
}

const tableColumns = (table: SealedTable): SealedTableColumns => SEALED_COLUMNS[table];

export type SealedTable = keyof typeof SEALED_COLUMNS;

/** The place of a row of `table` (its key columns' values, joined). */
function rowPlace(table: SealedTable, row: Readonly<Record<string, unknown>>): string {
  return SEALED_COLUMNS[table].key.map((column) => String(row[column])).join('/');
}

/** `list` (a JSON column's value) with each item's `field` passed through `change`, if it is a list. */
function inList(
  table: SealedTable,
  row: string,
  list: SealedListField,
  value: unknown,
  change: (text: string, place: FieldPlace) => string,
): unknown {
  if (!Array.isArray(value)) return value;
  return value.map((item: unknown) => {
    if (item === null || typeof item !== 'object') return item;
    const fields = item as Record<string, unknown>;
    const text = fields[list.field];
    if (typeof text !== 'string') return item;
    const place = {
      table,
      column: `${list.column}.${list.field}`,
      row: `${row}/${String(fields[list.itemKey])}`,
    };
    return { ...fields, [list.field]: change(text, place) };
  });
}

/** The names of the columns of `table` that hold sealed values (text, or lists with sealed fields). */
export function sealedColumnNames(table: SealedTable): string[] {
  const { columns, together, inLists = [] } = tableColumns(table);
  return [...columns, ...(together === undefined ? [] : [together]), ...inLists.map((list) => list.column)];
}

/**
 * `columns` (some of a row of `table`, its key columns named in `key`) with each patient-data column
 * that holds a text sealed; nulls and left-out columns stay as they are. Columns sealed together are
 * written together: those a write names are sealed with the rest of them from `current` (the row as
 * it was read, opened), and a write that names some of them without `current` is a mistake.
 */
export function sealColumns<T extends Record<string, unknown>>(
  table: SealedTable,
  key: Readonly<Record<string, unknown>>,
  columns: T,
  cipher: FieldCipher,
  current?: Readonly<Record<string, unknown>>,
): T {
  const row = rowPlace(table, key);
  const sealed: Record<string, unknown> = { ...columns };
  const { columns: names, together, blindIndex, inLists = [] } = tableColumns(table);
  if (together === undefined) {
    for (const column of names) {
      const value = sealed[column];
      if (typeof value === 'string') sealed[column] = cipher.seal(value, { table, column, row });
    }
  } else if (names.some((column) => sealed[column] !== undefined)) {
    const values = Object.fromEntries(
      names.map((column) => [column, sealed[column] === undefined ? current?.[column] : sealed[column]]),
    );
    const missing = names.filter((column) => values[column] === undefined);
    if (missing.length > 0) {
      throw new Error(
        `${table}.${together} is sealed from all of its columns: ${missing.join(', ')} missing`,
      );
    }
    sealed[together] = cipher.seal(JSON.stringify(values), { table, column: together, row });
    for (const column of names) sealed[column] = null;
  }
  for (const list of inLists) {
    sealed[list.column] = inList(table, row, list, sealed[list.column], (text, place) =>
      cipher.seal(text, place),
    );
  }
  if (blindIndex !== undefined && columns[blindIndex.of] !== undefined) {
    const value = columns[blindIndex.of];
    sealed[blindIndex.column] = typeof value === 'string' ? cipher.blindIndex(blindIndex.kind, value) : null;
  }
  return sealed as T;
}

/** A row of `table` as read, with each sealed column opened (and those sealed together in their own). */
export function openColumns<T extends Record<string, unknown>>(
  table: SealedTable,
  stored: T,
  cipher: FieldCipher,
): T {
  const row = rowPlace(table, stored);
  const opened: Record<string, unknown> = { ...stored };
  const { columns, together, inLists = [] } = tableColumns(table);
  const sealedTogether = together === undefined ? undefined : stored[together];
  if (together !== undefined && typeof sealedTogether === 'string') {
    const values = JSON.parse(cipher.open(sealedTogether, { table, column: together, row })) as Record<
      string,
      unknown
    >;
    for (const column of columns) opened[column] = values[column] ?? null;
    // Opened, a row holds its values in their own columns, as one written before does.
    opened[together] = null;
  } else {
    for (const column of columns) {
      const value = opened[column];
      if (typeof value === 'string') opened[column] = cipher.open(value, { table, column, row });
    }
  }
  for (const list of inLists) {
    opened[list.column] = inList(table, row, list, opened[list.column], (text, place) =>
      cipher.open(text, place),
    );
  }
  return opened as T;
}

/** How often a process looks for a data key another process made (`refhub data-keys rotate`). */
export const DATA_KEY_REFRESH_MS = 30_000;

/**
 * The keys a process seals and opens with, loaded from the database and opened by the key ring.
 *
 * Each call names the executor it serves: the store, or inside a transaction the transaction itself.
 * When the keys must be looked up (the first use, a lapsed refresh interval, a value under a key this
 * process has not opened), they are read through that executor, never through another connection:
 * a transaction that waited for a statement on another connection would, on embedded PGlite's one
 * connection, wait for itself, for good (the store refuses such a statement: db/database.ts).
 */
export interface DataKeys {
  /** The cipher with the newest data key, the keys looked up again when older than the refresh interval. */
  cipher(db: Executor): Promise<FieldCipher>;
  /**
   * Runs `read` (which opens values) with the cipher; when a value names a data key this process has
   * not opened yet (another process made it), loads the keys again and runs `read` once more.
   */
  reading<T>(db: Executor, read: (cipher: FieldCipher) => T): Promise<T>;
  /** Loads the keys now (after this process made one). */
  reload(db: Executor): Promise<FieldCipher>;
  /** The key ring the data keys are wrapped by. */
  readonly ring: KeyEncryptionKeys;
  /** How long a process may keep sealing with a key after a newer one was made. */
  readonly refreshMs: number;
}

export interface DataKeysOptions {
  readonly refreshMs?: number;
  readonly now?: () => number;
  /** Told each time the keys were looked up in the database. */
  readonly onLoad?: () => void;
}

/** The data keys of a store, opened with `ring`. Makes the first keys on first use. */
export function openDataKeys(ring: KeyEncryptionKeys, options: DataKeysOptions = {}): DataKeys {
  const refreshMs = options.refreshMs ?? DATA_KEY_REFRESH_MS;
  const now = options.now ?? Date.now;
  const opened = new Map<string, KeyObject>();
  let current: { cipher: FieldCipher; keys: number; loadedAt: number } | undefined;
  // One load at a time per executor; never one shared across them, or a transaction could wait for a
  // load that waits for the connection the transaction holds.
  const loading = new WeakMap<Executor, Promise<FieldCipher>>();

  const load = async (db: Executor): Promise<FieldCipher> => {
    let rows = await dataKeyRepository(db).all();
    if (!rows.some((r) => r.purpose === 'fields') || !rows.some((r) => r.purpose === 'blind-index')) {
      await dataKeyRepository(db).makeFirstKeys(ring);
      rows = await dataKeyRepository(db).all();
    }
    for (const row of rows) {
      if (opened.has(row.id)) continue;
      if (!ring.has(row.kek_id)) {
        throw new KeyRingError(
          ring.source,
          `does not hold key-encryption key ${row.kek_id}, which wraps data key ${row.id}: add it ` +
            'back to the key ring (after the first key)',
        );
      }
      let key: Buffer;
      try {
        key = await ring.unwrap(row.kek_id, row.id, row.wrapped);
      } catch {
        throw new KeyRingError(
          ring.source,
          `key-encryption key ${row.kek_id} does not open data key ${row.id}: it is not the key that wrapped it`,
        );
      }
      opened.set(row.id, createSecretKey(key));
    }
    const fields = rows.filter((r) => r.purpose === 'fields');
    const active = fields[fields.length - 1];
    const blind = rows.find((r) => r.purpose === 'blind-index');
    if (active === undefined || blind === undefined)
      throw new Error('data keys missing after they were made');
    const cipher = fieldCipher(opened, active.id, opened.get(blind.id) as KeyObject);
    options.onLoad?.();
    // Keys are only ever added: a load that read fewer than the one before it finished is older.
    if (current === undefined || rows.length >= current.keys) {
      current = { cipher, keys: rows.length, loadedAt: now() };
    }
    return current.cipher;
  };
  const reload = (db: Executor): Promise<FieldCipher> => {
    let pending = loading.get(db);
    if (pending === undefined) {
      pending = load(db).finally(() => {
        loading.delete(db);
      });
      loading.set(db, pending);
    }
    return pending;
  };
  const cipher = async (db: Executor): Promise<FieldCipher> => {
    if (current === undefined || now() - current.loadedAt >= refreshMs) return reload(db);
    return current.cipher;
  };

  return {
    ring,
    refreshMs,
    reload,
    cipher,
    async reading(db, read) {
      const opening = await cipher(db);
      try {
        return read(opening);
      } catch (error) {
        if (!(error instanceof UnknownDataKeyError)) throw error;
        return read(await reload(db));
      }
    },
  };
}

export interface DataKeyRow {
  readonly id: string;
  readonly purpose: 'fields' | 'blind-index';
  readonly kek_id: string;
  readonly wrapped: string;
  readonly created_at: Date;
  readonly swept_at: Date | null;
}

/** Serialises the making of keys across processes (an arbitrary constant, refhub's own). */
const MAKE_KEYS_LOCK = 7_346_021;

export function dataKeyRepository(db: Executor) {
  return {
    /** Every data key, oldest first (the newest fields key is the active one). */
    async all(): Promise<DataKeyRow[]> {
      return db
        .selectFrom('data_keys')
        .select(['id', 'purpose', 'kek_id', 'wrapped', 'created_at', 'swept_at'])
        .orderBy('created_at')
        .orderBy('id')
        .execute();
    },

    /**
     * Makes the fields key and the blind-index key where there are none (once, across processes), in
     * a transaction of its own, or in `db`'s when it is one.
     */
    async makeFirstKeys(ring: KeyEncryptionKeys): Promise<void> {
      const make = async (trx: Executor) => {
        await sql`select pg_advisory_xact_lock(${MAKE_KEYS_LOCK})`.execute(trx);
        const purposes = new Set(
          (await trx.selectFrom('data_keys').select('purpose').execute()).map((r) => r.purpose),
        );
        for (const purpose of ['fields', 'blind-index'] as const) {
          if (!purposes.has(purpose)) await insertKey(trx, ring, purpose);
        }
      };
      await (db.isTransaction ? make(db) : db.transaction().execute(make));
    },

    /** Makes a new fields key, which becomes the active one; returns its ID. */
    async makeFieldsKey(ring: KeyEncryptionKeys): Promise<string> {
      return db.transaction().execute(async (trx) => {
        await sql`select pg_advisory_xact_lock(${MAKE_KEYS_LOCK})`.execute(trx);
        return insertKey(trx, ring, 'fields');
      });
    },

    /** Wraps again, with the ring's active key-encryption key, every data key wrapped by another. */
    async rewrap(ring: KeyEncryptionKeys): Promise<number> {
      let count = 0;
      for (const row of await this.all()) {
        if (row.kek_id === ring.activeId) continue;
        const key = await ring.unwrap(row.kek_id, row.id, row.wrapped);
        const result = await db
          .updateTable('data_keys')
          .set({ kek_id: ring.activeId, wrapped: await ring.wrap(row.id, key) })
          .where('id', '=', row.id)
          .where('kek_id', '=', row.kek_id)
          .executeTakeFirst();
        count += Number(result.numUpdatedRows);
      }
      return count;
    },

    /**
     * Up to `limit` rows of `table` after the key `after` (in key order) that hold a value not sealed
     * under `keyId`, or a value whose blind index is missing: what a sweep seals again.
     */
    async staleRows(
      table: SealedTable,
      keyId: string,
      after: readonly unknown[] | undefined,
      limit: number,
    ): Promise<Record<string, unknown>[]> {
      const { key, blindIndex } = tableColumns(table);
      const selected = [...key, ...sealedColumnNames(table), ...(blindIndex ? [blindIndex.column] : [])];
      const result = await sql<Record<string, unknown>>`
        select ${sql.join(selected.map((c) => sql.ref(c)))}
        from ${sql.table(table)}
        where (${staleCondition(table, keyId)})
          ${after === undefined ? sql`` : sql`and (${sql.join(key.map((c) => sql.ref(c)))}) > (${sql.join(after.map((v) => sql`${v}`))})`}
        order by ${sql.join(key.map((c) => sql.ref(c)))}
        limit ${limit}`.execute(db);
      return result.rows;
    },

    /** How many rows of `table` a sweep to `keyId` has left. */
    async staleCount(table: SealedTable, keyId: string): Promise<number> {
      const result = await sql<{ n: string | number }>`
        select count(*) as n from ${sql.table(table)} where ${staleCondition(table, keyId)}`.execute(db);
      return Number(result.rows[0]?.n ?? 0);
    },

    /**
     * Writes `resealed` (the columns of `stored` sealed again) where the row still holds what was read:
     * a write in between wins, and the sweep finds its row again only if it is still stale.
     */
    async reseal(
      table: SealedTable,
      stored: Record<string, unknown>,
      resealed: Record<string, unknown>,
    ): Promise<boolean> {
      const { key, columns, together, blindIndex, inLists = [] } = tableColumns(table);
      const watched = [
        ...columns,
        ...(together === undefined ? [] : [together]),
        ...(blindIndex ? [blindIndex.column] : []),
      ];
      // A JSON column is written, and compared, as JSON (a list would go as a PostgreSQL array).
      const asJson = (value: unknown) => sql`${JSON.stringify(value)}::jsonb`;
      const lists = inLists.map((list) => list.column);
      const values = Object.fromEntries(
        Object.entries(resealed).map(([c, v]) => [c, lists.includes(c) && v !== null ? asJson(v) : v]),
      );
      const result = await db
        .updateTable(table as never)
        .set(values as never)
        .where((eb) =>
          eb.and([
            ...key.map((c) => eb(sql.ref(c), '=', stored[c])),
            ...watched.map((c) => eb(sql.ref(c), 'is not distinct from', stored[c])),
            ...lists.map((c) =>
              stored[c] === null ? eb(sql.ref(c), 'is', null) : eb(sql.ref(c), '=', asJson(stored[c])),
            ),
          ]),
        )
        .executeTakeFirst();
      return result.numUpdatedRows === 1n;
    },

    /** Records that no sealed value is under a key older than `keyId` any more. */
    async markSwept(keyId: string, at: Date): Promise<void> {
      await db.updateTable('data_keys').set({ swept_at: at }).where('id', '=', keyId).execute();
    },
  };
}

/**
 * A row of `table` holds a value not sealed under `keyId`, or lacks its blind index, or holds a value
 * in a column of its own that is sealed together with others.
 */
function staleCondition(table: SealedTable, keyId: string) {
  const { columns, together, blindIndex, inLists = [] } = tableColumns(table);
  const pattern = sealedUnderPattern(keyId);
  const notUnder = (c: string) => sql`(${sql.ref(c)} is not null and ${sql.ref(c)} not like ${pattern})`;
  return sql.join(
    [
      ...(together === undefined
        ? columns.map(notUnder)
        : [notUnder(together), ...columns.map((c) => sql`${sql.ref(c)} is not null`)]),
      ...inLists.map(
        (list) => sql`exists (select 1 from jsonb_array_elements(${sql.ref(list.column)}) as item(value)
          where item.value ->> ${list.field}::text not like ${pattern})`,
      ),
      ...(blindIndex === undefined
        ? []
        : [sql`(${sql.ref(blindIndex.of)} is not null and ${sql.ref(blindIndex.column)} is null)`]),
    ],
    sql` or `,
  );
}

async function insertKey(db: Executor, ring: KeyEncryptionKeys, purpose: 'fields' | 'blind-index') {
  const id = newDataKeyId();
  await db
    .insertInto('data_keys')
    .values({
      id,
      purpose,
      kek_id: ring.activeId,
      wrapped: await ring.wrap(id, newSecretKey()),
      // The database's clock, so that keys made by processes on different machines still sort in
      // the order they were made.
      created_at: sql<Date>`clock_timestamp()`,
      swept_at: null,
    })
    .execute();
  return id;
}
