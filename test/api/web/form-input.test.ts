// What the form posts becomes an update of exactly the fields the person changed, typed as the API
// takes them; errors from the shared checks read as instructions next to the right field.
import { describe, expect, it } from 'vitest';
import {
  changesFrom,
  EDITABLE_FIELDS,
  formErrors,
  readForm,
  type FormValues,
} from '../../../src/api/web/form-input.ts';
import { WebPageError } from '../../../src/api/web/web-pages.ts';
import { createReferralFieldsCheck } from '../../../src/services/referrals/fields.ts';

const STORED: FormValues = {
  patientName: 'Tan Ah Kow',
  patientUin: 'S1234567D',
  dob: '1960-02-29',
  patientGender: 'Male',
  nationality: 'SG',
  residentialStatus: 'SC',
  patientPhoneNumber: '91234567',
  referrerName: '',
  referrerIdType: '',
  referrerId: '',
  referrerEmail: '',
  referrerContactNumber: '',
  offeringId: 'cgh-gastro',
  clinicalInfo: 'Line one.\nLine two.',
  isUrgent: 'false',
};

describe('readForm', () => {
  it('reads every field, an absent radio as empty, and the intent and version', () => {
    const withoutRadio: Record<string, string> = { ...STORED };
    delete withoutRadio.offeringId;
    const form = readForm({ ...withoutRadio, _csrf: 'tok', version: '7', intent: 'submit' });
    expect(form.values.offeringId).toBe('');
    expect(form.values.patientName).toBe('Tan Ah Kow');
    expect(form).toMatchObject({ csrfToken: 'tok', version: 7, intent: 'submit' });
    expect(readForm({ intent: 'save', version: '0' }).version).toBeUndefined();
    expect(readForm({ intent: 'save', version: '1e3' }).version).toBeUndefined();
  });

  it('refuses what our page never sends: no intent, an unknown one, a repeated field, no body', () => {
    for (const body of [
      {},
      { intent: 'delete' },
      { intent: 'save', patientName: ['a', 'b'] },
      null,
      'text',
    ]) {
      expect(() => readForm(body)).toThrow(WebPageError);
    }
  });
});

describe('changesFrom', () => {
  it('is empty when nothing changed, whitespace and line endings aside', () => {
    const posted = { ...STORED, patientName: '  Tan Ah Kow ', clinicalInfo: 'Line one.\r\nLine two.\r\n' };
    expect(changesFrom(STORED, posted, EDITABLE_FIELDS.edit)).toEqual({});
  });

  it('holds each changed field as the API takes it: null clears, urgency is a boolean', () => {
    const posted = { ...STORED, patientPhoneNumber: '', isUrgent: 'true', clinicalInfo: 'New.\r\nText.' };
    expect(changesFrom(STORED, posted, EDITABLE_FIELDS.edit)).toEqual({
      patientPhoneNumber: null,
      isUrgent: true,
      clinicalInfo: 'New.\nText.',
    });
  });

  it('leaves the service out when responding to the provider', () => {
    const posted = { ...STORED, offeringId: 'erh-cardio' };
    expect(changesFrom(STORED, posted, EDITABLE_FIELDS.respond)).toEqual({});
    expect(changesFrom(STORED, posted, EDITABLE_FIELDS.edit)).toEqual({ offeringId: 'erh-cardio' });
  });

  it('passes a value the schema must refuse on to the schema, unchanged', () => {
    const changes = changesFrom(
      STORED,
      { ...STORED, isUrgent: 'maybe', nationality: 'XX' },
      EDITABLE_FIELDS.edit,
    );
    expect(changes).toEqual({ isUrgent: 'maybe', nationality: 'XX' });
    expect(createReferralFieldsCheck()(changes).map((e) => e.path)).toEqual([
      'body.nationality',
      'body.isUrgent',
    ]);
  });
});

describe('formErrors', () => {
  it('words schema, service and submit errors for the form, in the order of the form', () => {
    expect(
      formErrors(
        [
          { path: 'body.isUrgent', message: 'must be boolean' },
          { path: 'body.patientUin', message: 'must match pattern' },
        ],
        'schema',
      ),
    ).toEqual([
      { field: 'patientUin', message: expect.stringMatching(/^Enter the NRIC or FIN/) as unknown },
      { field: 'isUrgent', message: 'Choose routine or urgent' },
    ]);
    expect(formErrors([{ path: 'body.dob', message: 'must not be in the future' }], 'service')).toEqual([
      { field: 'dob', message: 'Date of birth must not be in the future' },
    ]);
    expect(formErrors([{ path: 'offeringId', message: 'is required to submit' }], 'submit')).toEqual([
      { field: 'offeringId', message: 'Choose a service before you submit' },
    ]);
    expect(formErrors([{ path: 'body', message: 'is empty' }], 'service')).toEqual([
      { field: null, message: 'is empty' },
    ]);
  });
});
