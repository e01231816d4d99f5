// Where a refhub process's CPU time goes, stage by stage, from a V8 CPU profile (`--cpu-prof`).
//
// Each sample of the profile is one stack; its time is the interval to the next sample. A sample is
// attributed to the stage of the innermost frame on its stack that belongs to a stage (rules by file
// and, where one file serves two stages, by function). Frames of shared code (the PostgreSQL driver,
// Kysely, the store's executor, the domain, the logger, Node's internals) belong to no stage, so their
// time goes to the stage of the code that called them: a statement's encoding counts for the
// repository that ran it. Work that runs with no caller of ours on the stack (a socket's bytes parsed
// when they arrive, a timer) cannot be traced that way; it is attributed by the library it runs in
// (pg → "database driver, async", BullMQ and ioredis → job, undici → send, Fastify → submit request),
// and what is left is reported as it is (garbage collection, idle, other). No I/O here: `npm test`
// checks it.

/** The parts of `.cpuprofile` JSON this module reads. */
export interface CpuProfile {
  readonly nodes: readonly {
    readonly id: number;
    readonly callFrame: { readonly functionName: string; readonly url: string };
    readonly children?: readonly number[];
  }[];
  readonly startTime: number;
  readonly endTime: number;
  readonly samples: readonly number[];
  /** Microseconds since the previous sample (the first: since startTime). */
  readonly timeDeltas: readonly number[];
}

export const STAGES = [
  'submit request',
  'relay',
  'job',
  'render',
  'check',
  'send',
  'record',
  'database driver, async',
  'log writes, async',
  'garbage collection',
  'start-up',
  'other',
] as const;
export type Stage = (typeof STAGES)[number];

export interface StageRule {
  /** null: shared code, which counts for the stage of its caller. */
  readonly stage: Stage | null;
  /** Matched against the frame's URL (a file: URL or a node: name). */
  readonly url: RegExp;
  /** When set, the frame's function name must match too. */
  readonly fn?: RegExp;
}

/**
 * Frames that are a stage's own code. The first rule that matches a frame decides; order the narrow
 * ones (a function of a file) before the broad ones (the file).
 */
