// Redirecting a referral over the API: the provider (pending acceptance or accepted), or the sender
// while it awaits acceptance, hands a submitted referral on to another offering. The referral ends as
// `redirected` and a successor, submitted, carries its patient, clinical information, priority and
// files, each naming the other; both timelines say what happened, the successor's opening with the
// referral's steps copied in; the feed carries the code and never the comment; FHIR's successor
// ServiceRequest `replaces` it. Every refusal is a 400 naming the field (or the lifecycle's 409) and
// changes nothing; a keyed retry makes no second successor; tenancy holds for the old provider.
import { createHash } from 'node:crypto';
import type { ServiceRequest, Task } from '@medplum/fhirtypes';
import * as cheerio from 'cheerio';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectProblem } from '../../support/api-assertions.ts';
import { ENGINES } from '../../support/engines.ts';
import { readFeedToEnd } from '../../support/event-feed.ts';
import { readFhir, resourcesOf } from '../../support/fhir-view.ts';
import { REQUESTER } from '../../support/referral-routes.ts';
import { expectReferralShape, expectSummaryShape, type ReferralBody } from '../../support/referral-shapes.ts';
import { call, createDraft, referralIn } from '../../support/scenarios.ts';
import { createTestApp, type TestApp, type TestParty } from '../../support/test-app.ts';
import { getPage, linksOf, redeem } from '../../support/web.ts';

// Words a person wrote that name the patient: the timelines quote them, nothing else may.
const COMMENT = 'Tan Ah Kow (S1234567D) has chest pain on exertion; cardiology should see him first.';
const WRONG_SERVICE = { code: 'wrong-service', display: 'Referred to the wrong service' };
const sha256 = (bytes: string | Buffer) => createHash('sha256').update(bytes).digest('hex');

