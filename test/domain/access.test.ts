// Who sees a referral and as which party (contract §2). Pure: no database, so it runs once.
import { describe, expect, it } from 'vitest';
import { ForbiddenRoleError } from '../../src/errors.ts';
import {
  actingParty,
  isVisible,
  partiesOf,
  sameInstitution,
  type InstitutionRef,
  type ReferralParties,
} from '../../src/domain/access.ts';
import { OPERATIONS, type Operation } from '../../src/domain/lifecycle.ts';
import { STATUSES, type Status } from '../../src/domain/statuses.ts';

const SENDER: InstitutionRef = { idType: 'hci', id: 'S1234A' };
const PROVIDER: InstitutionRef = { idType: 'hci', id: 'S9001Z' };
const STRANGER: InstitutionRef = { idType: 'hci', id: 'S2345B' };
const SUBMITTED: readonly Status[] = STATUSES.filter((s) => s !== 'draft');

const referral = (status: Status, provider: InstitutionRef | null = PROVIDER): ReferralParties => ({
  status,
  sender: SENDER,
  provider,
});

/** Contract §4, the "Who" column. */
const SENDER_OPERATIONS: readonly Operation[] = [
  'update',
  'submit',
  'delete',
  'cancel',
  'redirect',
  'back-to-draft',
  'acknowledge-outcome',
  'add-note',
  'add-attachment',
  'remove-attachment',
];
const PROVIDER_OPERATIONS: readonly Operation[] = [
  'cancel',
  'redirect',
  'accept',
  'reject',
  'request-action',
  'upsert-appointment',
  'complete',
  'add-note',
  'add-attachment',
];

describe('sameInstitution', () => {
  it('needs both the type and the id to match', () => {
    expect(sameInstitution(SENDER, { idType: 'hci', id: 'S1234A' })).toBe(true);
    expect(sameInstitution(SENDER, { idType: 'other', id: 'S1234A' })).toBe(false);
    expect(sameInstitution(SENDER, { idType: 'hci', id: 's1234a' })).toBe(false);
    expect(sameInstitution(null, SENDER)).toBe(false);
  });
});

describe('partiesOf and isVisible', () => {
  it.each(STATUSES)('the sender sees its referral in %s', (status) => {
    expect(partiesOf(referral(status), SENDER)).toEqual(['sender']);
    expect(isVisible(referral(status), SENDER)).toBe(true);
  });

  it('the provider cannot see a draft', () => {
    expect(partiesOf(referral('draft'), PROVIDER)).toEqual([]);
    expect(isVisible(referral('draft'), PROVIDER)).toBe(false);
  });

  it.each(SUBMITTED)('the provider sees it once submitted: %s', (status) => {
    expect(partiesOf(referral(status), PROVIDER)).toEqual(['provider']);
    expect(isVisible(referral(status), PROVIDER)).toBe(true);
  });

  it.each(STATUSES)('nobody else sees it in %s', (status) => {
    expect(partiesOf(referral(status), STRANGER)).toEqual([]);
    expect(isVisible(referral(status), STRANGER)).toBe(false);
  });

  it('a draft without an offering has no provider side at all', () => {
    expect(partiesOf(referral('draft', null), SENDER)).toEqual(['sender']);
    expect(partiesOf(referral('draft', null), PROVIDER)).toEqual([]);
  });

  it('an institution that refers to itself is on both sides once submitted, and only sender while draft', () => {
    expect(partiesOf(referral('pending-acceptance', SENDER), SENDER)).toEqual(['sender', 'provider']);
    expect(partiesOf(referral('draft', SENDER), SENDER)).toEqual(['sender']);
  });
});

describe('actingParty', () => {
  it.each(OPERATIONS)('an ops key may never %s a referral', (operation) => {
    for (const status of STATUSES) {
      expect(() => actingParty(operation, 'ops', referral(status), SENDER)).toThrow(ForbiddenRoleError);
      expect(() => actingParty(operation, 'ops', referral(status), PROVIDER)).toThrow(ForbiddenRoleError);
    }
  });

  const pairs = OPERATIONS.flatMap((operation) =>
    (['sender', 'provider'] as const).map((role) => ({ operation, role })),
  );

  it.each(pairs)('$role key and $operation', ({ operation, role }) => {
    const allowed = (role === 'sender' ? SENDER_OPERATIONS : PROVIDER_OPERATIONS).includes(operation);
    const own = role === 'sender' ? SENDER : PROVIDER;
    const status: Status = 'pending-acceptance';
    if (allowed) {
      expect(actingParty(operation, role, referral(status), own)).toBe(role);
    } else {
      expect(() => actingParty(operation, role, referral(status), own)).toThrow(ForbiddenRoleError);
    }
  });

  it('a key acts only on its own side of the referral', () => {
    // The provider institution holding a sender key is not the referral's sender.
    expect(() => actingParty('cancel', 'sender', referral('accepted'), PROVIDER)).toThrow(
      /not this referral's sender/,
    );
    // The sender institution holding a provider key is not the referral's provider.
    expect(() => actingParty('cancel', 'provider', referral('accepted'), SENDER)).toThrow(
      /not this referral's provider/,
    );
    // A provider key on a draft: the provider side does not exist yet.
    expect(() => actingParty('add-note', 'provider', referral('draft'), PROVIDER)).toThrow(
      ForbiddenRoleError,
    );
  });

  it('says why, with a stable code, and the role it refused', () => {
    let thrown: unknown;
    try {
      actingParty('accept', 'ops', referral('pending-acceptance'), SENDER);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(ForbiddenRoleError);
    expect((thrown as ForbiddenRoleError).code).toBe('forbidden_role');
    expect((thrown as ForbiddenRoleError).status).toBe(403);
    expect((thrown as ForbiddenRoleError).message).toContain('ops');
  });
});
