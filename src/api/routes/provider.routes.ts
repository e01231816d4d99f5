// The provider's operations (contract §5.10): accept, reject, ask the sender to act, and keep the
// referral's appointments.
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { AppContext } from '../../context.ts';
import { APPOINTMENT_STATUSES } from '../../domain/statuses.ts';
import { callerOf } from '../plugins/auth.ts';
import { ifMatchOf, institutionOf, referralHeaders } from '../http.ts';
import {
  ActingFor,
  PersonName,
  Reason,
  ReferralId,
  ReferralIdParams,
  Timestamp,
} from '../schemas/primitives.ts';
import { problemResponses } from '../schemas/problem.schema.ts';
import { Referral } from '../schemas/referral.schema.ts';

const TAG = ['Provider'];

export function providerRoutes(ctx: AppContext) {
  return (fastify: FastifyInstance) => {
    const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
    const commands = ctx.referralCommands;

    app.post(
      '/referrals/:referralId/accept',
      {
        config: { action: 'referral.accept', responseHeaders: referralHeaders },
        schema: {
          tags: TAG,
          summary: 'Accept a referral',
          params: ReferralIdParams,
          body: Type.Object(
            { ...ActingFor, acceptedByName: Type.Optional(PersonName) },
            { additionalProperties: false },
          ),
          response: { 200: Referral, ...problemResponses },
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
        );
        return view;
      },
    );

    app.post(
      '/referrals/:referralId/reject',
      {
        config: { action: 'referral.reject', responseHeaders: referralHeaders },
        schema: {
          tags: TAG,
          summary: 'Reject a referral',
          params: ReferralIdParams,
          body: Type.Object(
            { ...ActingFor, reason: Reason, rejectedByName: Type.Optional(PersonName) },
            { additionalProperties: false },
          ),
          response: { 200: Referral, ...problemResponses },
        },
      },
      async (request) => {
        const { body } = request;
        const caller = callerOf(request, institutionOf(body), body.requesterIdentifier);
        const view = await commands.reject(
          caller,
          request.params.referralId,
          body.reason,
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
          tags: TAG,
          summary: 'Ask the sender to act on a referral',
          params: ReferralIdParams,
          body: Type.Object(
            { ...ActingFor, reason: Reason, requestedByName: Type.Optional(PersonName) },
            { additionalProperties: false },
          ),
          response: { 200: Referral, ...problemResponses },
        },
      },
      async (request) => {
        const { body } = request;
        const caller = callerOf(request, institutionOf(body), body.requesterIdentifier);
        const view = await commands.requestAction(
          caller,
          request.params.referralId,
          body.reason,
          ifMatchOf(request),
          body.requestedByName,
        );
        return view;
      },
    );

    app.put(
      '/referrals/:referralId/appointments/:appointmentId',
      {
        config: { action: 'referral.upsert-appointment', responseHeaders: referralHeaders },
        schema: {
          tags: TAG,
          summary: 'Create or update an appointment',
          description:
            "appointmentId is the provider system's own identifier, so repeating the PUT updates the same " +
            'appointment. A referral holds at most 50 appointments.',
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
          response: { 200: Referral, ...problemResponses },
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
