// The growing tables partitioned by month, so that retention archives and drops a month whole
// (services/retention/) instead of deleting its rows one by one: the audit trail (`audit_events`, by
// `occurred_at`), the event feed (`referral_events`, by `occurred_at`), webhook attempts
// (`webhook_attempts`, by `attempted_at`) and the forwarding ledger (`ehr_submissions`, by
// `attempted_at`). Declarative range partitioning, the same on PostgreSQL and PGlite.
//
// Each table is rebuilt: the old one is renamed, a partitioned one made like it (columns in the same
// order, defaults, identity, NOT NULL and CHECK constraints), a partition made for every month that
// holds rows and for this month and the next three, and one DEFAULT partition so that no insert
// ever fails for want of a month; the rows are copied with their identity values, the identity
// continues after the highest, the old table is dropped, and the keys, foreign keys, indexes and the
// feed's notification trigger are made again on the new one. The copy takes time in proportion to
// the rows (docs/operations.md, "Retention").
//
// A partitioned table's primary key and unique constraints must hold its partition key, so:
// - `audit_events`: primary key (seq, occurred_at), unique (id, occurred_at);
// - `referral_events`: primary key (position, occurred_at), unique (id, occurred_at);
// - `webhook_attempts`, `ehr_submissions`: primary key (id, attempted_at).
// Nothing references these rows by a foreign key, and no statement relies on `id` alone being unique
// (an `ON CONFLICT`); each ID is a random UUID made by the writer, and the identity columns still come
// from one sequence per table, so they stay unique in practice.
//
// `retention_archives` records each month archived and dropped: where its archive is and the SHA-256
// of its manifest. `refhub audit verify` leaves the chains of a dropped month of the audit trail to
// `refhub retention verify` of its archive.
import { sql, type Kysely } from 'kysely';

interface Partitioned {
  readonly table: string;
  readonly column: string;
  /** What is made again on the new table once the old one is gone. */
  readonly after: string;
}

const TABLES: readonly Partitioned[] = [
  {
    table: 'audit_events',
    column: 'occurred_at',
    after: `
      ALTER TABLE audit_events ADD CONSTRAINT audit_events_pkey PRIMARY KEY (seq, occurred_at);
      ALTER TABLE audit_events ADD CONSTRAINT audit_events_id_key UNIQUE (id, occurred_at);
      CREATE INDEX audit_events_occurred ON audit_events (occurred_at);
      CREATE INDEX audit_events_referral ON audit_events USING gin (referral_ids);
      CREATE INDEX audit_events_unsealed ON audit_events (seq) WHERE sealed_at IS NULL;
      CREATE INDEX audit_events_chain ON audit_events (chain, chain_index) WHERE chain IS NOT NULL;`,
  },
  {
    table: 'referral_events',
    column: 'occurred_at',
    after: `
      ALTER TABLE referral_events ADD CONSTRAINT referral_events_pkey PRIMARY KEY (position, occurred_at);
      ALTER TABLE referral_events ADD CONSTRAINT referral_events_id_key UNIQUE (id, occurred_at);
      ALTER TABLE referral_events ADD CONSTRAINT referral_events_referral_id_fkey
        FOREIGN KEY (referral_id) REFERENCES referrals (id);
      CREATE INDEX referral_events_order ON referral_events (xid, position);
      CREATE INDEX referral_events_sender ON referral_events (sender_id_type, sender_id, xid, position);
      CREATE INDEX referral_events_provider ON referral_events (provider_id_type, provider_id, xid, position)
        WHERE provider_id IS NOT NULL;
      CREATE TRIGGER referral_events_notify AFTER INSERT ON referral_events
        FOR EACH STATEMENT EXECUTE FUNCTION refhub_notify_events();`,
  },
  {
    table: 'webhook_attempts',
    column: 'attempted_at',
    after: `
      ALTER TABLE webhook_attempts ADD CONSTRAINT webhook_attempts_pkey PRIMARY KEY (id, attempted_at);
      ALTER TABLE webhook_attempts ADD CONSTRAINT webhook_attempts_subscription_id_fkey
        FOREIGN KEY (subscription_id) REFERENCES webhook_subscriptions (id) ON DELETE CASCADE;
      CREATE INDEX webhook_attempts_subscription ON webhook_attempts (subscription_id, attempted_at DESC, id DESC);
      CREATE INDEX webhook_attempts_attempted ON webhook_attempts (attempted_at);`,
  },
  {
    table: 'ehr_submissions',
    column: 'attempted_at',
    after: `
      ALTER TABLE ehr_submissions ADD CONSTRAINT ehr_submissions_pkey PRIMARY KEY (id, attempted_at);
      ALTER TABLE ehr_submissions ADD CONSTRAINT ehr_submissions_referral_id_fkey
        FOREIGN KEY (referral_id) REFERENCES referrals (id);
      CREATE INDEX ehr_submissions_referral ON ehr_submissions (referral_id, attempted_at, id);
      CREATE INDEX ehr_submissions_failed ON ehr_submissions (attempted_at) WHERE outcome = 'failed';`,
  },
];

/** The identity column of each table that has one. */
const IDENTITY: Readonly<Record<string, string>> = { audit_events: 'seq', referral_events: 'position' };

/** Months made ahead of the current one at migration; the maintenance step keeps them ahead after. */
const MONTHS_AHEAD = 3;

/** `2026-11` for the month starting at `start` (UTC). */
function monthName(start: Date): string {
  return start.toISOString().slice(0, 7);
}

function addMonths(start: Date, months: number): Date {
  return new Date(Date.UTC(start.getUTCFullYear(), start.getUTCMonth() + months, 1));
}

