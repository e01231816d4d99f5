// Each timeline entry has two sentences from one place: the timeline's, which quotes what a person
// wrote (a cancel note, a rejection, a request to act, an appointment's location), and the event's,
// for the event feed and webhooks, which is the same sentence without the quote.
import { describe, expect, it } from 'vitest';
import { displayTimeIn } from '../../src/domain/display-time.ts';
import { APPOINTMENT_STATUSES } from '../../src/domain/statuses.ts';
import { timeline, type TimelineEntry } from '../../src/domain/timeline.ts';

const display = displayTimeIn('Asia/Singapore');
const FREE_TEXT = 'Patient Tan Ah Kow recovered, NRIC S1234567D';
const ACTOR = 'Dr Tan (Bukit Timah Family Clinic)';
const START = new Date('2026-12-03T01:30:00.000Z');

/** Every entry, made with FREE_TEXT wherever it takes text a person wrote. */
const ENTRIES: readonly [string, TimelineEntry][] = [
  ['created', timeline.created(ACTOR)],
  ['updated', timeline.updated(ACTOR, ['clinicalInfo'])],
  ['submitted', timeline.submitted(ACTOR, 'Central General Hospital')],
  ['cancelled', timeline.cancelled(ACTOR, FREE_TEXT)],
  ['backToDraft', timeline.backToDraft(ACTOR)],
  ['accepted', timeline.accepted(ACTOR)],
  ['rejected', timeline.rejected(ACTOR, FREE_TEXT)],
  ['actionRequested', timeline.actionRequested(ACTOR, FREE_TEXT)],
  ...APPOINTMENT_STATUSES.map(
    (status) =>
      [`appointment ${status}`, timeline.appointment(ACTOR, status, START, FREE_TEXT, display)] as [
        string,
        TimelineEntry,
      ],
  ),
  ['completed', timeline.completed(ACTOR, 'Seen, discharged', 1)],
  ['outcomeAcknowledged', timeline.outcomeAcknowledged(ACTOR)],
  ['noteAdded', timeline.noteAdded(ACTOR)],
  ['attachmentAdded', timeline.attachmentAdded(ACTOR, 'PDF', '120 KB')],
  ['attachmentRemoved', timeline.attachmentRemoved(ACTOR, 'PDF', '120 KB')],
  ['reminderSent', timeline.reminderSent('Central General Hospital')],
  ['ehrForwarded', timeline.ehrForwarded('EHR-1')],
  ['ehrForwardFailed', timeline.ehrForwardFailed('the EHR answered 500, which is final')],
];

describe('timeline sentences', () => {
  it('has an entry here for every entry of the timeline', () => {
    const made = new Set(ENTRIES.map(([name]) => name.split(' ')[0]));
    expect([...made].sort()).toEqual(Object.keys(timeline).sort());
  });

  it('quotes free text on the timeline, and never in the event sentence', () => {
    for (const [name, entry] of ENTRIES) {
      expect(entry.eventDescription, name).not.toContain('Tan Ah Kow');
      expect(entry.eventDescription, name).not.toContain('S1234567D');
      expect(entry.eventDescription, name).toMatch(/\.$/);
    }
    const quoting = ENTRIES.filter(([, entry]) => entry.description.includes(FREE_TEXT));
    expect(quoting.map(([name]) => name)).toEqual([
      'cancelled',
      'rejected',
      'actionRequested',
      ...APPOINTMENT_STATUSES.map((status) => `appointment ${status}`),
    ]);
  });

  it('gives the same sentence to both where nothing is quoted', () => {
    for (const [name, entry] of ENTRIES) {
      if (!entry.description.includes(FREE_TEXT))
        expect(entry.eventDescription, name).toBe(entry.description);
    }
  });

  it('says on the event what the timeline says, up to the quote', () => {
    expect(timeline.cancelled(ACTOR, FREE_TEXT)).toEqual({
      type: 'referral.cancelled',
      description: `${ACTOR} cancelled the referral: ${FREE_TEXT}`,
      eventDescription: `${ACTOR} cancelled the referral.`,
    });
    expect(timeline.rejected(ACTOR, FREE_TEXT)).toMatchObject({
      description: `${ACTOR} rejected the referral: ${FREE_TEXT}`,
      eventDescription: `${ACTOR} rejected the referral.`,
    });
    expect(timeline.actionRequested(ACTOR, FREE_TEXT)).toMatchObject({
      description: `${ACTOR} asked the sender to act on the referral: ${FREE_TEXT}`,
      eventDescription: `${ACTOR} asked the sender to act on the referral.`,
    });
    const at = (status: (typeof APPOINTMENT_STATUSES)[number]) =>
      timeline.appointment(ACTOR, status, START, 'Clinic 2C', display);
    expect(
      APPOINTMENT_STATUSES.map((status) => [at(status).description, at(status).eventDescription]),
    ).toEqual([
      [
        `${ACTOR} scheduled an appointment for Thu 3 Dec 2026, 09:30 SGT at Clinic 2C.`,
        `${ACTOR} scheduled an appointment for Thu 3 Dec 2026, 09:30 SGT.`,
      ],
      [
        'The appointment on Thu 3 Dec 2026, 09:30 SGT at Clinic 2C took place.',
        'The appointment on Thu 3 Dec 2026, 09:30 SGT took place.',
      ],
      [
        'The patient missed the appointment on Thu 3 Dec 2026, 09:30 SGT at Clinic 2C.',
        'The patient missed the appointment on Thu 3 Dec 2026, 09:30 SGT.',
      ],
      [
        'The appointment on Thu 3 Dec 2026, 09:30 SGT at Clinic 2C was cancelled.',
        'The appointment on Thu 3 Dec 2026, 09:30 SGT was cancelled.',
      ],
    ]);
  });
});
