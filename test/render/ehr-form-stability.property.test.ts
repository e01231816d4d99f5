// Property: the EHR form is a pure function of the referral (and the installation's display zone).
// Any referral renders to the same bytes every time; and what refhub records on its own (a forward
// delivered or failed, a reminder sent, an event type nobody has classified yet), the version it
// bumps and the last update it stamps never change those bytes. The forwarder hashes the form, and a
// GET at any time must return what it forwarded for that version.
//
// The bytes do not depend on the machine either: a process with another time zone and another
// locale renders the same document.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import path from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { displayTimeIn } from '../../src/domain/display-time.ts';
import type {
  AppointmentView,
  EhrFormSource,
  NoteView,
  TimelineEventView,
} from '../../src/domain/referral-view.ts';
import {
  APPOINTMENT_STATUSES,
  CORE_STATUS_OF,
  OFFERING_CATEGORIES,
  STATUSES,
} from '../../src/domain/statuses.ts';
import { renderEhrForm } from '../../src/render/ehr-form.ts';
import { sampleEhrFormSource, sampleOffering } from '../support/fixtures/ehr-form-source.ts';
import { childEnv } from '../support/child-env.ts';

const NUM_RUNS = 150;

const ZONES = ['Asia/Singapore', 'Europe/London', 'America/New_York', 'Asia/Kathmandu', 'UTC'] as const;

const CLINICAL_TYPES = [
  'referral.created',
  'referral.updated',
  'referral.pending-acceptance',
  'referral.accepted',
  'referral.rejected',
  'referral.sender-action-required',
  'referral.back-to-draft',
  'referral.cancelled',
  'referral.completed',
  'referral.outcome-acknowledged',
  'note.created',
  'appt.scheduled',
  'appt.actualized',
  'appt.no-show',
  'appt.cancelled',
] as const;

const BOOKKEEPING_TYPES = [
  'ehr.forwarded',
  'ehr.forward-failed',
  'referral.provider-patient-create-reminder-sent',
  'webhook.delivered',
] as const;

const instant = fc
  .date({
    min: new Date('1970-01-01T00:00:00.000Z'),
    max: new Date('2100-12-31T23:59:59.999Z'),
    noInvalidDate: true,
  })
  .map((d) => d.toISOString());
const text = fc.string({ maxLength: 40 });
const optionalText = fc.option(text, { nil: null });
const dob = fc.oneof(
  fc
    .date({
      min: new Date('1900-01-01T00:00:00.000Z'),
      max: new Date('2030-12-31T00:00:00.000Z'),
      noInvalidDate: true,
    })
    .map((d) => d.toISOString().slice(0, 10)),
  optionalText,
);

function eventArbitrary(types: readonly string[]): fc.Arbitrary<Omit<TimelineEventView, 'id'>> {
  return fc.record({
    type: fc.constantFrom(...types),
    system: fc.constantFrom('Manual', 'HAS', 'Epic', 'refhub'),
    description: text,
    producedAt: instant,
  });
}

const referral: fc.Arbitrary<EhrFormSource> = fc
  .record({
    category: fc.option(fc.constantFrom(...OFFERING_CATEGORIES), { nil: null }),
    status: fc.constantFrom(...STATUSES),
    isUrgent: fc.boolean(),
    createdAt: instant,
    submittedAt: fc.option(instant, { nil: undefined }),
    patient: fc.record({
      uin: optionalText,
      name: optionalText,
      dob,
      gender: fc.constantFrom('Male', 'Female', null),
      nationality: fc.constantFrom('SG', 'MY', 'GB', 'XX', null),
      phoneNumber: optionalText,
      residentialStatus: fc.constantFrom('SC', 'PR', 'Foreigner', null),
    }),
    referrer: fc.record({
      id: optionalText,
      idType: fc.constantFrom('mcr', 'dcr', 'nric', 'email', 'brightUserId', null),
      name: optionalText,
      email: optionalText,
      contactNumber: optionalText,
    }),
    clinicalInfo: optionalText,
    appointments: fc.array(
      fc.record({ status: fc.constantFrom(...APPOINTMENT_STATUSES), startAt: instant, location: text }),
      { maxLength: 3 },
    ),
    notes: fc.array(fc.record({ content: text, authorName: optionalText, createdAt: instant }), {
      maxLength: 3,
    }),
    timeline: fc.array(eventArbitrary(CLINICAL_TYPES), { maxLength: 6 }),
    outcome: fc.option(
      fc.record({
        code: text,
        display: text,
        summary: optionalText,
        completedByName: optionalText,
        completedAt: instant,
        acknowledged: fc.option(fc.record({ at: instant, byName: optionalText }), { nil: null }),
        // Each of the outcome's files, and whether it goes with the form.
        documents: fc.array(fc.record({ fileName: text, included: fc.boolean() }), { maxLength: 3 }),
      }),
      { nil: null },
    ),
  })
  .map((r) => {
    const base = sampleEhrFormSource();
    const appointments: AppointmentView[] = r.appointments.map((a, i) => ({
      ...a,
      id: `appt-${i}`,
      updatedAt: a.startAt,
    }));
    const notes: NoteView[] = r.notes.map((n, i) => ({
      ...n,
      id: `note-${i}`,
      authorInstitution: base.sender,
    }));
    return sampleEhrFormSource({
      offering: r.category === null ? null : sampleOffering(r.category),
      status: r.status,
      coreStatus: CORE_STATUS_OF[r.status],
      isUrgent: r.isUrgent,
      createdAt: r.createdAt,
      updatedAt: r.createdAt,
      submittedAt: r.submittedAt,
      patient: r.patient,
      referrer: r.referrer,
      clinicalInfo: r.clinicalInfo,
      appointments,
      notes,
      timelineEvents: r.timeline.map((e, i) => ({ ...e, id: `event-${i}` })),
      ...(r.outcome === null ? {} : outcomeOf(r.outcome)),
    });
  });

