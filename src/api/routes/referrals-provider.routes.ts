// The provider's operations (contract §5.10): accept, reject, ask the sender to act, keep the
// referral's appointments, and complete it with its outcome (the catalog's outcome codes are listed
// here too).
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { ApiDeps } from '../api-deps.ts';
import { MAX_OUTCOME_SUMMARY, OUTCOME_CODE_PATTERN } from '../../domain/outcome.ts';
import { PRIORITY_CODE_PATTERN } from '../../domain/priorities.ts';
import { APPOINTMENT_STATUSES } from '../../domain/statuses.ts';
import { callerOf } from '../plugins/auth.ts';
import { ifMatchOf, institutionOf, referralHeaders } from '../http.ts';
import {
  ActingFor,
  MULTILINE,
  PersonName,
  Reason,
  ReasonCodeField,
  ReferralId,
  ReferralIdParams,
  Timestamp,
} from '../schemas/primitives.ts';
import { GuardedHeaders, GuardedPostHeaders } from '../schemas/headers.ts';
import { ref } from '../schemas/named.ts';
import { operation } from '../schemas/operation.ts';
import { InstitutionParams, OutcomeCode, Referral } from '../schemas/referral.schema.ts';
import { problems, success } from '../schemas/responses.ts';

export type ProviderRoutesDeps = Pick<ApiDeps, 'referralCommands' | 'catalog'>;

