// The words for codes: one for every code the API takes, none borrowed from the runtime's locale
// data, and a code without a word shown as stored. The timeline's clinical events are an allow-list
// drawn from the lifecycle table, without refhub's bookkeeping.
import { describe, expect, it } from 'vitest';
import { CLINICAL_EVENT_TYPES, isClinicalEvent } from '../../src/domain/clinical-events.ts';
import { COUNTRY_CODES, countryName, isCountryCode } from '../../src/domain/countries.ts';
import {
  APPOINTMENT_STATUS_LABELS,
  INSTITUTION_ID_TYPE_LABELS,
  OFFERING_CATEGORY_LABELS,
  REFERRER_ID_TYPE_LABELS,
  REFERRER_ID_TYPES,
  RESIDENTIAL_STATUS_LABELS,
  STATUS_LABELS,
  labelFor,
  nationalityLabel,
  systemLabel,
} from '../../src/domain/labels.ts';
import { APPOINTMENT_EVENTS, LIFECYCLE } from '../../src/domain/lifecycle.ts';
import {
  APPOINTMENT_STATUSES,
  INSTITUTION_ID_TYPES,
  OFFERING_CATEGORIES,
  STATUSES,
} from '../../src/domain/statuses.ts';
import { ReferrerIdType, ResidentialStatus } from '../../src/services/referrals/fields.ts';

describe('labels', () => {
  it('has a word for every code the API takes', () => {
    expect(Object.keys(OFFERING_CATEGORY_LABELS).sort()).toEqual([...OFFERING_CATEGORIES].sort());
    expect(Object.keys(STATUS_LABELS).sort()).toEqual([...STATUSES].sort());
    expect(Object.keys(APPOINTMENT_STATUS_LABELS).sort()).toEqual([...APPOINTMENT_STATUSES].sort());
    expect(Object.keys(INSTITUTION_ID_TYPE_LABELS).sort()).toEqual([...INSTITUTION_ID_TYPES].sort());
    expect([...REFERRER_ID_TYPES].sort()).toEqual([...ReferrerIdType.enum].sort());
    expect(Object.keys(REFERRER_ID_TYPE_LABELS).sort()).toEqual([...ReferrerIdType.enum].sort());
    expect(Object.keys(RESIDENTIAL_STATUS_LABELS).sort()).toEqual([...ResidentialStatus.enum].sort());
  });

  it('says what a clinician says', () => {
    expect(OFFERING_CATEGORY_LABELS.soc).toBe('Specialist Outpatient Clinic (SOC)');
    expect(APPOINTMENT_STATUS_LABELS).toEqual({
      scheduled: 'Scheduled',
      actualized: 'Attended',
      'no-show': 'Did not attend',
      cancelled: 'Cancelled',
    });
    expect(INSTITUTION_ID_TYPE_LABELS.hci).toBe('HCI code');
    expect(REFERRER_ID_TYPE_LABELS.mcr).toBe('MCR no.');
    expect(RESIDENTIAL_STATUS_LABELS).toEqual({
      SC: 'Singapore Citizen',
      PR: 'Permanent Resident',
      Foreigner: 'Foreigner',
    });
    expect(STATUS_LABELS['pending-acceptance']).toBe('Submitted, awaiting acceptance');
    expect(systemLabel('Manual')).toBe('refhub web form');
    expect(systemLabel('Epic')).toBe('Epic');
    expect(nationalityLabel('SG')).toBe('Singapore');
  });

  it('shows a code it has no word for as stored, and never an inherited property', () => {
    expect(labelFor(APPOINTMENT_STATUS_LABELS, 'booked')).toBe('booked');
    expect(labelFor(APPOINTMENT_STATUS_LABELS, 'constructor')).toBe('constructor');
    expect(countryName('XX')).toBe('XX');
    expect(countryName('toString')).toBe('toString');
  });

  it('names all 249 countries from its own table', () => {
    expect(COUNTRY_CODES).toHaveLength(249);
    expect(new Set(COUNTRY_CODES).size).toBe(249);
    for (const code of COUNTRY_CODES) {
      expect(isCountryCode(code)).toBe(true);
      expect(countryName(code), code).not.toBe(code);
      expect(countryName(code), code).not.toMatch(/ & |St\. |SAR/);
    }
    expect(countryName('HK')).toBe('Hong Kong');
    expect(countryName('GB')).toBe('United Kingdom');
    expect(isCountryCode('XX')).toBe(false);
  });
});

describe('clinical timeline events', () => {
  it('are the events of what people do, and the appointment events', () => {
    expect([...CLINICAL_EVENT_TYPES].sort()).toEqual(
      [
        'referral.created',
        'referral.updated',
        'referral.pending-acceptance',
        'referral.cancelled',
        'referral.back-to-draft',
        'referral.accepted',
        'referral.rejected',
        'referral.redirected',
        'referral.sender-action-required',
        'referral.completed',
        'referral.outcome-acknowledged',
        'note.created',
        'referral.attachment-added',
        'referral.attachment-removed',
        ...Object.values(APPOINTMENT_EVENTS),
      ].sort(),
    );
  });

  it('leave out every event refhub records on its own, and types nobody has classified', () => {
    const bySystem = Object.values(LIFECYCLE)
      .filter((rule) => Object.hasOwn(rule.from, 'system'))
      .map((rule) => rule.event);
    expect(bySystem).toEqual(
      expect.arrayContaining([
        'ehr.forwarded',
        'ehr.forward-failed',
        'referral.provider-patient-create-reminder-sent',
      ]),
    );
    for (const type of [...bySystem, 'webhook.delivered', 'ehr.something-new']) {
      expect(isClinicalEvent(String(type)), String(type)).toBe(false);
    }
  });
});