export const STAGE_RULES: readonly StageRule[] = [
  // Shared by the submit and the forward: the timeline rows, the audit row, the form's source.
  {
    stage: null,
    url: /\/src\/services\/referrals\/mutation\.ts$/,
    fn: /^(timelineEventsOf|timelineViewsOf)$/,
  },
  { stage: null, url: /\/src\/db\/audit(\/|\.repository\.ts$)/ },
  {
    stage: null,
    url: /\/src\/services\/referrals\/queries\.ts$/,
    fn: /^(ehrFormSourceFor|ehrFormSourceOf)$/,
  },
  // The forward's ledger service: its plan (the job's re-read of the referral) is the job's; keeping
  // the form and recording the attempt are the record.
  { stage: 'job', url: /\/src\/services\/forwarding\.service\.ts$/, fn: /^(plan|withdraw)$/ },
  { stage: 'record', url: /\/src\/services\/forwarding\.service\.ts$/ },
  { stage: 'record', url: /\/src\/db\/forwarding\/(ledger|forms)\.ts$/ },
  { stage: 'check', url: /\/src\/render\/self-contained\.ts$/ },
  { stage: 'render', url: /\/src\/render\// },
  { stage: 'send', url: /\/src\/(workers\/forwarding\/ehr-client|domain\/forwarding\/content-digest)\.ts$/ },
  // Building the request body (JSON of the form) is sending's preparation.
  { stage: 'send', url: /\/src\/workers\/forwarding\/forward-referral\.ts$/, fn: /^forwardRequest$/ },
  { stage: 'job', url: /\/src\/workers\/forwarding\/(forward-referral|forward-policy|ehr-circuit)\.ts$/ },
  { stage: 'job', url: /\/src\/db\/forwarding\/circuit\.ts$/ },
  { stage: 'job', url: /\/src\/workers\// },
  { stage: 'relay', url: /\/src\/queue\/(outbox-relay|producer)\.ts$/ },
  { stage: 'relay', url: /\/src\/db\/outbox\.repository\.ts$/ },
  // A submit's reminder schedule is made when the relay dispatches its row.
  { stage: 'relay', url: /\/src\/(services\/reminders\.service|db\/reminders\.repository)\.ts$/ },
  { stage: 'submit request', url: /\/src\/api\// },
  {
    stage: 'submit request',
    url: /\/src\/services\/(referrals\/|links\/|caller\.ts$|input-rules\.ts$|api-key\.service\.ts$)/,
  },
  { stage: 'submit request', url: /\/src\/db\/(idempotency|api-key|links)\.repository\.ts$/ },
];

/**
 * Libraries, by their folder under node_modules, that stand for a stage when no frame of ours is on
 * the stack: their work then ran for that stage's I/O. Searched from the innermost frame out.
 */
export const LIBRARY_STAGES: readonly StageRule[] = [
  {
    stage: 'database driver, async',
    url: /\/node_modules\/(pg|pg-protocol|pg-pool|pg-types|postgres-[a-z]+)\//,
  },
  {
    stage: 'job',
    url: /\/node_modules\/(bullmq|ioredis|msgpackr|cluster-key-slot|redis-errors|redis-parser)\//,
  },
  { stage: 'send', url: /\/node_modules\/undici\// },
  {
    stage: 'submit request',
    url: /\/node_modules\/(fastify|@fastify\/[^/]+|find-my-way|avvio|light-my-request|fast-json-stringify|secure-json-parse)\//,
  },
  { stage: 'submit request', url: /^node:_http_(server|incoming|outgoing|common)$/ },
  { stage: 'log writes, async', url: /\/node_modules\/(pino|sonic-boom|thread-stream|on-exit-leak-free)\// },
];

/** Loading modules: the process's start, not the work of any referral. */
const START_UP = /^node:internal\/(modules|deps\/amaro|bootstrap)\//;

/** The first rule matching `frame`: a stage, null for shared code, undefined for none. */
function matchRule(
  rules: readonly StageRule[],
  frame: { functionName: string; url: string },
): Stage | null | undefined {
  for (const rule of rules) {
    if (!rule.url.test(frame.url)) continue;
    if (rule.fn !== undefined && !rule.fn.test(frame.functionName)) continue;
    return rule.stage;
  }
  return undefined;
}

/** CPU time by stage, in microseconds, and the profile's idle time (which is not CPU time). */
export interface StageTimes {
  readonly busyMicros: Readonly<Record<Stage, number>>;
  readonly idleMicros: number;
  readonly totalMicros: number;
}

/** The stage of every node of `profile` (by its stack), and each sample's duration, summed. */
export function attributeProfile(
  profile: CpuProfile,
  rules: readonly StageRule[] = STAGE_RULES,
  libraries: readonly StageRule[] = LIBRARY_STAGES,
): StageTimes {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parentOf = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parentOf.set(child, node.id);
  const stageOf = new Map<number, Stage | 'idle'>();
  const classify = (id: number): Stage | 'idle' => {
    const known = stageOf.get(id);
    if (known !== undefined) return known;
    const leaf = byId.get(id)?.callFrame.functionName;
    let stage: Stage | 'idle' | undefined =
      leaf === '(idle)' ? 'idle' : leaf === '(garbage collector)' ? 'garbage collection' : undefined;
    const stack: { functionName: string; url: string }[] = [];
    for (let at: number | undefined = id; at !== undefined; at = parentOf.get(at)) {
      const frame = byId.get(at)?.callFrame;
      if (frame !== undefined) stack.push(frame);
    }
    if (stage === undefined && stack.some((f) => START_UP.test(f.url))) stage = 'start-up';
    for (const rules_ of [rules, libraries]) {
      for (const frame of stack) {
        if (stage !== undefined) break;
        stage = matchRule(rules_, frame) ?? undefined;
      }
    }
    const result = stage ?? 'other';
    stageOf.set(id, result);
    return result;
  };
  const busy = Object.fromEntries(STAGES.map((s) => [s, 0])) as Record<Stage, number>;
  let idle = 0;
  let at = profile.startTime;
  const times = profile.samples.map((_, i) => (at += profile.timeDeltas[i] ?? 0));
  profile.samples.forEach((nodeId, i) => {
    // A sample lasts until the next one (the last until the profile's end), as DevTools counts it.
    const next = times[i + 1] ?? profile.endTime;
    const duration = Math.max(0, next - (times[i] ?? next));
    const stage = classify(nodeId);
    if (stage === 'idle') idle += duration;
    else busy[stage] += duration;
  });
  const total = Object.values(busy).reduce((a, b) => a + b, 0) + idle;
  return { busyMicros: busy, idleMicros: idle, totalMicros: total };
}

/** Adds the stage times of several profiles (one per process). */
export function sumStageTimes(all: readonly StageTimes[]): StageTimes {
  const busy = Object.fromEntries(STAGES.map((s) => [s, 0])) as Record<Stage, number>;
  let idle = 0;
  let total = 0;
  for (const t of all) {
    for (const s of STAGES) busy[s] += t.busyMicros[s];
    idle += t.idleMicros;
    total += t.totalMicros;
  }
  return { busyMicros: busy, idleMicros: idle, totalMicros: total };
}

export interface StageRow {
  readonly stage: Stage;
  /** CPU milliseconds per referral. */
  readonly msPerReferral: number;
  /** The stage's share of the process's busy time (0–1). */
  readonly share: number;
}

/** The stages that count per referral: all but the process's start-up. */
export const PER_REFERRAL_STAGES = STAGES.filter((s) => s !== 'start-up');

/**
 * Per-referral CPU of each stage, for `referrals` referrals submitted and forwarded while the profile
 * ran; the process's start-up is left out (it is no referral's work).
 */
export function perReferral(times: StageTimes, referrals: number): StageRow[] {
  if (!Number.isInteger(referrals) || referrals <= 0) throw new RangeError('at least one referral');
  const busyTotal = PER_REFERRAL_STAGES.reduce((sum, s) => sum + times.busyMicros[s], 0);
  return PER_REFERRAL_STAGES.map((stage) => ({
    stage,
    msPerReferral: times.busyMicros[stage] / 1000 / referrals,
    share: busyTotal === 0 ? 0 : times.busyMicros[stage] / busyTotal,
  }));
}

/** The per-stage table as text: stage, ms of CPU per referral, share of busy time. */
export function formatStageTable(rows: readonly StageRow[], referrals: number, startUpMicros = 0): string {
  const total = rows.reduce((sum, r) => sum + r.msPerReferral, 0);
  const width = Math.max('stage'.length, 'total'.length, ...rows.map((r) => r.stage.length));
  const line = (a: string, b: string, c: string) => `${a.padEnd(width)}  ${b.padStart(12)}  ${c.padStart(7)}`;
  return [
    line('stage', 'CPU ms/ref', 'share'),
    line('-'.repeat(width), '-'.repeat(12), '-'.repeat(7)),
    ...rows.map((r) => line(r.stage, r.msPerReferral.toFixed(3), `${(r.share * 100).toFixed(1)}%`)),
    line('total', total.toFixed(3), '100%'),
    '',
    `${referrals} referrals submitted and forwarded while the profile ran; start-up (${(startUpMicros / 1e6).toFixed(1)} s ` +
      'of CPU) is left out; timers and polling while idle count under other. A sampled profile counts ' +
      'the time its thread was running or waiting for a core, so on a machine short of CPU read the ' +
      'shares, and scale them by the process’s own CPU time per referral',
  ].join('\n');
}