async function partition(db: Kysely<unknown>, { table, column, after }: Partitioned): Promise<void> {
  const old = `${table}_unpartitioned`;
  await sql.raw(`ALTER TABLE ${table} RENAME TO ${old}`).execute(db);
  await sql
    .raw(
      `CREATE TABLE ${table} (LIKE ${old} INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING IDENTITY)
         PARTITION BY RANGE (${column})`,
    )
    .execute(db);
  const { rows } = await sql<{ month: Date }>`
    select distinct date_trunc('month', ${sql.ref(column)}, 'UTC') as month from ${sql.table(old)}
    union select date_trunc('month', now(), 'UTC')`.execute(db);
  const current = rows.map((r) => r.month).reduce((a, b) => (a > b ? a : b));
  const months = new Map(rows.map((r) => [monthName(r.month), r.month]));
  for (let ahead = 1; ahead <= MONTHS_AHEAD; ahead++) {
    const start = addMonths(current, ahead);
    months.set(monthName(start), start);
  }
  for (const [name, start] of [...months].sort(([a], [b]) => (a < b ? -1 : 1))) {
    const from = start.toISOString();
    const to = addMonths(start, 1).toISOString();
    await sql
      .raw(
        `CREATE TABLE ${table}_p${name.replace('-', '_')} PARTITION OF ${table}
           FOR VALUES FROM ('${from}') TO ('${to}')`,
      )
      .execute(db);
  }
  await sql.raw(`CREATE TABLE ${table}_default PARTITION OF ${table} DEFAULT`).execute(db);
  const identity = IDENTITY[table];
  await sql
    .raw(
      `INSERT INTO ${table} ${identity === undefined ? '' : 'OVERRIDING SYSTEM VALUE'} SELECT * FROM ${old}`,
    )
    .execute(db);
  if (identity !== undefined)
    await sql
      .raw(
        `SELECT setval(pg_get_serial_sequence('${table}', '${identity}'),
                       coalesce((SELECT max(${identity}) FROM ${table}), 0) + 1, false)`,
      )
      .execute(db);
  await sql.raw(`DROP TABLE ${old}`).execute(db);
  await sql.raw(after).execute(db);
}

export async function up(db: Kysely<unknown>): Promise<void> {
  for (const table of TABLES) await partition(db, table);
  await sql`
    CREATE TABLE retention_archives (
      table_name       text NOT NULL,
      month            text NOT NULL CHECK (month ~ '^[0-9]{4}-[0-9]{2}$'),
      archive          text NOT NULL,
      manifest_sha256  text NOT NULL CHECK (manifest_sha256 ~ '^[0-9a-f]{64}$'),
      rows             bigint NOT NULL,
      dropped_at       timestamptz NOT NULL,
      PRIMARY KEY (table_name, month)
    );
  `.execute(db);
}

/** Back to plain tables, the rows of the months still held copied back; archived months stay archived. */
export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP TABLE retention_archives`.execute(db);
  for (const { table } of TABLES) {
    const old = `${table}_partitioned`;
    await sql.raw(`ALTER TABLE ${table} RENAME TO ${old}`).execute(db);
    await sql
      .raw(`CREATE TABLE ${table} (LIKE ${old} INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING IDENTITY)`)
      .execute(db);
    const identity = IDENTITY[table];
    await sql
      .raw(
        `INSERT INTO ${table} ${identity === undefined ? '' : 'OVERRIDING SYSTEM VALUE'} SELECT * FROM ${old}`,
      )
      .execute(db);
    if (identity !== undefined)
      await sql
        .raw(
          `SELECT setval(pg_get_serial_sequence('${table}', '${identity}'),
                         coalesce((SELECT max(${identity}) FROM ${table}), 0) + 1, false)`,
        )
        .execute(db);
    await sql.raw(`DROP TABLE ${old} CASCADE`).execute(db);
  }
  await sql`
    ALTER TABLE audit_events ADD PRIMARY KEY (seq), ADD UNIQUE (id);
    CREATE INDEX audit_events_occurred ON audit_events (occurred_at);
    CREATE INDEX audit_events_referral ON audit_events USING gin (referral_ids);
    CREATE INDEX audit_events_unsealed ON audit_events (seq) WHERE sealed_at IS NULL;
    CREATE INDEX audit_events_chain ON audit_events (chain, chain_index) WHERE chain IS NOT NULL;
    ALTER TABLE referral_events ADD PRIMARY KEY (position), ADD UNIQUE (id),
      ADD FOREIGN KEY (referral_id) REFERENCES referrals (id);
    CREATE INDEX referral_events_order ON referral_events (xid, position);
    CREATE INDEX referral_events_sender ON referral_events (sender_id_type, sender_id, xid, position);
    CREATE INDEX referral_events_provider ON referral_events (provider_id_type, provider_id, xid, position)
      WHERE provider_id IS NOT NULL;
    CREATE TRIGGER referral_events_notify AFTER INSERT ON referral_events
      FOR EACH STATEMENT EXECUTE FUNCTION refhub_notify_events();
    ALTER TABLE webhook_attempts ADD PRIMARY KEY (id),
      ADD FOREIGN KEY (subscription_id) REFERENCES webhook_subscriptions (id) ON DELETE CASCADE;
    CREATE INDEX webhook_attempts_subscription ON webhook_attempts (subscription_id, attempted_at DESC, id DESC);
    CREATE INDEX webhook_attempts_attempted ON webhook_attempts (attempted_at);
    ALTER TABLE ehr_submissions ADD PRIMARY KEY (id), ADD FOREIGN KEY (referral_id) REFERENCES referrals (id);
    CREATE INDEX ehr_submissions_referral ON ehr_submissions (referral_id, attempted_at, id);
    CREATE INDEX ehr_submissions_failed ON ehr_submissions (attempted_at) WHERE outcome = 'failed';
  `.execute(db);
}
