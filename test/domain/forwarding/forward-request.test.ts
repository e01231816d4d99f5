// The EHR forward request: the message ID rule, and the checker the sandbox EHR holds requests to
// (bounded fields, no unknown properties, messageId consistent with referralId and version).
import type { Static } from 'typebox';
import { describe, expect, expectTypeOf, it } from 'vitest';
import type { EhrForwardRequestSchema } from '../../../src/domain/forwarding/forward-request.ts';
import {
  createForwardRequestChecker,
  MAX_EHR_FORM_LENGTH,
  type EhrForwardRequest,
} from '../../../src/domain/forwarding/forward-request.ts';
import { messageIdOf } from '../../../src/domain/ids.ts';
import { forwardRequestFor } from '../../support/sandbox-ehr-process.ts';

const REFERRAL_ID = '0190a0b2-1c2d-7e3f-8a9b-0c1d2e3f4a5b';

const VALID = forwardRequestFor(REFERRAL_ID, 3);

type Break = (r: EhrForwardRequest) => unknown;
const patient = (r: EhrForwardRequest, change: Record<string, unknown>) => ({
  ...r,
  patient: { ...r.patient, ...change },
});
const specialty = (r: EhrForwardRequest, change: Record<string, unknown>) => ({
  ...r,
  referralRequest: { ...r.referralRequest, specialty: { ...r.referralRequest.specialty, ...change } },
});

function problemPaths(value: unknown): string[] {
  const result = createForwardRequestChecker()(value);
  return result.ok ? [] : result.problems.map((p) => p.path);
}

describe('messageIdOf', () => {
  it('joins the referral ID and the version', () => {
    expect(messageIdOf(REFERRAL_ID, 1)).toBe(`${REFERRAL_ID}.v1`);
    expect(messageIdOf(REFERRAL_ID, 42)).toBe(`${REFERRAL_ID}.v42`);
  });
});

describe('EhrForwardRequestSchema', () => {
  it('describes exactly the EhrForwardRequest type', () => {
    expectTypeOf<Static<typeof EhrForwardRequestSchema>>().toExtend<EhrForwardRequest>();
    expectTypeOf<EhrForwardRequest>().toExtend<Static<typeof EhrForwardRequestSchema>>();
  });
});

describe('createForwardRequestChecker', () => {
  it('accepts a valid request and returns it', () => {
    expect(createForwardRequestChecker()(structuredClone(VALID))).toEqual({ ok: true, request: VALID });
  });

  it('accepts a null date of birth and a form at the length limit', () => {
    const request = {
      ...patient(VALID, { dob: null }),
      notesItem: { text: 'x'.repeat(MAX_EHR_FORM_LENGTH) },
    };
    expect(problemPaths(request)).toEqual([]);
  });

  it('reports every problem at once, naming missing and unknown fields', () => {
    const request = {
      ...Object.fromEntries(Object.entries(VALID).filter(([key]) => key !== 'notesItem')),
      extra: true,
      version: 0,
      patient: { ...VALID.patient, nickname: 'x' },
    };
    expect(problemPaths(request).sort()).toEqual(['/extra', '/notesItem', '/patient/nickname', '/version']);
  });

  it.each<[string, Break, string]>([
    ['a version that is not an integer', (r) => ({ ...r, version: 1.5 }), '/version'],
    ['a version given as text', (r) => ({ ...r, version: '3' }), '/version'],
    ['a referral ID that is not a UUID', (r) => ({ ...r, referralId: 'abc' }), '/referralId'],
    ['a URN-prefixed referral ID', (r) => ({ ...r, referralId: `urn:uuid:${REFERRAL_ID}` }), '/referralId'],
    ['a malformed UIN', (r) => patient(r, { uin: 'S1234567' }), '/patient/uin'],
    ['an empty patient name', (r) => patient(r, { name: '' }), '/patient/name'],
    ['a long patient name', (r) => patient(r, { name: 'x'.repeat(201) }), '/patient/name'],
    [
      'a missing date of birth',
      (r) => ({ ...r, patient: { uin: r.patient.uin, name: r.patient.name } }),
      '/patient/dob',
    ],
    ['an impossible date of birth', (r) => patient(r, { dob: '1960-02-30' }), '/patient/dob'],
    ['a date-time as date of birth', (r) => patient(r, { dob: '1960-01-31T00:00:00Z' }), '/patient/dob'],
    ['an empty form', (r) => ({ ...r, notesItem: { text: '' } }), '/notesItem/text'],
    [
      'a form over the limit',
      (r) => ({ ...r, notesItem: { text: 'x'.repeat(MAX_EHR_FORM_LENGTH + 1) } }),
      '/notesItem/text',
    ],
    ['an empty specialty code', (r) => specialty(r, { code: '' }), '/referralRequest/specialty/code'],
    [
      'a long form type',
      (r) => ({
        ...r,
        referralRequest: { ...r.referralRequest, type: { textDescription: 'x'.repeat(501) } },
      }),
      '/referralRequest/type/textDescription',
    ],
  ])('rejects %s', (_name, breakIt, path) => {
    expect(problemPaths(breakIt(VALID))).toContain(path);
  });

  it('rejects a message ID that does not match the referral ID and version', () => {
    const result = createForwardRequestChecker()({ ...VALID, messageId: messageIdOf(REFERRAL_ID, 4) });
    expect(result).toEqual({
      ok: false,
      problems: [{ path: '/messageId', message: expect.stringContaining(`${REFERRAL_ID}.v3`) as unknown }],
    });
  });

  it('rejects a message ID of another shape', () => {
    expect(problemPaths({ ...VALID, messageId: `${REFERRAL_ID}-v3` })).toEqual(['/messageId']);
  });

  it('rejects what is not an object', () => {
    for (const value of [null, [], 'text', 3]) expect(problemPaths(value)).toEqual(['']);
  });

  it('never quotes a value in its problems', () => {
    const result = createForwardRequestChecker()(
      patient(VALID, { name: 'x'.repeat(300), uin: 'CANARY-UIN' }),
    );
    expect(result.ok).toBe(false);
    expect(JSON.stringify(result)).not.toContain('CANARY-UIN');
    expect(JSON.stringify(result)).not.toContain('xxxxxxxx');
  });
});
