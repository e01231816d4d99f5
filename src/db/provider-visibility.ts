// When a provider sees a referral, as SQL: only once it is not a draft (domain/access.ts states the
// same rule for code). Every statement that decides what a provider sees takes the condition from
// here: the provider's lists and reads (db/referrals/) and the provider columns of the event
// feed (db/referrals/change.ts), so the rule cannot be changed in one of them and not the others.
import { sql, type RawBuilder } from 'kysely';

/**
 * Whether the provider may see the referral in the row that `referral` (a table name or alias) names.
 * The status is a literal, not a parameter: the provider indexes hold only non-drafts (their
 * `WHERE status <> 'draft'`), and a prepared statement's generic plan can use them only if it can see
 * that this condition matches theirs.
 */
export function providerSees(referral: string): RawBuilder<boolean> {
  return sql<boolean>`${sql.ref(`${referral}.status`)} <> 'draft'`;
}
