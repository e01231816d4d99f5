// Webhook delivery end to end, with real receivers (node:http servers), the relay and the worker on
// real Redis, and the sandbox EHR: every timeline event the spec names, and refhub's own, reach the
// right institution's subscription within seconds and no other; every delivery verifies with the
// `standardwebhooks` package; failures are retried (500, timeouts) except 410, which disables; a
// subscription that keeps failing is disabled; and no patient data reaches a receiver, Redis or logs,
// not even where a person typed it into a cancel note or an appointment's location.
import { sql } from 'kysely';
import { Webhook } from 'standardwebhooks';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { webhookJobId } from '../../../src/queue/registry.ts';
import { createBridgeApp, eventually, startEhr, type BridgeApp } from '../../support/bridge.ts';
import { APP_ENGINES } from '../../support/engines.ts';
import { CANARY, CANARY_MARKERS } from '../../support/fixtures/patients.ts';
import type { SandboxEhrProcess } from '../../support/sandbox-ehr-process.ts';
import { call, createDraft } from '../../support/scenarios.ts';
import type { TestParty } from '../../support/test-app.ts';
import { opsRequest } from '../../support/ops-client.ts';
import {
  startWebhookReceiver,
  type ReceivedDelivery,
  type WebhookReceiver,
} from '../../support/webhook-receiver.ts';

interface Delivered {
  type: string;
  timestamp: string;
  data: {
    id: string;
    type: string;
    referralId: string;
    referralVersion: number;
    institution: { idType: string; id: string };
    description: string;
  };
}

const base = (p: TestParty) =>
  `/api/v1/institutions/${p.institution.institutionIdType}/${p.institution.institutionId}/webhook-subscriptions`;