describe.each(ENGINES)('redirecting a referral on %s', (engine) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp(engine);
  });
  afterAll(async () => {
    await t.close();
  });

  const url = (id: string, op = '') => `/api/v1/referrals/${id}${op === '' ? '' : `/${op}`}`;

  function redirect(as: TestParty, id: string, body: Record<string, unknown>, headers = {}) {
    return t.request(as, {
      method: 'POST',
      url: url(id, 'redirect'),
      headers,
      payload: { ...as.institution, requesterIdentifier: REQUESTER, ...body },
    });
  }

  const TO_CARDIOLOGY = { offeringId: 'erh-cardio', reasonCode: 'wrong-service', comment: COMMENT };

  function get(as: TestParty, id: string, extra = '') {
    return t.request(as, {
      method: 'GET',
      url: `${url(id)}?requesterIdentifier=${REQUESTER}&institutionIdType=hci&institutionId=${as.institution.institutionId}${extra}`,
    });
  }

  async function read(as: TestParty, id: string, extra = ''): Promise<ReferralBody> {
    const res = await get(as, id, extra);
    expect(res.statusCode, res.body).toBe(200);
    return expectReferralShape(res.json(), { ehrForm: extra.includes('ehrForm') });
  }

  async function attach(as: TestParty, id: string, text: string, fileName: string) {
    const res = await t.request(as, {
      method: 'POST',
      url: url(id, 'attachments'),
      query: { ...as.institution },
      headers: { 'content-type': 'text/plain', 'content-disposition': `attachment; filename="${fileName}"` },
      payload: text,
    });
    expect(res.statusCode, res.body).toBe(201);
    return res.json<{ id: string; number: number; sha256: string; scanState: string }>();
  }

  async function attachments(as: TestParty, id: string) {
    const res = await t.request(as, {
      method: 'GET',
      url: url(id, 'attachments'),
      query: { ...as.institution },
    });
    expect(res.statusCode, res.body).toBe(200);
    return res.json<{
      data: {
        id: string;
        number: number;
        fileName: string;
        sha256: string;
        sizeBytes: number;
        scanState: string;
      }[];
    }>().data;
  }

  async function content(as: TestParty, id: string, attachmentId: string) {
    return t.request(as, {
      method: 'GET',
      url: url(id, `attachments/${attachmentId}/content`),
      query: { ...as.institution },
    });
  }

  /** How many referrals carry `id` on: a redirect makes one, and only one. */
  async function successorsOf(id: string): Promise<number> {
    const rows = await t.ctx.db
      .selectFrom('referrals')
      .select('id')
      .where('redirected_from', '=', id)
      .execute();
    return rows.length;
  }

  async function outboxOf(id: string) {
    return t.ctx.db
      .selectFrom('outbox')
      .select(['topic', 'version'])
      .where('referral_id', '=', id)
      .orderBy('id')
      .execute();
  }

  it('the provider redirects: the referral ends as redirected, and its successor carries it on at the new offering', async () => {
    const draft = await createDraft(t, { priority: 'routine', clinicalInfo: 'Dyspepsia for 3 months.' });
    const ecg = await attach(t.sender, draft.id, 'ECG 12-lead: sinus rhythm, rate 72.', 'ecg report.txt');
    await call(
      t,
      t.sender,
      'POST',
      url(draft.id, 'notes'),
      { content: 'Please call the family first.' },
      201,
    );
    await call(t, t.sender, 'POST', url(draft.id, 'submit'), {});
    await call(t, t.provider, 'POST', url(draft.id, 'accept'), {});
    const before = await read(t.sender, draft.id);

    const res = await redirect(t.provider, draft.id, {
      ...TO_CARDIOLOGY,
      redirectedByName: 'Dr Wong Mei Ling',
    });
    expect(res.statusCode, res.body).toBe(200);
    const redirected = expectReferralShape(res.json());
    expect(redirected).toMatchObject({
      status: 'redirected',
      coreStatus: 'redirected',
      version: before.version + 1,
    });
    expect(redirected.allowedActions).toEqual(['add-note']);
    const successorId = redirected.redirectedTo!;
    expect(successorId).toMatch(/^[0-9a-f-]{36}$/);
    const last = redirected.timelineEvents.at(-1);
    expect(last).toMatchObject({
      type: 'referral.redirected',
      description:
        'Dr Wong Mei Ling (Central General Hospital) redirected the referral to Eastside Regional Hospital ' +
        `(Cardiology Specialist Clinic) (Referred to the wrong service): ${COMMENT}`,
      reason: WRONG_SERVICE,
    });
    // The sender reads what the answer said.
    expect(await read(t.sender, draft.id)).toMatchObject({ status: 'redirected', redirectedTo: successorId });

    // The sender sees the successor: submitted to the new provider, with the same content.
    const successor = await read(t.sender, successorId);
    expect(successor).toMatchObject({
      status: 'pending-acceptance',
      coreStatus: 'pending',
      version: 1,
      redirectedFrom: draft.id,
      patient: before.patient,
      referrer: before.referrer,
      clinicalInfo: 'Dyspepsia for 3 months.',
      priority: before.priority,
      isUrgent: before.isUrgent,
      sender: before.sender,
      senderSystem: before.senderSystem,
      offering: { id: 'erh-cardio', institution: { idType: 'hci', id: 'S9002Y' } },
      ehrForwarding: { state: 'queued', attempts: 0 },
    });
    expect(successor).not.toHaveProperty('redirectedTo');
    // Notes are the conversation between the sender and the old provider: they stay with it.
    expect(successor.notes).toEqual([]);
    // Its timeline opens with the referral's steps, copied and marked, then the redirect itself.
    // (Before the worker ran, the referral has no deliveries recorded: every step is a person's.)
    expect(before.timelineEvents.every((e) => !e.type.startsWith('ehr.'))).toBe(true);
    const copied = successor.timelineEvents.slice(0, before.timelineEvents.length);
    expect(copied.map(({ id: _id, fromReferralId, ...rest }) => ({ ...rest, fromReferralId }))).toEqual(
      before.timelineEvents.map(({ id: _id, ...rest }) => ({ ...rest, fromReferralId: draft.id })),
    );
    expect(successor.timelineEvents.slice(before.timelineEvents.length)).toEqual([
      expect.objectContaining({
        type: 'referral.pending-acceptance',
        description:
          'Dr Wong Mei Ling (Central General Hospital) redirected the referral from Central General Hospital ' +
          '(Gastroenterology Specialist Clinic) to Eastside Regional Hospital (Cardiology Specialist Clinic), ' +
          `where it is awaiting acceptance (Referred to the wrong service): ${COMMENT}`,
        reason: WRONG_SERVICE,
      }),
    ]);
    expect(successor.timelineEvents.at(-1)).not.toHaveProperty('fromReferralId');

    // The new provider reads it too, with the same history; and may accept it.
    const asNewProvider = await read(t.otherProvider, successorId);
    expect(asNewProvider.timelineEvents).toEqual(successor.timelineEvents);
    expect(asNewProvider.allowedActions).toContain('accept');
    expect(asNewProvider.allowedActions).toContain('redirect');

    // The file: the same stored bytes, scanned as it was, readable through the successor by both.
    const [carried] = await attachments(t.otherProvider, successorId);
    const [original] = await attachments(t.sender, draft.id);
    expect(carried).toMatchObject({
      number: ecg.number,
      fileName: 'ecg report.txt',
      sha256: ecg.sha256,
      sizeBytes: original!.sizeBytes,
      scanState: original!.scanState,
    });
    expect(carried!.id).not.toBe(ecg.id);
    for (const as of [t.otherProvider, t.sender]) {
      const bytes = await content(as, successorId, carried!.id);
      expect(bytes.statusCode, bytes.body).toBe(200);
      expect(sha256(bytes.rawPayload)).toBe(ecg.sha256);
    }
    // Stored once: the successor's file reads the bytes its predecessor's stored.
    const contents = await t.ctx.db
      .selectFrom('attachment_contents')
      .select('attachment_id')
      .where('attachment_id', 'in', [ecg.id, carried!.id])
      .execute();
    expect(contents.map((c) => c.attachment_id)).toEqual([ecg.id]);

    // Both are due at the EHR, in the same statement: the final state of the one, the first of the other.
    expect(await outboxOf(draft.id)).toContainEqual({ topic: 'ehr-forward', version: redirected.version });
    expect(await outboxOf(successorId)).toEqual(
      expect.arrayContaining([
        { topic: 'ehr-forward', version: 1 },
        { topic: 'reminders', version: 1 },
      ]),
    );
    expect(await successorsOf(draft.id)).toBe(1);
  });

  it('tells each side what happened in its feed, with the code and never the comment', async () => {
    const pending = await referralIn(t, 'pending-acceptance');
    const res = await redirect(t.provider, pending.id, TO_CARDIOLOGY);
    expect(res.statusCode, res.body).toBe(200);
    const successorId = res.json<ReferralBody>().redirectedTo!;

    const feeds = new Map<TestParty, Awaited<ReturnType<typeof readFeedToEnd>>['events']>();
    for (const party of [t.sender, t.provider, t.otherProvider]) {
      const { events } = await readFeedToEnd(t, party);
      const mine = events.filter((e) => e.referralId === pending.id || e.referralId === successorId);
      expect(JSON.stringify(mine)).not.toContain('Tan Ah Kow');
      expect(JSON.stringify(mine)).not.toContain('S1234567D');
      feeds.set(party, mine);
    }
    const redirectedEvent: unknown = expect.objectContaining({
      type: 'referral.redirected',
      referralId: pending.id,
      reason: WRONG_SERVICE,
      description:
        'Central General Hospital redirected the referral to Eastside Regional Hospital (Cardiology ' +
        'Specialist Clinic) (Referred to the wrong service).',
    });
    const opening: unknown = expect.objectContaining({
      type: 'referral.pending-acceptance',
      referralId: successorId,
      referralVersion: 1,
      reason: WRONG_SERVICE,
    });
    // The sender: both. The old provider: its referral's end, nothing of the successor. The new
    // provider: the successor's opening alone (the copied steps are not events again).
    expect(feeds.get(t.sender)).toEqual(expect.arrayContaining([redirectedEvent, opening]));
    expect(feeds.get(t.provider)).toContainEqual(redirectedEvent);
    expect(feeds.get(t.provider)!.filter((e) => e.referralId === successorId)).toEqual([]);
    expect(feeds.get(t.otherProvider)).toEqual([opening]);
  });

  it('keeps tenancy: the old provider cannot read or act on the successor, the new one cannot read the referral', async () => {
    const pending = await referralIn(t, 'pending-acceptance');
    const successorId = (await redirect(t.provider, pending.id, TO_CARDIOLOGY)).json<ReferralBody>()
      .redirectedTo!;
    expectProblem(await get(t.provider, successorId), 404, 'referral_not_found');
    expectProblem(
      await redirect(t.provider, successorId, { ...TO_CARDIOLOGY, offeringId: 'cgh-ae' }),
      404,
      'referral_not_found',
    );
    expectProblem(
      await t.request(t.provider, {
        method: 'POST',
        url: url(successorId, 'accept'),
        payload: { ...t.provider.institution },
      }),
      404,
      'referral_not_found',
    );
    expectProblem(await get(t.otherProvider, pending.id), 404, 'referral_not_found');
    expectProblem(await get(t.otherSender, successorId), 404, 'referral_not_found');
    await call(t, t.otherProvider, 'POST', url(successorId, 'accept'), {});

    // Redirected back to the first provider, it is that provider's again: a successor of its own.
    const back = await redirect(t.otherProvider, successorId, { ...TO_CARDIOLOGY, offeringId: 'cgh-gastro' });
    expect(back.statusCode, back.body).toBe(200);
    const third = await read(t.provider, back.json<ReferralBody>().redirectedTo!);
    expect(third).toMatchObject({ status: 'pending-acceptance', redirectedFrom: successorId });
    // The steps of the first referral keep the referral they were taken on.
    expect(new Set(third.timelineEvents.map((e) => e.fromReferralId))).toEqual(
      new Set([pending.id, successorId, undefined]),
    );
  });

  it('the sender redirects while the referral awaits acceptance, and only then', async () => {
    const pending = await referralIn(t, 'pending-acceptance');
    const res = await redirect(t.sender, pending.id, {
      offeringId: 'erh-ortho',
      reasonCode: 'patient-moved',
    });
    expect(res.statusCode, res.body).toBe(200);
    const redirected = expectReferralShape(res.json());
    expect(redirected.timelineEvents.at(-1)?.description).toBe(
      'Bukit Timah Family Clinic redirected the referral to Eastside Regional Hospital (Orthopaedic Surgery ' +
        'Specialist Clinic) (The patient moved or chose another provider).',
    );
    expect((await read(t.otherProvider, redirected.redirectedTo!)).offering?.id).toBe('erh-ortho');

    const accepted = await referralIn(t, 'accepted');
    const refused = expectProblem(
      await redirect(t.sender, accepted.id, TO_CARDIOLOGY),
      409,
      'invalid_transition',
    );
    expect(refused).toMatchObject({ reason: 'not-in-status', currentStatus: 'accepted' });
    // As a cancel: never away from an offering the sender may not cancel; the provider may.
    const ae = await referralIn(t, 'pending-acceptance', { offeringId: 'cgh-ae' });
    const notCancellable = expectProblem(
      await redirect(t.sender, ae.id, TO_CARDIOLOGY),
      409,
      'invalid_transition',
    );
    expect(notCancellable.reason).toBe('offering-not-cancellable');
    expect((await redirect(t.provider, ae.id, TO_CARDIOLOGY)).statusCode).toBe(200);
  });

  it('refuses a second redirect, and a redirect from a status the lifecycle does not allow', async () => {
    const redirected = await referralIn(t, 'redirected');
    const again = expectProblem(
      await redirect(t.provider, redirected.id, TO_CARDIOLOGY),
      409,
      'invalid_transition',
    );
    expect(again).toMatchObject({ reason: 'not-in-status', currentStatus: 'redirected' });
    expect(await successorsOf(redirected.id)).toBe(1);
    for (const status of ['draft', 'scheduled', 'sender-action-required', 'completed'] as const) {
      const referral = await referralIn(t, status);
      const res = await redirect(status === 'draft' ? t.sender : t.provider, referral.id, TO_CARDIOLOGY);
      expectProblem(res, 409, 'invalid_transition');
      expect(await successorsOf(referral.id)).toBe(0);
    }
  });

  it('a keyed retry answers with the same successor and makes no second one', async () => {
    const pending = await referralIn(t, 'pending-acceptance');
    const headers = { 'idempotency-key': `redirect-${pending.id}` };
    const first = await redirect(t.provider, pending.id, TO_CARDIOLOGY, headers);
    expect(first.statusCode, first.body).toBe(200);
    const again = await redirect(t.provider, pending.id, TO_CARDIOLOGY, headers);
    expect(again.statusCode, again.body).toBe(200);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.json<ReferralBody>().redirectedTo).toBe(first.json<ReferralBody>().redirectedTo);
    expect(await successorsOf(pending.id)).toBe(1);
  });

  it('refuses bad input with a 400 naming the field, and changes nothing', async () => {
    const pending = await referralIn(t, 'pending-acceptance', {
      priority: 'urgent',
      offeringId: 'cgh-gastro',
    });
    const cases: [Record<string, unknown>, string, RegExp][] = [
      [{ ...TO_CARDIOLOGY, offeringId: 'no-such-offering' }, 'body.offeringId', /not a known offering/],
      [{ ...TO_CARDIOLOGY, offeringId: 'cgh-gastro' }, 'body.offeringId', /own offering/],
      [
        { ...TO_CARDIOLOGY, reasonCode: 'no-such-reason' },
        'body.reasonCode',
        /not a reason the catalog offers/,
      ],
      [{ ...TO_CARDIOLOGY, reasonCode: 'duplicate' }, 'body.reasonCode', /not for redirect/],
      [{ offeringId: 'erh-cardio', reasonCode: 'other' }, 'body.comment', /required with the reason other/],
      [{ offeringId: 'erh-cardio', comment: COMMENT }, 'body.reasonCode', /required|must have/],
      [{ ...TO_CARDIOLOGY, offeringId: undefined }, 'body.offeringId', /required|must have/],
      [
        { ...TO_CARDIOLOGY, priority: 'no-such-priority' },
        'body.priority',
        /not a priority the catalog offers/,
      ],
    ];
    const before = await read(t.sender, pending.id);
    for (const [body, path, message] of cases) {
      const problem = expectProblem(await redirect(t.provider, pending.id, body), 400, 'validation_failed');
      const error = problem.errors?.find((e) => e.path === path);
      expect(error, `${JSON.stringify(body)}: ${JSON.stringify(problem.errors)}`).toBeDefined();
      expect(error?.message).toMatch(message);
      expect(JSON.stringify(problem)).not.toContain('no-such');
    }
    const after = await read(t.sender, pending.id);
    expect(after.version).toBe(before.version);
    expect(after.status).toBe('pending-acceptance');
    expect(await successorsOf(pending.id)).toBe(0);
  });

  it('refuses an offering that is no longer offered', async () => {
    const pending = await referralIn(t, 'pending-acceptance');
    await t.ctx.catalog.load({
      systems: [],
      institutions: [],
      offerings: [
        {
          id: 'erh-ortho',
          name: 'Orthopaedic Surgery Specialist Clinic',
          category: 'soc',
          description: 'Musculoskeletal conditions needing specialist orthopaedic review.',
          specialty: 'Orthopaedic Surgery',
          ehrCode: 'ORTHO-SOC',
          institution: { idType: 'hci', id: 'S9002Y' },
          system: 'PartnersBuddy',
          active: false,
        },
      ],
    });
    try {
      const problem = expectProblem(
        await redirect(t.provider, pending.id, { ...TO_CARDIOLOGY, offeringId: 'erh-ortho' }),
        400,
        'validation_failed',
      );
      expect(problem.errors).toEqual([
        { path: 'body.offeringId', message: 'is no longer offered; choose another' },
      ]);
      expect(await successorsOf(pending.id)).toBe(0);
    } finally {
      await t.ctx.catalog.load({
        systems: [],
        institutions: [],
        offerings: [
          {
            id: 'erh-ortho',
            name: 'Orthopaedic Surgery Specialist Clinic',
            category: 'soc',
            description: 'Musculoskeletal conditions needing specialist orthopaedic review.',
            specialty: 'Orthopaedic Surgery',
            ehrCode: 'ORTHO-SOC',
            institution: { idType: 'hci', id: 'S9002Y' },
            system: 'PartnersBuddy',
            active: true,
          },
        ],
      });
    }
  });

  it("a new offering that does not take the referral's priority needs a priority it takes", async () => {
    // Eastside's GPFirst takes `urgent` alone; the referral is routine.
    const pending = await referralIn(t, 'pending-acceptance', { priority: 'routine' });
    const without = expectProblem(
      await redirect(t.provider, pending.id, { ...TO_CARDIOLOGY, offeringId: 'erh-gpfirst' }),
      400,
      'validation_failed',
    );
    expect(without.errors).toEqual([
      {
        path: 'body.offeringId',
        message: expect.stringMatching(
          /does not take the referral's priority Routine; give a priority it takes/,
        ) as unknown,
      },
    ]);
    const wrong = expectProblem(
      await redirect(t.provider, pending.id, {
        ...TO_CARDIOLOGY,
        offeringId: 'erh-gpfirst',
        priority: 'routine',
      }),
      400,
      'validation_failed',
    );
    expect(wrong.errors?.map((e) => e.path)).toEqual(['body.priority']);
    expect(await successorsOf(pending.id)).toBe(0);

    const res = await redirect(t.provider, pending.id, {
      ...TO_CARDIOLOGY,
      offeringId: 'erh-gpfirst',
      priority: 'urgent',
    });
    expect(res.statusCode, res.body).toBe(200);
    const successor = await read(t.sender, res.json<ReferralBody>().redirectedTo!);
    expect(successor).toMatchObject({ isUrgent: true, priority: { code: 'urgent' } });
  });

  it('lists the redirect in both referrals’ summaries', async () => {
    const pending = await referralIn(t, 'pending-acceptance');
    const successorId = (await redirect(t.provider, pending.id, TO_CARDIOLOGY)).json<ReferralBody>()
      .redirectedTo!;
    const res = await t.request(t.sender, {
      method: 'GET',
      url: '/api/v1/institutions/hci/S1234A/referrals',
      query: { pageSize: '100', status: ['redirected', 'pending'] },
    });
    expect(res.statusCode, res.body).toBe(200);
    const data = res.json<{ data: unknown[] }>().data.map((s) => expectSummaryShape(s));
    expect(data.find((s) => s.id === pending.id)).toMatchObject({
      status: 'redirected',
      redirectedTo: successorId,
    });
    expect(data.find((s) => s.id === successorId)).toMatchObject({
      status: 'pending-acceptance',
      redirectedFrom: pending.id,
    });
  });

  it('the FHIR views: the successor replaces the referral, whose Task is cancelled for the coded reason', async () => {
    const pending = await referralIn(t, 'pending-acceptance');
    const successorId = (await redirect(t.provider, pending.id, TO_CARDIOLOGY)).json<ReferralBody>()
      .redirectedTo!;

    const old = (await readFhir(t, t.sender, pending.id)).bundle;
    const [oldRequest] = resourcesOf<ServiceRequest>(old, 'ServiceRequest');
    const [task] = resourcesOf<Task>(old, 'Task');
    expect(oldRequest?.status).toBe('revoked');
    expect(oldRequest).not.toHaveProperty('replaces');
    expect(task?.status).toBe('cancelled');
    expect(task?.statusReason?.coding).toEqual([
      {
        system: 'urn:refhub:fhir:CodeSystem:reason',
        code: 'wrong-service',
        display: 'Referred to the wrong service',
      },
    ]);

    const next = (await readFhir(t, t.otherProvider, successorId)).bundle;
    const [request] = resourcesOf<ServiceRequest>(next, 'ServiceRequest');
    expect(request?.status).toBe('active');
    expect(request?.replaces).toEqual([
      {
        type: 'ServiceRequest',
        identifier: { system: 'urn:refhub:fhir:NamingSystem:referral-id', value: pending.id },
      },
    ]);
  });

  it("the successor's EHR form names where it came from", async () => {
    const pending = await referralIn(t, 'pending-acceptance');
    const successorId = (await redirect(t.provider, pending.id, TO_CARDIOLOGY)).json<ReferralBody>()
      .redirectedTo!;
    const form = cheerio.load(
      (await read(t.otherProvider, successorId, '&additionalField=ehrForm')).ehrForm!,
    );
    expect(form('[data-field="redirectedFrom"]').text()).toBe(pending.id);
    expect(form('[data-field="redirectedFrom.description"]').text()).toContain(
      'redirected the referral from',
    );
    expect(form('[data-field="timeline.fromReferralId"]').first().text()).toBe(pending.id);
    const old = cheerio.load((await read(t.sender, pending.id, '&additionalField=ehrForm')).ehrForm!);
    expect(old('[data-field="redirectedTo"]').text()).toBe(successorId);
    expect(old('[data-field="redirectedFrom"]')).toHaveLength(0);
  });

  it('the web pages show both links: the view of the successor names where it came from, the other its successor', async () => {
    const pending = await referralIn(t, 'pending-acceptance');
    const successorId = (await redirect(t.provider, pending.id, TO_CARDIOLOGY)).json<ReferralBody>()
      .redirectedTo!;
    const successorView = await getPage(
      t,
      await redeem(t, (await linksOf(t, successorId, t.otherProvider)).view!),
    );
    expect(successorView.statusCode, successorView.body).toBe(200);
    const page = cheerio.load(successorView.body);
    expect(page('[data-field="redirectedFrom"]').text()).toBe(pending.id);
    expect(page('[data-field="timeline.fromReferralId"]').length).toBeGreaterThan(0);
    const oldView = await getPage(t, await redeem(t, (await linksOf(t, pending.id)).view!));
    expect(oldView.statusCode, oldView.body).toBe(200);
    const old = cheerio.load(oldView.body);
    expect(old('[data-field="redirectedTo"]').text()).toBe(successorId);
    expect(old.text()).toContain('Redirected to another service');
  });

  it('GET /reason-codes lists the codes for redirect', async () => {
    const res = await t.request(t.provider, {
      method: 'GET',
      url: '/api/v1/reason-codes',
      query: { ...t.provider.institution, action: 'redirect' },
    });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json<{ data: { code: string }[] }>().data.map((c) => c.code)).toEqual([
      'wrong-service',
      'service-unavailable',
      'patient-moved',
      'other',
    ]);
  });
});