export function providerRoutes(deps: ProviderRoutesDeps) {
  return (fastify: FastifyInstance) => {
    const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
    const commands = deps.referralCommands;

    app.post(
      '/referrals/:referralId/accept',
      {
        config: { action: 'referral.accept', responseHeaders: referralHeaders },
        schema: {
          ...operation({
            operationId: 'acceptReferral',
            tag: 'Provider',
            scope: 'system/Referral.write',
            summary: 'Accept a referral',
            description:
              'For a referral pending acceptance. Book appointments next. Triage may change its priority: ' +
              '`priority` (a code of GET /priorities the offering takes) with a `comment` saying why, which ' +
              'the timeline quotes; the timeline says who changed it from what to what.',
          }),
          headers: GuardedPostHeaders,
          params: ReferralIdParams,
          body: Type.Object(
            {
              ...ActingFor,
              acceptedByName: Type.Optional(PersonName),
              priority: Type.Optional(
                Type.String({
                  pattern: PRIORITY_CODE_PATTERN,
                  maxLength: 64,
                  description:
                    'The priority the provider accepts it with, when it differs from the sender’s.',
                }),
              ),
              comment: Type.Optional(Reason),
            },
            { additionalProperties: false },
          ),
          response: {
            200: success(ref(Referral), 'The referral as it is now.', { etag: true, idempotent: true }),
            ...problems({ idempotent: true }),
          },
        },
      },
      async (request) => {
        const { body } = request;
        const caller = callerOf(request, institutionOf(body), body.requesterIdentifier);
        const view = await commands.accept(
          caller,
          request.params.referralId,
          ifMatchOf(request),
          body.acceptedByName,
          { priority: body.priority, comment: body.comment },
        );
        return view;
      },
    );

    app.post(
      '/referrals/:referralId/reject',
      {
        config: { action: 'referral.reject', responseHeaders: referralHeaders },
        schema: {
          ...operation({
            operationId: 'rejectReferral',
            tag: 'Provider',
            scope: 'system/Referral.write',
            summary: 'Reject a referral',
            description:
              'For a referral pending acceptance or accepted. `reasonCode` is a code of GET /reason-codes for ' +
              '`reject`; `reason` is the comment the timeline quotes to the sender, required without a code ' +
              'and with a code that says so. Events and webhooks carry the code and its words, never the comment.',
          }),
          headers: GuardedPostHeaders,
          params: ReferralIdParams,
          body: Type.Object(
            {
              ...ActingFor,
              reasonCode: Type.Optional(ReasonCodeField),
              reason: Type.Optional(Reason),
              rejectedByName: Type.Optional(PersonName),
            },
            { additionalProperties: false },
          ),
          response: {
            200: success(ref(Referral), 'The referral as it is now.', { etag: true, idempotent: true }),
            ...problems({ idempotent: true }),
          },
        },
      },
      async (request) => {
        const { body } = request;
        const caller = callerOf(request, institutionOf(body), body.requesterIdentifier);
        const view = await commands.reject(
          caller,
          request.params.referralId,
          { reasonCode: body.reasonCode, comment: body.reason },
          ifMatchOf(request),
          body.rejectedByName,
        );
        return view;
      },
    );

    app.post(
      '/referrals/:referralId/request-action',
      {
        config: { action: 'referral.request-action', responseHeaders: referralHeaders },
        schema: {
          ...operation({
            operationId: 'requestSenderAction',
            tag: 'Provider',
            scope: 'system/Referral.write',
            summary: 'Ask the sender to act on a referral',
            description:
              'For a referral pending acceptance or accepted. `reasonCode` is a code of GET /reason-codes for ' +
              '`request-action` (`advice-given` returns the referral with advice); `reason` is the comment the ' +
              'timeline quotes, required without a code and with a code that says so. The sender updates the ' +
              'referral and submits it again.',
          }),
          headers: GuardedPostHeaders,
          params: ReferralIdParams,
          body: Type.Object(
            {
              ...ActingFor,
              reasonCode: Type.Optional(ReasonCodeField),
              reason: Type.Optional(Reason),
              requestedByName: Type.Optional(PersonName),
            },
            { additionalProperties: false },
          ),
          response: {
            200: success(ref(Referral), 'The referral as it is now.', { etag: true, idempotent: true }),
            ...problems({ idempotent: true }),
          },
        },
      },
      async (request) => {
        const { body } = request;
        const caller = callerOf(request, institutionOf(body), body.requesterIdentifier);
        const view = await commands.requestAction(
          caller,
          request.params.referralId,
          { reasonCode: body.reasonCode, comment: body.reason },
          ifMatchOf(request),
          body.requestedByName,
        );
        return view;
      },
    );

    app.post(
      '/referrals/:referralId/complete',
      {
        config: { action: 'referral.complete', responseHeaders: referralHeaders },
        schema: {
          ...operation({
            operationId: 'completeReferral',
            tag: 'Provider',
            scope: 'system/Referral.write',
            summary: 'Complete a referral with its outcome',
            description:
              'For a referral that is accepted or scheduled. `outcomeCode` is a code of GET /outcome-codes; ' +
              '`summary` (the consult summary, plain text) is required unless the code says otherwise. ' +
              "`attachmentIds` names the provider's own files (uploaded first, with POST …/attachments) " +
              'that are part of the outcome, such as the consultation letter. The referral becomes ' +
              '`completed` and waits for the sender to acknowledge the outcome; the national EHR gets the ' +
              'form again, with its Outcome section.',
          }),
          headers: GuardedPostHeaders,
          params: ReferralIdParams,
          body: Type.Object(
            {
              ...ActingFor,
              outcomeCode: Type.String({ pattern: OUTCOME_CODE_PATTERN, maxLength: 64 }),
              summary: Type.Optional(
                Type.String({ minLength: 1, maxLength: MAX_OUTCOME_SUMMARY, [MULTILINE]: true }),
              ),
              attachmentIds: Type.Optional(
                Type.Array(Type.String({ format: 'uuid' }), { maxItems: 20, uniqueItems: true }),
              ),
              completedByName: Type.Optional(PersonName),
            },
            { additionalProperties: false },
          ),
          response: {
            200: success(ref(Referral), 'The referral, completed.', { etag: true, idempotent: true }),
            ...problems({ idempotent: true }),
          },
        },
      },
      async (request) => {
        const { body } = request;
        const caller = callerOf(request, institutionOf(body), body.requesterIdentifier);
        return await commands.complete(
          caller,
          request.params.referralId,
          {
            outcomeCode: body.outcomeCode,
            summary: body.summary,
            attachmentIds: body.attachmentIds,
            completedByName: body.completedByName,
          },
          ifMatchOf(request),
        );
      },
    );

    app.get(
      '/outcome-codes',
      {
        config: { action: 'catalog.outcome-codes' },
        schema: {
          ...operation({
            operationId: 'listOutcomeCodes',
            tag: 'Provider',
            scope: 'system/Referral.read',
            summary: 'List the outcomes a provider may report',
            description:
              "The catalog's outcome codes in use, in the catalog's order, with words for people: what " +
              'POST /referrals/{referralId}/complete takes as `outcomeCode`.',
          }),
          querystring: InstitutionParams,
          response: {
            200: success(Type.Object({ data: Type.Array(ref(OutcomeCode)) }), 'The outcome codes.'),
            ...problems(),
          },
        },
      },
      async (request) => {
        // The key must act for the institution it names, as on every read.
        callerOf(request, institutionOf(request.query), undefined);
        const codes = await deps.catalog.listOutcomeCodes();
        return {
          data: codes
            .filter((c) => c.active)
            .map(({ code, display, summaryRequired }) => ({ code, display, summaryRequired })),
        };
      },
    );

    app.put(
      '/referrals/:referralId/appointments/:appointmentId',
      {
        config: { action: 'referral.upsert-appointment', responseHeaders: referralHeaders },
        schema: {
          ...operation({
            operationId: 'upsertAppointment',
            tag: 'Provider',
            scope: 'system/Referral.write',
            summary: 'Create or update an appointment',
            description:
              "appointmentId is the provider system's own identifier, so repeating the PUT updates the same " +
              'appointment. A referral holds at most 50 appointments.',
          }),
          headers: GuardedHeaders,
          params: Type.Object(
            {
              referralId: ReferralId,
              appointmentId: Type.String({ pattern: '^[A-Za-z0-9._-]{1,64}$', maxLength: 64 }),
            },
            { additionalProperties: false },
          ),
          body: Type.Object(
            {
              ...ActingFor,
              status: Type.Enum([...APPOINTMENT_STATUSES]),
              startAt: Timestamp,
              location: Type.String({ minLength: 1, maxLength: 200 }),
            },
            { additionalProperties: false },
          ),
          response: {
            200: success(ref(Referral), 'The referral as it is now.', { etag: true }),
            ...problems(),
          },
        },
      },
      async (request) => {
        const { body, params } = request;
        const caller = callerOf(request, institutionOf(body), body.requesterIdentifier);
        const view = await commands.upsertAppointment(
          caller,
          params.referralId,
          params.appointmentId,
          { status: body.status, startAt: body.startAt, location: body.location },
          ifMatchOf(request),
        );
        return view;
      },
    );
  };
}
