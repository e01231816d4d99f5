// Renders per second of the EHR form, for a typical referral and for the largest one the API allows,
// against a bare renderer of the same data (baselines.ts). Rendering is pure CPU, so it runs here in
// the benchmark's process while nothing else is under load; each render is timed on its own, which
// gives a median and a tail as well as a rate.
import { renderEhrForm } from '../../src/render/ehr-form.ts';
import type { EhrFormSource } from '../../src/domain/referral-view.ts';
import { MAX_APPOINTMENTS, MAX_NOTES } from '../../src/services/referrals/commands.ts';
import { sampleEhrFormSource } from '../../test/support/fixtures/ehr-form-source.ts';
import { renderBare } from '../baselines.ts';
import { medianOfRounds, percentile, runInterleaved, type Measurement, type ResultRow } from '../stats.ts';

/** Limits of the request schemas: the longest clinical information, note, name and location. */
const MAX_TEXT = 8000;
const MAX_NAME = 200;
const MAX_LOCATION = 200;

/** A referral at every limit: the longest texts, 200 notes, 50 appointments and their timeline. */
export function largestReferral(): EhrFormSource {
  const typical = sampleEhrFormSource();
  const long = (seed: string, length: number) =>
    seed.repeat(Math.ceil(length / seed.length)).slice(0, length);
  const name = long('Tan Ah Kow <&> ', MAX_NAME);
  const at = (i: number) => new Date(Date.UTC(2026, 5, 1, 0, i)).toISOString();
  const notes = Array.from({ length: MAX_NOTES }, (_, i) => ({
    id: `0197a2b0-3000-7000-8000-${String(i).padStart(12, '0')}`,
    content: long(`Note ${i}: the patient called about the appointment & asked "when?".\n`, MAX_TEXT),
    authorName: name,
    authorInstitution: typical.sender,
    createdAt: at(i),
  }));
  const appointments = Array.from({ length: MAX_APPOINTMENTS }, (_, i) => ({
    id: `appt-${i}`,
    status: 'scheduled' as const,
    startAt: at(1000 + i),
    location: long(`Clinic ${i}, Level 3 <east wing> `, MAX_LOCATION),
    updatedAt: at(i),
  }));
  const timelineEvents = [
    ...typical.timelineEvents,
    ...notes.map((n, i) => ({
      id: `0197a2b0-4000-7000-8000-${String(i).padStart(12, '0')}`,
      type: 'note.created',
      system: 'ClinicOne',
      description: `${name} added a note.`,
      producedAt: n.createdAt,
    })),
    ...appointments.map((a, i) => ({
      id: `0197a2b0-5000-7000-8000-${String(i).padStart(12, '0')}`,
      type: 'appt.scheduled',
      system: 'TTSH-EPIC',
      description: `${name} scheduled an appointment for ${a.startAt} at ${a.location}.`,
      producedAt: a.updatedAt,
    })),
  ];
  return {
    ...typical,
    patient: { ...typical.patient, name },
    referrer: { ...typical.referrer, name },
    clinicalInfo: long('Exertional chest tightness <2 weeks> & breathless.\n', MAX_TEXT),
    notes,
    appointments,
    timelineEvents,
  };
}

/** Renders for `seconds`, timing each render; the rate is renders per second. */
export function timeRenders(render: () => unknown, seconds: number): Measurement {
  const durations: number[] = [];
  const started = performance.now();
  const until = started + seconds * 1000;
  for (let now = started; now < until;) {
    render();
    const done = performance.now();
    durations.push(done - now);
    now = done;
  }
  const elapsed = (performance.now() - started) / 1000;
  return {
    rate: durations.length / elapsed,
    p50: percentile(durations, 50),
    tail: percentile(durations, 99),
    rssMiB: Number.NaN,
    errors: 0,
  };
}

export async function renderScenario(plan: { rounds: number; seconds: number }): Promise<ResultRow[]> {
  const cases = [
    { scenario: 'render typical', source: sampleEhrFormSource() },
    { scenario: 'render largest', source: largestReferral() },
  ];
  const rows: ResultRow[] = [];
  for (const { scenario, source } of cases) {
    // Warm-up: the JIT compiles the templates before anything is timed.
    timeRenders(() => renderEhrForm(source), 0.5);
    timeRenders(() => renderBare(source), 0.5);
    const rounds = await runInterleaved(plan.rounds, (turn) =>
      Promise.resolve(
        turn.side === 'refhub'
          ? timeRenders(() => renderEhrForm(source), plan.seconds)
          : timeRenders(() => renderBare(source), plan.seconds),
      ),
    );
    const refhub = medianOfRounds(rounds.refhub);
    const bytes = renderEhrForm(source).html.length;
    rows.push({
      scenario,
      unit: 'renders/s',
      refhub,
      baseline: medianOfRounds(rounds.baseline),
      baselineName: 'every value escaped into a bare document',
      rounds: plan.rounds,
      note: `${(bytes / 1024).toFixed(0)} KiB of HTML; latencies are per render, in ms`,
      ...(scenario === 'render typical' ? { goal: { text: 'median < 0.5 ms', met: refhub.p50 < 0.5 } } : {}),
    });
  }
  return rows;
}
