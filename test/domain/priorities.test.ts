// A priority is taken when the catalog has it in use and the offering takes it; it decides isUrgent.
import { describe, expect, it } from 'vitest';
import {
  prioritiesOf,
  resolvePriority,
  type PriorityCode,
  type PriorityRequest,
} from '../../src/domain/priorities.ts';

const CODES: readonly PriorityCode[] = [
  { code: 'routine', display: 'Routine', fhirPriority: 'routine', active: true },
  { code: 'urgent', display: 'Urgent', fhirPriority: 'urgent', active: true },
  { code: 'two-week-wait', display: 'Two-week wait', fhirPriority: 'asap', active: true },
  { code: 'retired', display: 'Retired', fhirPriority: 'stat', active: false },
];
const GASTRO = { name: 'Gastroenterology', priorities: null };
const AE = { name: 'Emergency Department', priorities: ['urgent'] };
const TWW = { code: 'two-week-wait', display: 'Two-week wait', fhirPriority: 'asap' } as const;

const request = (over: Partial<PriorityRequest>): PriorityRequest => ({
  priority: undefined,
  isUrgent: undefined,
  offering: GASTRO,
  offeringChanged: false,
  current: null,
  ...over,
});

describe('priorities', () => {
  it('lists what an offering takes: its own list, or every code in use, in the catalog order', () => {
    expect(prioritiesOf(CODES, GASTRO).map((c) => c.code)).toEqual(['routine', 'urgent', 'two-week-wait']);
    expect(prioritiesOf(CODES, AE).map((c) => c.code)).toEqual(['urgent']);
  });

  it('sets a priority the offering takes, with its words, and the urgency it decides', () => {
    expect(resolvePriority(CODES, request({ priority: 'two-week-wait' }))).toEqual({
      change: { priority: TWW, isUrgent: true },
      problems: [],
    });
    expect(resolvePriority(CODES, request({ priority: 'routine' })).change).toMatchObject({
      isUrgent: false,
    });
    expect(resolvePriority(CODES, request({ priority: null, current: TWW })).change).toEqual({
      priority: null,
    });
    // No offering yet: any priority in use, checked again when the offering is chosen.
    expect(resolvePriority(CODES, request({ priority: 'urgent', offering: null })).problems).toEqual([]);
  });

  it('refuses a code not in use, one the offering does not take, and an urgency that disagrees', () => {
    const problem = (over: Partial<PriorityRequest>) => resolvePriority(CODES, request(over)).problems;
    expect(problem({ priority: 'retired' })).toEqual([
      { field: 'priority', message: expect.stringMatching(/not a priority the catalog offers/) as unknown },
    ]);
    expect(problem({ priority: 'routine', offering: AE })).toEqual([
      { field: 'priority', message: 'is not a priority Emergency Department takes' },
    ]);
    expect(problem({ offering: AE, offeringChanged: true, current: TWW })).toEqual([
      { field: 'priority', message: 'is not a priority Emergency Department takes; choose another' },
    ]);
    expect(problem({ priority: 'routine', isUrgent: true })).toEqual([
      { field: 'isUrgent', message: 'disagrees with the priority Routine, which decides it' },
    ]);
    expect(problem({ isUrgent: false, current: TWW })).toEqual([
      { field: 'isUrgent', message: 'disagrees with the priority Two-week wait, which decides it' },
    ]);
  });

  it('leaves what the request does not touch', () => {
    expect(resolvePriority(CODES, request({ current: TWW, isUrgent: true }))).toEqual({
      change: {},
      problems: [],
    });
    expect(resolvePriority(CODES, request({ offering: AE, offeringChanged: true }))).toEqual({
      change: {},
      problems: [],
    });
  });
});