/** A referral's outcome and the files that go with its form. */
function outcomeOf(o: {
  code: string;
  display: string;
  summary: string | null;
  completedByName: string | null;
  completedAt: string;
  acknowledged: { at: string; byName: string | null } | null;
  documents: { fileName: string; included: boolean }[];
}): Pick<EhrFormSource, 'outcome' | 'attachments'> {
  return {
    outcome: {
      code: o.code,
      display: o.display,
      summary: o.summary,
      attachmentIds: o.documents.map((_, i) => `file-${i}`),
      completedByName: o.completedByName,
      completedAt: o.completedAt,
      ...(o.acknowledged === null
        ? {}
        : { acknowledgedAt: o.acknowledged.at, acknowledgedByName: o.acknowledged.byName }),
    },
    attachments: o.documents.flatMap((d, i) =>
      d.included
        ? [
            {
              id: `file-${i}`,
              number: i + 1,
              fileName: d.fileName,
              mediaType: 'application/pdf',
              sizeBytes: 1024 * (i + 1),
              sha256: String(i).repeat(64),
            },
          ]
        : [],
    ),
  };
}

/** `events` slotted into the timeline at the given positions, as later writes interleave with it. */
function withInterleaved(
  timeline: readonly TimelineEventView[],
  events: readonly (Omit<TimelineEventView, 'id'> & { at: number })[],
): TimelineEventView[] {
  const out = [...timeline];
  events.forEach((e, i) => {
    const { at, ...event } = e;
    out.splice(at % (out.length + 1), 0, { ...event, id: `bookkeeping-${i}` });
  });
  return out;
}

describe('the EHR form of any referral', () => {
  it('is the same bytes every time it is rendered, from the referral or an equal copy', () => {
    fc.assert(
      fc.property(referral, fc.constantFrom(...ZONES), (source, zone) => {
        const display = displayTimeIn(zone);
        const first = renderEhrForm(source, display);
        expect(renderEhrForm(source, display)).toEqual(first);
        expect(renderEhrForm(structuredClone(source), displayTimeIn(zone))).toEqual(first);
      }),
      { numRuns: NUM_RUNS },
    );
  });

  it('does not change when bookkeeping is recorded, the version bumped or the update time stamped', () => {
    const bookkeeping = fc.array(
      fc.tuple(eventArbitrary(BOOKKEEPING_TYPES), fc.nat()).map(([e, at]) => ({ ...e, at })),
      { minLength: 1, maxLength: 5 },
    );
    fc.assert(
      fc.property(
        referral,
        bookkeeping,
        fc.integer({ min: 1, max: 10_000 }),
        instant,
        fc.constantFrom(...ZONES),
        (source, events, version, updatedAt, zone) => {
          const display = displayTimeIn(zone);
          const before = renderEhrForm(source, display).html;
          const after = renderEhrForm(
            {
              ...source,
              version: source.version + version,
              updatedAt,
              timelineEvents: withInterleaved(source.timelineEvents, events),
            },
            display,
          ).html;
          expect(after).toBe(before);
        },
      ),
      { numRuns: NUM_RUNS },
    );
  });
});

describe('the EHR form on another machine', () => {
  it('is the same bytes in a process with another time zone and locale', () => {
    const root = path.resolve(import.meta.dirname, '../..');
    const script = `
      import { createHash } from 'node:crypto';
      import { renderEhrForm } from ${JSON.stringify(path.join(root, 'src/render/ehr-form.ts'))};
      import { sampleEhrFormSource } from ${JSON.stringify(path.join(root, 'test/support/fixtures/ehr-form-source.ts'))};
      const html = renderEhrForm(sampleEhrFormSource()).html;
      process.stdout.write(createHash('sha256').update(html).digest('hex'));
    `;
    const there = execFileSync(process.execPath, ['--input-type=module', '-e', script], {
      env: childEnv({ TZ: 'America/Los_Angeles', LANG: 'de_DE.UTF-8', LC_ALL: 'de_DE.UTF-8' }),
      encoding: 'utf8',
    });
    const here = createHash('sha256').update(renderEhrForm(sampleEhrFormSource()).html).digest('hex');
    expect(there).toBe(here);
  });
});
