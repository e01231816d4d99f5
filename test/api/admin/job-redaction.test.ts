// The dashboard's second line of defence: whatever a worker leaves on a job, only IDs, numbers and
// our own enum words reach a bull-board response. The canary patient's values are planted in every
// field bull-board shows, one by one and at random.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  JOB_LOGS_ROUTE,
  NOT_SHOWN,
  REASON_NOT_SHOWN,
  isSafeToken,
  redactBoardBody,
  redactBody,
  redactData,
  redactOpts,
  redactReason,
  redactResult,
} from '../../../src/api/admin/job-redaction.ts';
import { RetryableForwardError } from '../../../src/workers/forwarding/forward-policy.ts';
import { CANARY, CANARY_MARKERS } from '../../support/fixtures/patients.ts';

const REFERRAL = '01970a4e-1c2b-7d3e-8f40-123456789abc';
const REQUEST = '01970a4e-1c2b-7d3e-8f40-abcdefabcdef';

/** A job as bull-board's formatJob hands it out. */
function job(fields: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    id: `${REFERRAL}.v2`,
    name: 'forward',
    timestamp: 1_780_000_000_000,
    processedOn: 1_780_000_000_010,
    finishedOn: 1_780_000_000_020,
    progress: 0,
    attempts: 1,
    failedReason: 'HTTP_422',
    stacktrace: ['UnrecoverableError: HTTP_422\n    at forwardReferral (ehr-forward.worker.ts:120:11)'],
    opts: {
      jobId: `${REFERRAL}.v2`,
      attempts: 10,
      backoff: { type: 'ehr' },
      deduplication: { id: REFERRAL, keepLastIfActive: true },
      removeOnComplete: { age: 604_800, count: 10_000 },
    },
    data: { referralId: REFERRAL, version: 2, requestId: REQUEST },
    returnValue: null,
    isFailed: true,
    deduplicationId: REFERRAL,
    ...fields,
  };
}

const serialized = (value: unknown) => JSON.stringify(value);

function expectNoCanary(value: unknown): void {
  const text = serialized(value);
  for (const marker of CANARY_MARKERS) expect(text).not.toContain(marker);
}

describe('redacting job data', () => {
  it('keeps the IDs a forward job carries', () => {
    expect(redactData({ referralId: REFERRAL, version: 3, requestId: REQUEST })).toEqual({
      referralId: REFERRAL,
      version: 3,
      requestId: REQUEST,
    });
    expect(redactData({ referralId: REFERRAL })).toEqual({ referralId: REFERRAL });
  });

  it('hides a value that is not an ID where an ID belongs, and counts fields it does not know', () => {
    expect(
      redactData({
        referralId: CANARY.patientUin,
        version: CANARY.dob,
        requestId: CANARY.patientName,
        patientName: CANARY.patientName,
        [CANARY.patientName]: 1,
      }),
    ).toEqual({ referralId: NOT_SHOWN, version: NOT_SHOWN, requestId: NOT_SHOWN, [NOT_SHOWN]: 2 });
    expect(redactData(CANARY.patientName)).toBe(NOT_SHOWN);
    expect(redactData([REFERRAL])).toBe(NOT_SHOWN);
    expect(redactData(null)).toBeNull();
  });
});

describe('redacting error reasons', () => {
  it.each([
    'HTTP_422',
    'HTTP_503',
    'UND_ERR_SOCKET',
    'UND_ERR_HEADERS_TIMEOUT',
    'ECONNRESET',
    'EAI_AGAIN',
    'not_self_contained',
    'render_failed',
    'job stalled more than allowable limit',
  ])('shows the code %s', (reason) => {
    expect(redactReason(reason)).toBe(reason);
  });

  it('shows the retryable forward error exactly as the worker words it', () => {
    const message = new RetryableForwardError('HTTP_503', 1000).message;
    expect(redactReason(message)).toBe(message);
  });

  it.each([
    CANARY.patientName,
    CANARY.patientUin,
    CANARY.dob,
    CANARY.patientPhoneNumber,
    `duplicate key value violates unique constraint: Key (uin)=(${CANARY.patientUin})`,
    `EHR forward failed (${CANARY.patientUin}); it will be retried`,
    'Canaryquokka',
  ])('hides %s', (reason) => {
    expect(redactReason(reason)).toBe(REASON_NOT_SHOWN);
  });
});

