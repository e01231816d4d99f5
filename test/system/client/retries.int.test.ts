// How @refhub/client retries, shown against a real refhub behind a real proxy that turns requests
// away, loses answers or holds them. Writes are resent only with their Idempotency-Key (so refhub
// replays instead of acting twice) or when refhub did not act (408, 429, 503); Retry-After is
// honoured up to a bound; attempts are bounded; a PUT, PATCH or DELETE that got no answer is not resent.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createRefhubClient,
  RefhubNetworkError,
  RefhubProblemError,
  type AttemptReport,
  type InstitutionClient,
  type RetryPolicy,
} from '../../../clients/typescript/src/index.ts';
import { APP_ENGINES } from '../../support/engines.ts';
import {
  startFaultyProxy,
  type Fault,
  type FaultyProxy,
  type SeenRequest,
} from '../../support/faulty-proxy.ts';
import { createTestApp, type TestApp } from '../../support/test-app.ts';

const REQUESTER = 'dr.lim@bukittimah.example';

describe.each(APP_ENGINES)('@refhub/client retries, on %s', (engine) => {
  let t: TestApp;
  let direct: InstitutionClient;
  let proxy: FaultyProxy | undefined;
  let baseUrl: string;

  beforeAll(async () => {
    t = await createTestApp(engine);
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    const address = t.app.server.address();
    if (address === null || typeof address === 'string') throw new Error('refhub is not listening on a port');
    baseUrl = `http://127.0.0.1:${address.port}`;
    direct = createRefhubClient({ baseUrl, apiKey: t.sender.key }).actingFor({
      ...t.sender.institution,
      requesterIdentifier: REQUESTER,
    });
  });
  afterAll(async () => {
    await proxy?.close();
    await t.close();
  });

  /** A client that talks to refhub through a proxy judging each request with `decide`. */
  async function through(decide: (request: SeenRequest) => Fault, retry: RetryPolicy = {}) {
    await proxy?.close();
    proxy = await startFaultyProxy(baseUrl, decide);
    const attempts: AttemptReport[] = [];
    const client = createRefhubClient({
      baseUrl: proxy.url,
      apiKey: t.sender.key,
      retry: { baseDelayMs: 10, ...retry },
      onAttempt: (attempt) => attempts.push(attempt),
    }).actingFor({ ...t.sender.institution, requesterIdentifier: REQUESTER });
    return { client, attempts, seen: proxy.seen };
  }

  async function failure(call: Promise<unknown>): Promise<unknown> {
    try {
      await call;
    } catch (error) {
      return error;
    }
    throw new Error('the call succeeded, but a failure was expected');
  }

  it('waits as long as Retry-After says after a 503, then succeeds', async () => {
    const { client, attempts, seen } = await through((r) =>
      r.index === 0 ? { kind: 'answer', status: 503, headers: { 'retry-after': '1' } } : { kind: 'forward' },
    );
    const created = await client.createReferral({ offeringId: 'cgh-gastro' });
    expect(created.coreStatus).toBe('draft');
    expect(attempts.map((a) => [a.status, a.retryInMs])).toEqual([
      [503, 1000],
      [201, undefined],
    ]);
    expect(seen[1]?.headers['idempotency-key']).toBe(seen[0]?.headers['idempotency-key']);
  });

  it('retries 408 and 429 with backoff, and gives up on a Retry-After longer than it may wait', async () => {
    const statuses = [408, 429];
    const { client, attempts } = await through((r) =>
      r.index < statuses.length ? { kind: 'answer', status: statuses[r.index]! } : { kind: 'forward' },
    );
    const referral = client.referral((await direct.createReferral({ offeringId: 'cgh-gastro' })).id);
    expect((await referral.read()).coreStatus).toBe('draft');
    expect(attempts.map((a) => a.status)).toEqual([408, 429, 200]);

    const patient = await through(
      () => ({ kind: 'answer', status: 429, headers: { 'retry-after': '120' } }),
      {
        maxDelayMs: 5_000,
      },
    );
    const error = await failure(patient.client.referral(referral.id).read());
    expect(error).toBeInstanceOf(RefhubProblemError);
    if (error instanceof RefhubProblemError) expect(error.status).toBe(429);
    expect(patient.seen).toHaveLength(1);
  });

  it('stops after the attempts the policy allows', async () => {
    const { client, seen } = await through(() => ({ kind: 'answer', status: 503 }), { attempts: 3 });
    const error = await failure(client.createReferral({ offeringId: 'cgh-gastro' }));
    expect(error).toBeInstanceOf(RefhubProblemError);
    if (error instanceof RefhubProblemError) expect(error.problem.code).toBe('http_503');
    expect(seen).toHaveLength(3);
    expect(new Set(seen.map((r) => r.headers['idempotency-key'])).size).toBe(1);
  });

  it('retries a create whose attempt timed out with the same key: refhub replays, one draft exists', async () => {
    const patientUin = 'S2222222D';
    const { client, attempts, seen } = await through(
      (r) => (r.index === 0 ? { kind: 'delay', ms: 1_500 } : { kind: 'forward' }),
      { attemptTimeoutMs: 500 },
    );
    const created = await client.createReferral({ offeringId: 'cgh-gastro', patientUin });
    expect(attempts[0]?.error).toBe('timeout');
    expect(attempts.at(-1)).toMatchObject({ status: 201 });
    expect(new Set(seen.map((r) => r.headers['idempotency-key'])).size).toBe(1);
    const found: string[] = [];
    for await (const summary of direct.search({ patientUin })) found.push(summary.id);
    expect(found).toEqual([created.id]);
  });

  it('resends a read whose answer was lost', async () => {
    const id = (await direct.createReferral({ offeringId: 'cgh-gastro' })).id;
    const { client, attempts } = await through((r) =>
      r.index === 0 ? { kind: 'lose-answer' } : { kind: 'forward' },
    );
    expect((await client.referral(id).read()).id).toBe(id);
    expect(attempts.map((a) => a.error ?? a.status)).toEqual(['network', 200]);
  });

  it('does not resend a PATCH whose answer was lost: the caller reads to learn what happened', async () => {
    const created = await direct.createReferral({ offeringId: 'cgh-gastro' });
    const { client, seen } = await through(() => ({ kind: 'lose-answer' }));
    const error = await failure(client.referral(created).update({ clinicalInfo: 'Changed once.' }));
    expect(error).toBeInstanceOf(RefhubNetworkError);
    if (error instanceof RefhubNetworkError) expect(error.attempts).toBe(1);
    expect(seen).toHaveLength(1);
    const now = await direct.referral(created.id).read();
    expect(now.clinicalInfo).toBe('Changed once.');
    expect(now.version).toBe(created.version + 1);
  });
});
