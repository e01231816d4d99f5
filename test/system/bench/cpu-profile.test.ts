// Attributing a CPU profile to the stages of a forward: by the innermost frame of ours on a sample's
// stack, shared code counting for its caller, libraries standing in when no frame of ours is there.
import { describe, expect, it } from 'vitest';
import {
  attributeProfile,
  formatStageTable,
  perReferral,
  sumStageTimes,
  type CpuProfile,
} from '../../../bench/cpu-profile.ts';
import { windowRate } from '../../../bench/scenarios/growth.ts';

const SRC = 'file:///app/src';
const NM = 'file:///app/node_modules';

/** A profile from stacks (outermost first) and each one's sample duration in µs. */
function profileOf(samples: readonly { stack: readonly [string, string][]; micros: number }[]): CpuProfile {
  const nodes: { id: number; callFrame: { functionName: string; url: string }; children: number[] }[] = [
    { id: 1, callFrame: { functionName: '(root)', url: '' }, children: [] },
  ];
  const leafOf = (stack: readonly [string, string][]) => {
    let parent = nodes[0]!;
    for (const [functionName, url] of stack) {
      let child = parent.children
        .map((id) => nodes.find((n) => n.id === id)!)
        .find((n) => n.callFrame.functionName === functionName && n.callFrame.url === url);
      if (child === undefined) {
        child = { id: nodes.length + 1, callFrame: { functionName, url }, children: [] };
        nodes.push(child);
        parent.children.push(child.id);
      }
      parent = child;
    }
    return parent.id;
  };
  const ids = samples.map((s) => leafOf(s.stack));
  // A sample lasts until the next one: the deltas are shifted by one.
  const timeDeltas = [0, ...samples.slice(0, -1).map((s) => s.micros)];
  const total = samples.reduce((sum, s) => sum + s.micros, 0);
  return { nodes, startTime: 0, endTime: total, samples: ids, timeDeltas };
}

describe('CPU profile attribution', () => {
  it('gives a sample to the innermost stage frame, and shared code to its caller', () => {
    const profile = profileOf([
      // The driver's work for a ledger write counts for the record.
      {
        stack: [
          ['recordAttempt', `${SRC}/services/forwarding.service.ts`],
          ['executeQuery', `${NM}/kysely/dist/x.js`],
          ['query', `${NM}/pg/lib/client.js`],
        ],
        micros: 300,
      },
      // The plan, in the same file, is the job's re-read.
      { stack: [['plan', `${SRC}/services/forwarding.service.ts`]], micros: 100 },
      // The self-contained check inside the forward is the check, not the job.
      {
        stack: [
          ['forwardReferral', `${SRC}/workers/forwarding/forward-referral.ts`],
          ['assertSelfContained', `${SRC}/render/self-contained.ts`],
        ],
        micros: 50,
      },
      // The timeline writer is shared: under the record it is the record’s; under a route, the submit’s.
      {
        stack: [
          ['recordAttempt', `${SRC}/services/forwarding.service.ts`],
          ['timelineEventsOf', `${SRC}/services/referrals/mutation.ts`],
        ],
        micros: 20,
      },
      {
        stack: [
          ['handler', `${SRC}/api/routes/referrals.routes.ts`],
          ['timelineEventsOf', `${SRC}/services/referrals/mutation.ts`],
        ],
        micros: 40,
      },
      // No frame of ours: the library decides; then the leftovers.
      { stack: [['parse', `${NM}/pg-protocol/dist/parser.js`]], micros: 70 },
      { stack: [['write', `${NM}/sonic-boom/index.js`]], micros: 5 },
      { stack: [['(garbage collector)', '']], micros: 30 },
      { stack: [['(idle)', '']], micros: 1000 },
      { stack: [['compile', 'node:internal/modules/esm/utils']], micros: 500 },
      { stack: [['listOnTimeout', 'node:internal/timers']], micros: 9 },
    ]);
    const times = attributeProfile(profile);
    expect(times.busyMicros).toEqual({
      'submit request': 40,
      relay: 0,
      job: 100,
      render: 0,
      check: 50,
      send: 0,
      record: 320,
      'database driver, async': 70,
      'log writes, async': 5,
      'garbage collection': 30,
      'start-up': 500,
      other: 9,
    });
    expect(times.idleMicros).toBe(1000);
    expect(times.totalMicros).toBe(2124);
  });

  it('divides by the referrals, leaves start-up out, and adds profiles up', () => {
    const one = attributeProfile(
      profileOf([
        { stack: [['render', `${SRC}/render/ehr-form.ts`]], micros: 4000 },
        { stack: [['send', `${SRC}/workers/forwarding/ehr-client.ts`]], micros: 2000 },
        { stack: [['boot', 'node:internal/modules/run_main']], micros: 9000 },
      ]),
    );
    const both = sumStageTimes([one, one]);
    const rows = perReferral(both, 4);
    expect(rows.find((r) => r.stage === 'render')).toEqual({
      stage: 'render',
      msPerReferral: 2,
      share: 2 / 3,
    });
    expect(rows.find((r) => r.stage === 'send')?.msPerReferral).toBe(1);
    expect(rows.some((r) => r.stage === 'start-up')).toBe(false);
    const table = formatStageTable(rows, 4, both.busyMicros['start-up']);
    expect(table).toContain('render');
    expect(table).toMatch(/total\s+3\.000/);
    expect(table).toContain('start-up (0.0 s of CPU)');
    expect(() => perReferral(both, 0)).toThrow(RangeError);
  });
});

describe('the rate over a window of deliveries', () => {
  it('counts from the sample that reached the start to the one that reached the end', () => {
    const samples = [
      { at: 0, count: 0 },
      { at: 1000, count: 900 },
      { at: 2000, count: 1100 },
      { at: 4000, count: 2500 },
      { at: 6000, count: 4100 },
    ];
    // From 1,100 at 2 s to 4,100 at 6 s: 3,000 in 4 s.
    expect(windowRate(samples, 1000, 4000)).toBe(750);
  });

  it('is NaN when the window was never reached', () => {
    expect(windowRate([{ at: 0, count: 10 }], 1000, 4000)).toBeNaN();
  });
});