describe('redacting return values and options', () => {
  it('shows what asked for a wait-times run, and nothing else in its place', () => {
    expect(redactData({ trigger: 'start' })).toEqual({ trigger: 'start' });
    expect(redactData({ trigger: 'schedule' })).toEqual({ trigger: 'schedule' });
    expect(redactData({ trigger: CANARY.patientName })).toEqual({ trigger: NOT_SHOWN });
    expect(redactResult({ offerings: 7, withFigures: 2 })).toEqual({ offerings: 7, withFigures: 2 });
  });

  it('keeps the workers’ result words and numbers', () => {
    expect(redactResult('delivered')).toBe('delivered');
    expect(redactResult('nothing-to-send')).toBe('nothing-to-send');
    expect(redactResult({ kind: 'sent', sequence: 2, remaining: 1 })).toEqual({
      kind: 'sent',
      sequence: 2,
      remaining: 1,
    });
    expect(redactResult(undefined)).toBeUndefined();
  });

  it('hides any other string, and names only camelCase keys', () => {
    expect(redactResult(CANARY.patientName)).toBe(NOT_SHOWN);
    expect(redactResult({ kind: CANARY.patientUin, [CANARY.dob]: 1, nested: { a: 1 } })).toEqual({
      kind: NOT_SHOWN,
      nested: NOT_SHOWN,
      [NOT_SHOWN]: 1,
    });
  });

  it('keeps BullMQ’s options and hides a string that is neither a word nor an ID token', () => {
    const opts = job().opts;
    expect(redactOpts(opts)).toEqual(opts);
    expect(redactOpts({ jobId: CANARY.patientUin, repeat: { key: CANARY.patientName } })).toEqual({
      jobId: NOT_SHOWN,
      repeat: { key: NOT_SHOWN },
    });
  });

  it.each([
    ['ehr', true],
    ['exponential', true],
    [`${REFERRAL}.v12`, true],
    [`repeat:reminder.${REFERRAL}:1780000000000`, true],
    [CANARY.patientUin, false],
    [CANARY.patientPhoneNumber, false],
    [CANARY.dob, false],
    [CANARY.patientName, false],
    [`${REFERRAL} ${CANARY.patientName}`, false],
  ])('isSafeToken(%s) is %s', (token, safe) => {
    expect(isSafeToken(token)).toBe(safe);
  });
});

describe('redacting bull-board answers', () => {
  it('leaves a job of ours as it was, except for its stack trace', () => {
    const original = job();
    expect(redactBody(original)).toEqual({ ...original, stacktrace: [] });
  });

  it('redacts every job of a queue listing, and leaves the counts and the rest alone', () => {
    const listing = {
      queues: [
        {
          name: 'ehr-forward',
          counts: { failed: 1, completed: 3 },
          jobs: [
            job({
              failedReason: `Key (uin)=(${CANARY.patientUin})`,
              stacktrace: [`Error: ${CANARY.patientName}`],
              returnValue: { name: CANARY.patientName },
              progress: { patient: CANARY.patientName },
              data: { referralId: REFERRAL, version: 2, requestId: REQUEST, dob: CANARY.dob },
              deferredFailure: CANARY.patientPhoneNumber,
            }),
          ],
          pagination: { pageCount: 1, range: { start: 0, end: 9 } },
          readOnlyMode: true,
        },
      ],
    };
    const redacted = redactBody(listing) as typeof listing;
    expectNoCanary(redacted);
    expect(redacted.queues[0]?.counts).toEqual({ failed: 1, completed: 3 });
    expect(redacted.queues[0]?.jobs[0]).toMatchObject({
      id: `${REFERRAL}.v2`,
      failedReason: REASON_NOT_SHOWN,
      stacktrace: [],
      returnValue: { name: NOT_SHOWN },
      progress: 0,
      data: { referralId: REFERRAL, version: 2, requestId: REQUEST, [NOT_SHOWN]: 1 },
      deferredFailure: REASON_NOT_SHOWN,
    });
  });

  it('redacts one job, a scheduler’s template and a flow node', () => {
    expectNoCanary(redactBody({ job: job({ returnValue: CANARY.patientName }), status: 'failed' }));
    expectNoCanary(
      redactBody({
        schedulers: [
          {
            id: `reminder.${REFERRAL}`,
            queueName: 'reminders',
            name: 'reminder',
            every: 86_400_000,
            template: { data: { referralId: REFERRAL, uin: CANARY.patientUin }, opts: { note: CANARY.dob } },
          },
        ],
      }),
    );
    expectNoCanary(
      redactBody({
        nodeId: 'x',
        isFlowNode: true,
        flowRoot: {
          id: 'x',
          name: 'forward',
          state: 'failed',
          progress: CANARY.patientName,
          queueName: 'ehr-forward',
          children: [],
          ignoredChildFailureReasons: { child: CANARY.patientName },
        },
      }),
    );
  });

  it('answers job logs with nothing, since a log line could say anything', () => {
    expect(redactBoardBody(JOB_LOGS_ROUTE, 200, [`processing ${CANARY.patientName}`])).toEqual([]);
    const notFound = { error: { key: 'ERRORS.QUEUE_NOT_FOUND' } };
    expect(redactBoardBody(JOB_LOGS_ROUTE, 404, notFound)).toEqual(notFound);
  });

  it('lets no canary value through any field a job shows, whatever shape it comes in', () => {
    const text = fc.oneof(
      fc.constantFrom(...CANARY_MARKERS, CANARY.clinicalInfo),
      fc.string({ maxLength: 12 }),
    );
    const value = fc.anything({
      key: text,
      values: [text, fc.integer(), fc.boolean(), fc.constant(null)],
      maxDepth: 3,
    });
    fc.assert(
      fc.property(
        fc.record({
          data: value,
          returnValue: value,
          failedReason: text,
          deferredFailure: text,
          stacktrace: fc.array(text, { maxLength: 3 }),
          progress: value,
          opts: value,
        }),
        (fields) => {
          expectNoCanary(redactBody({ queues: [{ name: 'ehr-forward', jobs: [job(fields)] }] }));
        },
      ),
      { numRuns: 500 },
    );
  });
});
