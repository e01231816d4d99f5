// Webhook subscriptions: where an institution wants its events pushed, and their signing secrets.
// Every read and write by an institution names it, so one institution never sees another's
// subscription (tenancy in the data layer). Secrets leave this module only for signing, and for the
// one answer that creates or rotates them.
import { sql, type Selectable } from 'kysely';
import type { InstitutionRef } from '../../domain/access.ts';
import type { Executor } from '../executor.ts';
import { attemptRow, type WebhookAttempt } from './attempts.repository.ts';
import type { WebhookSubscriptionsTable } from '../schema.ts';

export type DisabledReason = 'by-institution' | 'gone' | 'failing';

export interface WebhookSubscription {
  readonly id: string;
  readonly institution: InstitutionRef;
  readonly url: string;
  /** null: every type. */
  readonly eventTypes: readonly string[] | null;
  readonly description: string | null;
  readonly disabledAt: Date | null;
  readonly disabledReason: DisabledReason | null;
  readonly failingSince: Date | null;
  /** While the previous secret still signs beside the current one. */
  readonly previousSecretExpiresAt: Date | null;
  readonly createdAt: Date;
  readonly updatedAt: Date;
}

/** A subscription with the secrets that sign its deliveries now (newest first). */
export interface SigningSubscription extends WebhookSubscription {
  readonly secrets: readonly string[];
}

export interface NewSubscription {
  readonly id: string;
  readonly institution: InstitutionRef;
  readonly url: string;
  readonly eventTypes: readonly string[] | null;
  readonly description: string | null;
  readonly secret: string;
  readonly now: Date;
}

export interface SubscriptionPatch {
  readonly url?: string;
  readonly eventTypes?: readonly string[] | null;
  readonly description?: string | null;
  /** true enables (and forgets failures); false disables it as the institution's choice. */
  readonly enabled?: boolean;
}

type Row = Selectable<WebhookSubscriptionsTable>;

function toSubscription(r: Row): WebhookSubscription {
  return {
    id: r.id,
    institution: { idType: r.institution_id_type, id: r.institution_id },
    url: r.url,
    eventTypes: r.event_types,
    description: r.description,
    disabledAt: r.disabled_at,
    disabledReason: r.disabled_reason,
    failingSince: r.failing_since,
    previousSecretExpiresAt: r.previous_secret_expires_at,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  };
}

function toSigning(r: Row, now: Date): SigningSubscription {
  const previous =
    r.previous_secret !== null &&
    r.previous_secret_expires_at !== null &&
    r.previous_secret_expires_at.getTime() > now.getTime()
      ? [r.previous_secret]
      : [];
  return { ...toSubscription(r), secrets: [r.secret, ...previous] };
}

