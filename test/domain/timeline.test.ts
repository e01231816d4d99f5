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
  ['cancelled', timeline.cancelled(ACTOR, { comment: FREE_TEXT })],
  ['backToDraft', timeline.backToDraft(ACTOR)],
  ['accepted', timeline.accepted(ACTOR)],
  ['acceptedWithPriority', timeline.acceptedWithPriority(ACTOR, 'Routine', 'Urgent', FREE_TEXT)],
  ['rejected', timeline.rejected(ACTOR, { comment: FREE_TEXT })],
  ['actionRequested', timeline.actionRequested(ACTOR, { comment: FREE_TEXT })],
  ['archived', timeline.archived('referrals-2028-06-01T02-00-00.000Z')],
  [
    'redirected',
    timeline.redirected(ACTOR, 'Eastside Regional Hospital (Cardiology)', { comment: FREE_TEXT }),
  ],
  [
    'redirectedHere',
    timeline.redirectedHere(
      ACTOR,
      'Central General Hospital (Gastroenterology)',
      'Eastside Regional Hospital (Cardiology)',
      {
        comment: FREE_TEXT,
      },
    ),
  ],
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
  ['triageOverdue', timeline.triageOverdue('Central General Hospital', 'Thu 3 Dec 2026, 00:00 SGT')],
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
      'acceptedWithPriority',
      'rejected',
      'actionRequested',
      'redirected',
      'redirectedHere',
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
    expect(timeline.cancelled(ACTOR, { comment: FREE_TEXT })).toEqual({
      type: 'referral.cancelled',
      description: `${ACTOR} cancelled the referral: ${FREE_TEXT}`,
      eventDescription: `${ACTOR} cancelled the referral.`,
    });
    expect(timeline.rejected(ACTOR, { comment: FREE_TEXT })).toMatchObject({
      description: `${ACTOR} rejected the referral: ${FREE_TEXT}`,
      eventDescription: `${ACTOR} rejected the referral.`,
    });
    expect(timeline.actionRequested(ACTOR, { comment: FREE_TEXT })).toMatchObject({
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

describe('timeline sentences with a coded reason', () => {
  const REASON = { code: 'wrong-service', display: 'Referred to the wrong service' };

  it('gives the reason’s words in both sentences and its code beside them, the comment in the timeline’s alone', () => {
    expect(timeline.rejected(ACTOR, { reason: REASON, comment: FREE_TEXT })).toEqual({
      type: 'referral.rejected',
      description: `${ACTOR} rejected the referral (Referred to the wrong service): ${FREE_TEXT}`,
      eventDescription: `${ACTOR} rejected the referral (Referred to the wrong service).`,
      reason: REASON,
    });
    expect(timeline.cancelled(ACTOR, { reason: REASON })).toEqual({
      type: 'referral.cancelled',
      description: `${ACTOR} cancelled the referral (Referred to the wrong service).`,
      eventDescription: `${ACTOR} cancelled the referral (Referred to the wrong service).`,
      reason: REASON,
    });
    expect(timeline.backToDraft(ACTOR, { reason: REASON, comment: FREE_TEXT })).toMatchObject({
      description: `${ACTOR} returned the referral to draft (Referred to the wrong service): ${FREE_TEXT}`,
      eventDescription: `${ACTOR} returned the referral to draft (Referred to the wrong service).`,
    });
    expect(timeline.actionRequested(ACTOR, { reason: REASON })).toMatchObject({
      eventDescription: `${ACTOR} asked the sender to act on the referral (Referred to the wrong service).`,
    });
  });

  it('says what it said before reasons had codes when there is none', () => {
    expect(timeline.backToDraft(ACTOR, {})).toEqual(timeline.backToDraft(ACTOR));
    expect(timeline.backToDraft(ACTOR).description).toBe(`${ACTOR} returned the referral to draft.`);
    expect(timeline.rejected(ACTOR, { comment: FREE_TEXT })).not.toHaveProperty('reason');
  });
});

describe('a redirect on both timelines', () => {
  const reason = { code: 'wrong-service', display: 'Referred to the wrong service' };
  it('says where the referral went, and where its successor came from, with the reason and the comment', () => {
    expect(
      timeline.redirected(ACTOR, 'Eastside Regional Hospital (Cardiology)', { reason, comment: FREE_TEXT }),
    ).toEqual({
      type: 'referral.redirected',
      description: `${ACTOR} redirected the referral to Eastside Regional Hospital (Cardiology) (Referred to the wrong service): ${FREE_TEXT}`,
      eventDescription: `${ACTOR} redirected the referral to Eastside Regional Hospital (Cardiology) (Referred to the wrong service).`,
      reason,
    });
    // The successor's opening step is the submit's event: it enters pending-acceptance.
    expect(
      timeline.redirectedHere(
        ACTOR,
        'Central General Hospital (Gastroenterology)',
        'Eastside Regional Hospital (Cardiology)',
        {
          reason,
        },
      ),
    ).toEqual({
      type: 'referral.pending-acceptance',
      description:
        `${ACTOR} redirected the referral from Central General Hospital (Gastroenterology) to Eastside Regional ` +
        'Hospital (Cardiology), where it is awaiting acceptance (Referred to the wrong service).',
      eventDescription:
        `${ACTOR} redirected the referral from Central General Hospital (Gastroenterology) to Eastside Regional ` +
        'Hospital (Cardiology), where it is awaiting acceptance (Referred to the wrong service).',
      reason,
    });
  });
});

describe('triage’s change of priority on the timeline', () => {
  it('says who changed it from what to what, quoting why on the timeline alone', () => {
    expect(timeline.acceptedWithPriority(ACTOR, 'Routine', 'Two-week wait', FREE_TEXT)).toEqual({
      type: 'referral.accepted',
      description: `${ACTOR} accepted the referral, changing its priority from Routine to Two-week wait: ${FREE_TEXT}`,
      eventDescription: `${ACTOR} accepted the referral, changing its priority from Routine to Two-week wait.`,
    });
    expect(timeline.acceptedWithPriority(ACTOR, null, 'Urgent', 'x').eventDescription).toBe(
      `${ACTOR} accepted the referral with the priority Urgent.`,
    );
  });
});