describe.each(APP_ENGINES)('webhook delivery on %s', (engine) => {
  let ehr: SandboxEhrProcess;
  let t: BridgeApp;
  const receivers: WebhookReceiver[] = [];

  beforeAll(async () => {
    ehr = await startEhr();
    t = await createBridgeApp(engine, ehr, {
      env: {
        WEBHOOK_RETRY_SCHEDULE: '50ms,50ms,50ms,50ms,50ms,50ms',
        WEBHOOK_ATTEMPT_TIMEOUT_SECONDS: '1',
        WEBHOOK_DISABLE_AFTER_SECONDS: '3',
        REMINDER_AFTER_SECONDS: '1',
        REMINDER_INTERVAL_SECONDS: '1',
        REMINDER_MAX: '1',
      },
    });
    t.startBackground();
  });
  afterEach(async () => {
    await Promise.all(receivers.splice(0).map((r) => r.close()));
  });
  afterAll(async () => {
    await t.close();
    await ehr.stop();
  });

  const receiver = async () => {
    const r = await startWebhookReceiver();
    receivers.push(r);
    return r;
  };
  const subscribe = async (who: TestParty, url: string, body: Record<string, unknown> = {}) => {
    const res = await t.request(who, { method: 'POST', url: base(who), payload: { url, ...body } });
    expect(res.statusCode, res.body).toBe(201);
    return res.json<{ id: string; secret: string }>();
  };
  /** Verifies every delivery with standardwebhooks and the subscription's secret(s); returns the bodies. */
  const verified = (deliveries: readonly ReceivedDelivery[], ...secrets: string[]) =>
    deliveries.map((d) => {
      for (const secret of secrets) new Webhook(secret).verify(d.body, d.headers);
      const body = JSON.parse(d.body) as Delivered;
      expect(d.headers['webhook-id']).toBe(body.data.id);
      return body;
    });
  const of = (referralId: string, r: WebhookReceiver) =>
    r.deliveries().filter((d) => (JSON.parse(d.body) as Delivered).data.referralId === referralId);
  const typesOf = (referralId: string, r: WebhookReceiver) =>
    of(referralId, r).map((d) => (JSON.parse(d.body) as Delivered).type);
  const until = (what: string, r: WebhookReceiver, referralId: string, types: readonly string[]) =>
    eventually(what, () => {
      const got = typesOf(referralId, r);
      return Promise.resolve(types.every((type) => got.includes(type)) ? got : undefined);
    });

  it('delivers every event type to the institutions that may see it, and to no other', async () => {
    const [senderHook, providerHook, otherProviderHook, otherSenderHook] = await Promise.all([
      receiver(),
      receiver(),
      receiver(),
      receiver(),
    ]);
    const senderSub = await subscribe(t.sender, `${senderHook.url}/refhub`);
    const providerSub = await subscribe(t.provider, `${providerHook.url}/refhub`);
    await subscribe(t.otherProvider, `${otherProviderHook.url}/refhub`);
    await subscribe(t.otherSender, `${otherSenderHook.url}/refhub`);

    const { id } = await createDraft(t, { ...CANARY });
    const url = (op: string) => `/api/v1/referrals/${id}/${op}`;
    await call(t, t.sender, 'POST', url('submit'), {});
    // The reminder fires a second after the submit, while the referral waits for acceptance.
    await until('the reminder', providerHook, id, ['referral.provider-patient-create-reminder-sent']);
    await call(t, t.provider, 'POST', url('accept'), {});
    const appointment = (appointmentId: string, status: string) =>
      call(t, t.provider, 'PUT', url(`appointments/${appointmentId}`), {
        status,
        startAt: '2030-01-15T01:30:00.000Z',
        // What a person types may name the patient: the timeline quotes it, events never do.
        location: `Home of ${CANARY.patientName}`,
      });
    await appointment('a1', 'actualized');
    await appointment('a2', 'no-show');
    await appointment('a3', 'scheduled');
    await call(t, t.provider, 'POST', url('notes'), { content: CANARY.clinicalInfo }, 201);
    await call(t, t.provider, 'POST', url('cancel'), {
      cancelNote: `${CANARY.patientName} (${CANARY.patientUin}) moved away`,
    });

    const expected = [
      'referral.pending-acceptance',
      'referral.provider-patient-create-reminder-sent',
      'referral.accepted',
      'appt.actualized',
      'appt.no-show',
      'appt.scheduled',
      'note.created',
      'appt.cancelled',
      'referral.cancelled',
      'ehr.forwarded',
    ];
    await until('the sender’s deliveries', senderHook, id, ['referral.created', ...expected]);
    await until('the provider’s deliveries', providerHook, id, expected);

    // Until every event of the referral has reached each subscription it is for.
    const eventsOf = () =>
      t.ctx.db
        .selectFrom('referral_events')
        .select(['id', 'type', 'provider_id'])
        .where('referral_id', '=', id)
        .execute();
    const idsOf = (r: WebhookReceiver) =>
      new Set(of(id, r).map((d) => (JSON.parse(d.body) as Delivered).data.id));
    const timeline = await eventually('every event delivered', async () => {
      const rows = await eventsOf();
      const ehrDone =
        (
          await t.ctx.db
            .selectFrom('referrals')
            .select('ehr_state')
            .where('id', '=', id)
            .executeTakeFirstOrThrow()
        ).ehr_state === 'forwarded';
      const sentIds = idsOf(senderHook);
      const receivedIds = idsOf(providerHook);
      const complete =
        ehrDone &&
        rows.every((e) => sentIds.has(e.id)) &&
        rows.filter((e) => e.provider_id !== null).every((e) => receivedIds.has(e.id));
      return complete ? rows : undefined;
    });
    const sent = verified(of(id, senderHook), senderSub.secret);
    const received = verified(of(id, providerHook), providerSub.secret);
    // Each event once (duplicates may happen, but none is expected here), and only events of the feed.
    expect(new Set(sent.map((b) => b.data.id)).size).toBe(sent.length);
    expect(new Set(sent.map((b) => b.data.id))).toEqual(new Set(timeline.map((e) => e.id)));
    expect(new Set(received.map((b) => b.data.id))).toEqual(
      new Set(timeline.filter((e) => e.provider_id !== null).map((e) => e.id)),
    );
    expect(received.map((b) => b.type)).not.toContain('referral.created');
    expect(sent.every((b) => b.data.institution.id === 'S1234A')).toBe(true);
    expect(received.every((b) => b.data.institution.id === 'S9001Z')).toBe(true);
    expect(received.find((b) => b.type === 'referral.cancelled')?.data.description).toBe(
      'Central General Hospital cancelled the referral.',
    );
    expect(received.find((b) => b.type === 'appt.no-show')?.data.description).toBe(
      'The patient missed the appointment on Tue 15 Jan 2030, 09:30 SGT.',
    );
    // Nobody else hears of it.
    expect(of(id, otherProviderHook)).toEqual([]);
    expect(of(id, otherSenderHook)).toEqual([]);

    // No patient data in any delivery, in Redis or in the logs.
    const leaks = (text: string) => CANARY_MARKERS.filter((m) => text.includes(m));
    for (const d of [...senderHook.deliveries(), ...providerHook.deliveries()]) {
      expect(leaks(d.body + JSON.stringify(d.headers))).toEqual([]);
    }
    expect(leaks(await t.redisDump())).toEqual([]);
    expect(t.logs.filter((line) => leaks(line).length > 0)).toEqual([]);

    // Every attempt is on record for the subscription's institution.
    const attempts = await t.request(t.provider, {
      method: 'GET',
      url: `${base(t.provider)}/${providerSub.id}/attempts`,
    });
    expect(attempts.json<{ data: { outcome: string }[] }>().data.length).toBeGreaterThanOrEqual(
      expected.length,
    );
  });

  it('signs with both secrets while a rotation overlaps', async () => {
    const hook = await receiver();
    const sub = await subscribe(t.sender, hook.url);
    const rotated = await t.request(t.sender, {
      method: 'POST',
      url: `${base(t.sender)}/${sub.id}/rotate-secret`,
    });
    const { secret } = rotated.json<{ secret: string }>();
    const { id } = await createDraft(t);
    await until('the created event', hook, id, ['referral.created']);
    const [delivery] = of(id, hook);
    expect(delivery?.headers['webhook-signature']?.split(' ')).toHaveLength(2);
    // A receiver that still holds the old secret verifies, and so does one with the new.
    verified(of(id, hook), sub.secret, secret);
  });

  it('retries a 500 and a timeout under the same webhook-id, and records every attempt', async () => {
    const hook = await receiver();
    hook.answer({ status: 204 }, [{ status: 500 }, { status: 200, delayMs: 1_500 }, { status: 503 }]);
    const sub = await subscribe(t.sender, hook.url, { eventTypes: ['referral.created'] });
    const { id } = await createDraft(t);
    await eventually('the delivery to succeed', () =>
      Promise.resolve(of(id, hook).some((d) => d.status === 204) ? true : undefined),
    );
    const deliveries = of(id, hook);
    expect(deliveries.map((d) => d.status)).toEqual([500, 200, 503, 204]);
    expect(new Set(deliveries.map((d) => d.headers['webhook-id'])).size).toBe(1);
    verified(deliveries, sub.secret);
    const eventId = deliveries[0]?.headers['webhook-id'] ?? '';
    const attempts = await eventually('four attempts on record', async () => {
      const res = await t.request(t.sender, {
        method: 'GET',
        url: `${base(t.sender)}/${sub.id}/attempts?eventId=${eventId}`,
      });
      const data = res.json<{ data: Record<string, unknown>[] }>().data;
      return data.length >= 4 ? data : undefined;
    });
    expect(attempts.map((a) => [a.attempt, a.outcome, a.httpStatus ?? a.errorCode])).toEqual([
      [4, 'delivered', 204],
      [3, 'retrying', 503],
      [2, 'retrying', 'WEBHOOK_ATTEMPT_TIMEOUT'],
      [1, 'retrying', 500],
    ]);
    const metrics = await t.ctx.metrics.registry.metrics();
    expect(metrics).toMatch(
      /refhub_webhook_delivery_attempts_total\{outcome="retrying",status_class="5xx"\} [1-9]/,
    );
    expect(metrics).toMatch(
      /refhub_webhook_delivery_attempts_total\{outcome="retrying",status_class="error"\} [1-9]/,
    );
    expect(metrics).toMatch(/refhub_webhook_delivery_duration_seconds_count\{outcome="delivered"\} [1-9]/);
    expect(metrics).toMatch(/refhub_queue_jobs\{queue="webhooks",state="failed"\} \d+/);
    const current = await t.request(t.sender, { method: 'GET', url: `${base(t.sender)}/${sub.id}` });
    expect(current.json()).toMatchObject({ enabled: true });
    expect(current.json()).not.toHaveProperty('failingSince');
  });

  it('stops at a 410 and disables the subscription; later events are not sent to it', async () => {
    const hook = await receiver();
    hook.answer({ status: 410 });
    const sub = await subscribe(t.sender, hook.url, { eventTypes: ['referral.created'] });
    const first = await createDraft(t);
    await until('the first delivery', hook, first.id, ['referral.created']);
    const disabled = await eventually('the subscription to be disabled', async () => {
      const res = await t.request(t.sender, { method: 'GET', url: `${base(t.sender)}/${sub.id}` });
      const body = res.json<{ enabled: boolean; disabledReason?: string }>();
      return body.enabled ? undefined : body;
    });
    expect(disabled.disabledReason).toBe('gone');
    const second = await createDraft(t);
    // Once the relay has moved past the second event, no job exists for it: nothing will go out.
    const secondEvent = await eventually('the relay to pass the second draft', async () => {
      const { rows } = await sql<{ id: string; passed: boolean }>`
        select e.id, (r.xid, r.position) >= (e.xid, e.position) as passed
          from referral_events e, webhook_relay r where e.referral_id = ${second.id}`.execute(t.ctx.db);
      return rows[0]?.passed === true ? rows[0].id : undefined;
    });
    expect(
      await t.ctx.queues.queues.webhooks.getJob(
        webhookJobId({ eventId: secondEvent, subscriptionId: sub.id }),
      ),
    ).toBeUndefined();
    expect(of(first.id, hook)).toHaveLength(1);
    expect(of(second.id, hook)).toEqual([]);
  });

  it('disables a subscription that fails for longer than WEBHOOK_DISABLE_AFTER_SECONDS', async () => {
    const hook = await receiver();
    hook.answer({ status: 500, delayMs: 900 });
    const sub = await subscribe(t.otherSender, hook.url, { eventTypes: ['referral.created'] });
    await call(t, t.otherSender, 'POST', '/api/v1/referrals', { offeringId: 'cgh-gastro' }, 201);
    const disabled = await eventually('the subscription to be disabled', async () => {
      const res = await t.request(t.otherSender, { method: 'GET', url: `${base(t.otherSender)}/${sub.id}` });
      const body = res.json<{ enabled: boolean; disabledReason?: string; failingSince?: string }>();
      return body.enabled ? undefined : body;
    });
    expect(disabled).toMatchObject({ disabledReason: 'failing' });
    const metrics = await t.ctx.metrics.registry.metrics();
    expect(metrics).toMatch(/refhub_webhook_subscriptions_disabled_total\{reason="failing"\} [1-9]/);
    expect(metrics).toMatch(/refhub_webhook_subscriptions_disabled\{reason="failing"\} [1-9]/);
    expect(hook.deliveries().length).toBeGreaterThanOrEqual(3);
  });

  it('replays one event, and everything since a time, under the events’ own webhook-ids', async () => {
    const hook = await receiver();
    const sub = await subscribe(t.provider, hook.url);
    const { id } = await createDraft(t);
    await call(t, t.sender, 'POST', `/api/v1/referrals/${id}/submit`, {});
    await until('the submit event', hook, id, ['referral.pending-acceptance']);
    const [first] = of(id, hook);
    const eventId = first?.headers['webhook-id'] ?? '';

    expect(await t.ctx.webhookReplay.replayEvent(eventId, sub.id)).toEqual({ events: 1, deliveries: 1 });
    // Other events of the referral (its EHR delivery) may arrive meanwhile: count this event's copies.
    const copiesOfEvent = () => of(id, hook).filter((d) => d.headers['webhook-id'] === eventId);
    await eventually('the replayed delivery', () =>
      Promise.resolve(copiesOfEvent().length >= 2 ? true : undefined),
    );
    expect(copiesOfEvent()).toHaveLength(2);
    verified(of(id, hook), sub.secret);

    // Since the submit: this referral's events and any later ones, to this subscription only.
    const since = new Date((JSON.parse(first?.body ?? '{}') as Delivered).timestamp);
    const replayed = await t.ctx.webhookReplay.replaySince(since, sub.id);
    expect(replayed.deliveries).toBeGreaterThanOrEqual(1);
    await eventually('the second replay', () =>
      Promise.resolve(copiesOfEvent().length >= 3 ? true : undefined),
    );
    verified(copiesOfEvent(), sub.secret);
  });

  it('warns the institution on every response while refhub keeps its subscription disabled', async () => {
    const hook = await receiver();
    hook.answer({ status: 410 });
    const sub = await subscribe(t.otherSender, hook.url, { eventTypes: ['referral.created'] });
    await call(t, t.otherSender, 'POST', '/api/v1/referrals', { offeringId: 'cgh-gastro' }, 201);
    const warned = await eventually('the warning header', async () => {
      const res = await t.request(t.otherSender, { method: 'GET', url: base(t.otherSender) });
      const header = res.headers['webhook-subscriptions-disabled'];
      return typeof header === 'string' && header.includes(sub.id) ? header : undefined;
    });
    expect(warned).toContain(sub.id);
    // Other institutions' answers carry none.
    const other = await t.request(t.provider, { method: 'GET', url: base(t.provider) });
    expect(other.headers['webhook-subscriptions-disabled']).toBeUndefined();
    // /admin lists it.
    const admin = await opsRequest(t, t.ops, { method: 'GET', url: '/admin' });
    expect(admin.body).toContain(`data-disabled-webhook="${sub.id}"`);
    // Enabled again, the warning goes (within the few seconds each process keeps it).
    await t.request(t.otherSender, {
      method: 'PATCH',
      url: `${base(t.otherSender)}/${sub.id}`,
      payload: { enabled: true },
    });
    await eventually('the warning to go', async () => {
      const res = await t.request(t.otherSender, { method: 'GET', url: base(t.otherSender) });
      const header = res.headers['webhook-subscriptions-disabled'];
      return typeof header === 'string' && header.includes(sub.id) ? undefined : true;
    });
  });
});