export function webhookSubscriptionRepository(db: Executor) {
  const of = (institution: InstitutionRef) =>
    db
      .selectFrom('webhook_subscriptions')
      .selectAll()
      .where('institution_id_type', '=', institution.idType)
      .where('institution_id', '=', institution.id);

  return {
    async insert(s: NewSubscription): Promise<WebhookSubscription> {
      const row = await db
        .insertInto('webhook_subscriptions')
        .values({
          id: s.id,
          institution_id_type: s.institution.idType,
          institution_id: s.institution.id,
          url: s.url,
          event_types: s.eventTypes === null ? null : [...s.eventTypes],
          description: s.description,
          secret: s.secret,
          created_at: s.now,
          updated_at: s.now,
        })
        .returningAll()
        .executeTakeFirstOrThrow();
      return toSubscription(row);
    },

    async countFor(institution: InstitutionRef): Promise<number> {
      const row = await db
        .selectFrom('webhook_subscriptions')
        .select(sql<number>`count(*)::int`.as('n'))
        .where('institution_id_type', '=', institution.idType)
        .where('institution_id', '=', institution.id)
        .executeTakeFirstOrThrow();
      return row.n;
    },

    async listFor(institution: InstitutionRef): Promise<WebhookSubscription[]> {
      return (await of(institution).orderBy('created_at').orderBy('id').execute()).map(toSubscription);
    },

    async findFor(institution: InstitutionRef, id: string): Promise<WebhookSubscription | undefined> {
      const row = await of(institution).where('id', '=', id).executeTakeFirst();
      return row === undefined ? undefined : toSubscription(row);
    },

    async update(
      institution: InstitutionRef,
      id: string,
      patch: SubscriptionPatch,
      now: Date,
    ): Promise<WebhookSubscription | undefined> {
      const row = await db
        .updateTable('webhook_subscriptions')
        .set({
          updated_at: now,
          ...(patch.url === undefined ? {} : { url: patch.url }),
          ...(patch.eventTypes === undefined
            ? {}
            : { event_types: patch.eventTypes === null ? null : [...patch.eventTypes] }),
          ...(patch.description === undefined ? {} : { description: patch.description }),
          ...(patch.enabled === true
            ? { disabled_at: null, disabled_reason: null, failing_since: null }
            : {}),
        })
        // Disabling keeps the first reason: a subscription refhub disabled stays marked as such.
        .$if(patch.enabled === false, (q) =>
          q.set({
            disabled_at: sql`coalesce(disabled_at, ${now})`,
            disabled_reason: sql`coalesce(disabled_reason, 'by-institution')`,
          }),
        )
        .where('institution_id_type', '=', institution.idType)
        .where('institution_id', '=', institution.id)
        .where('id', '=', id)
        .returningAll()
        .executeTakeFirst();
      return row === undefined ? undefined : toSubscription(row);
    },

    async delete(institution: InstitutionRef, id: string): Promise<boolean> {
      const result = await db
        .deleteFrom('webhook_subscriptions')
        .where('institution_id_type', '=', institution.idType)
        .where('institution_id', '=', institution.id)
        .where('id', '=', id)
        .executeTakeFirst();
      return result.numDeletedRows > 0n;
    },

    /** A new secret; the current one keeps signing beside it until `previousUntil`. */
    async rotate(
      institution: InstitutionRef,
      id: string,
      secret: string,
      previousUntil: Date,
      now: Date,
    ): Promise<WebhookSubscription | undefined> {
      const row = await db
        .updateTable('webhook_subscriptions')
        .set((eb) => ({
          previous_secret: eb.ref('secret'),
          previous_secret_expires_at: previousUntil,
          secret,
          updated_at: now,
        }))
        .where('institution_id_type', '=', institution.idType)
        .where('institution_id', '=', institution.id)
        .where('id', '=', id)
        .returningAll()
        .executeTakeFirst();
      return row === undefined ? undefined : toSubscription(row);
    },

    /** For delivery: the subscription with the secrets that sign now. No tenancy: IDs come from jobs. */
    async forSigning(id: string, now: Date): Promise<SigningSubscription | undefined> {
      const row = await db
        .selectFrom('webhook_subscriptions')
        .selectAll()
        .where('id', '=', id)
        .executeTakeFirst();
      return row === undefined ? undefined : toSigning(row, now);
    },

    /** The enabled subscriptions of these institutions: the relay's fan-out. */
    async enabledFor(institutions: readonly InstitutionRef[]): Promise<WebhookSubscription[]> {
      if (institutions.length === 0) return [];
      const rows = await db
        .selectFrom('webhook_subscriptions')
        .selectAll()
        .where('disabled_at', 'is', null)
        .where((eb) =>
          eb.or(
            institutions.map((i) =>
              eb.and([eb('institution_id_type', '=', i.idType), eb('institution_id', '=', i.id)]),
            ),
          ),
        )
        .execute();
      return rows.map(toSubscription);
    },

    /** Every subscription, for operators (no secrets). */
    async all(): Promise<WebhookSubscription[]> {
      return (
        await db.selectFrom('webhook_subscriptions').selectAll().orderBy('created_at').orderBy('id').execute()
      ).map(toSubscription);
    },

    /** Subscriptions refhub disabled (the receiver answered 410, or kept failing). */
    async disabledByRefhub(): Promise<WebhookSubscription[]> {
      return (
        await db
          .selectFrom('webhook_subscriptions')
          .selectAll()
          .where('disabled_reason', 'in', ['gone', 'failing'])
          .orderBy('disabled_at', 'desc')
          .execute()
      ).map(toSubscription);
    },

    /** How many subscriptions are disabled now, by why. */
    async disabledCounts(): Promise<Record<string, number>> {
      const rows = await db
        .selectFrom('webhook_subscriptions')
        .select(['disabled_reason', sql<number>`count(*)::int`.as('n')])
        .where('disabled_at', 'is not', null)
        .groupBy('disabled_reason')
        .execute();
      return Object.fromEntries(rows.map((r) => [r.disabled_reason ?? 'by-institution', r.n]));
    },

    /**
     * Records an attempt and what it means for the subscription, in one statement: a delivery ends a
     * failing streak; `gone` (410) disables it; a failure marks it failing since `now` unless it
     * already was, and disables it once it has failed for `disableAfterMs`. Returns whether this
     * failure disabled it.
     */
    async recordAttempt(
      attempt: WebhookAttempt,
      result: 'delivered' | 'gone' | 'failed',
      now: Date,
      disableAfterMs: number,
    ): Promise<boolean> {
      const update = db
        .with('recorded', (q) => q.insertInto('webhook_attempts').values(attemptRow(attempt)))
        .updateTable('webhook_subscriptions')
        .where('id', '=', attempt.subscriptionId);
      if (result === 'delivered') {
        await update.set({ failing_since: null }).where('failing_since', 'is not', null).execute();
        return false;
      }
      if (result === 'gone') {
        await update
          .set({
            disabled_at: sql`coalesce(disabled_at, ${now})`,
            disabled_reason: sql`coalesce(disabled_reason, 'gone')`,
          })
          .execute();
        return false;
      }
      const overdue = sql<boolean>`disabled_at is null and coalesce(failing_since, ${now}) <= ${new Date(now.getTime() - disableAfterMs)}`;
      const row = await update
        .set({
          failing_since: sql`coalesce(failing_since, ${now})`,
          disabled_at: sql`case when ${overdue} then ${now} else disabled_at end`,
          disabled_reason: sql`case when ${overdue} then 'failing' else disabled_reason end`,
        })
        .returning(['disabled_reason', 'disabled_at'])
        .executeTakeFirst();
      return row?.disabled_reason === 'failing' && row.disabled_at?.getTime() === now.getTime();
    },
  };
}
