// The referral endpoints of the spec (contract §5.1–§5.6) and the sender operations it leaves out
// (§5.8–§5.9). Each handler checks the caller and calls one service function.
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { ValidationError } from '../../errors.ts';
import type { AppContext } from '../../context.ts';
import type { CoreStatus } from '../../domain/statuses.ts';
import { callerOf } from '../plugins/auth.ts';
import { ifMatchOf, institutionOf, createdReferralHeaders, referralHeaders } from '../http.ts';
import {
  ActingFor,
  InstitutionId,
  InstitutionIdType,
  PersonName,
  Reason,
  ReferralIdParams,
  RequesterIdentifier,
  Uin,
} from '../schemas/primitives.ts';
import { problemResponses } from '../schemas/problem.schema.ts';
import {
  InstitutionParams,
  ListFilters,
  Note,
  Referral,
  ReferralFields,
  ReferralPage,
  ReferralSummary,
} from '../schemas/referral.schema.ts';

const TAG = ['Referrals'];
const ADDITIONAL_FIELDS = ['ehrForm'] as const;

type ListQueryInput = {
  status?: CoreStatus[] | undefined;
  role?: 'sender' | 'provider' | undefined;
  offset?: number | undefined;
  pageSize?: number | undefined;
  sort?: 'updatedAt' | 'submittedAt' | 'createdAt' | undefined;
};

function listQuery(input: ListQueryInput, patientUin?: string) {
  return {
    coreStatuses: input.status ?? [],
    ...(input.role === undefined ? {} : { side: input.role }),
    ...(patientUin === undefined ? {} : { patientUin }),
    sort: input.sort ?? 'updatedAt',
    offset: input.offset ?? 0,
    pageSize: input.pageSize ?? 10,
  };
}

export function referralRoutes(ctx: AppContext) {
  return (fastify: FastifyInstance) => {
    const app = fastify.withTypeProvider<TypeBoxTypeProvider>();

    app.get(
      '/institutions/:institutionIdType/:institutionId/referrals',
      {
        config: { action: 'referral.list' },
        schema: {
          tags: TAG,
          summary: 'List referrals of an institution',
          description:
            'Referrals the institution sends, and those it receives once submitted. To find referrals of one ' +
            'patient, use the search endpoint: patient identifiers never go into URLs.',
          params: InstitutionParams,
          querystring: Type.Object(
            { ...ListFilters, requesterIdentifier: Type.Optional(RequesterIdentifier) },
            { additionalProperties: false },
          ),
          response: { 200: ReferralPage, ...problemResponses },
        },
      },
      async (request) => {
        const caller = callerOf(request, institutionOf(request.params), request.query.requesterIdentifier);
        return ctx.referralQueries.list(caller, listQuery(request.query));
      },
    );

    app.post(
      '/institutions/:institutionIdType/:institutionId/referrals/search',
      {
        config: { action: 'referral.search' },
        schema: {
          tags: TAG,
          summary: 'Search referrals of an institution',
          description:
            'The list endpoint with filters that must not appear in a URL, such as the patient UIN.',
          params: InstitutionParams,
          body: Type.Object(
            {
              ...ListFilters,
              patientUin: Type.Optional(Uin),
              requesterIdentifier: Type.Optional(RequesterIdentifier),
            },
            { additionalProperties: false },
          ),
          response: { 200: ReferralPage, ...problemResponses },
        },
      },
      async (request) => {
        const caller = callerOf(request, institutionOf(request.params), request.body.requesterIdentifier);
        return ctx.referralQueries.list(
          caller,
          listQuery(request.body, request.body.patientUin),
          'referral.search',
        );
      },
    );

    app.get(
      '/referrals/:referralId',
      {
        config: { action: 'referral.read', responseHeaders: referralHeaders },
        schema: {
          tags: TAG,
          summary: 'Get a referral',
          description:
            'A client that forwards the form to the national EHR fetches it with additionalField=ehrForm ' +
            'immediately before submitting, and forwards the HTML unchanged.',
          params: ReferralIdParams,
          querystring: Type.Object(
            {
              requesterIdentifier: RequesterIdentifier,
              institutionIdType: InstitutionIdType,
              institutionId: InstitutionId,
              additionalField: Type.Optional(
                Type.Array(Type.String({ maxLength: 100 }), {
                  maxItems: 10,
                  description: 'Repeatable or comma-separated. Values: ehrForm.',
                }),
              ),
            },
            { additionalProperties: false },
          ),
          response: { 200: Referral, ...problemResponses },
        },
      },
      async (request) => {
        const { query } = request;
        const fields = (query.additionalField ?? [])
          .flatMap((f) => f.split(','))
          .map((f) => f.trim())
          .filter(Boolean);
        const unknown = fields.filter((f) => !(ADDITIONAL_FIELDS as readonly string[]).includes(f));
        if (unknown.length > 0) {
          throw new ValidationError([
            { path: 'query.additionalField', message: `must be one of: ${ADDITIONAL_FIELDS.join(', ')}` },
          ]);
        }
        const caller = callerOf(request, institutionOf(query), query.requesterIdentifier);
        const view = await ctx.referralQueries.get(caller, request.params.referralId, {
          ehrForm: fields.includes('ehrForm'),
        });
        return view;
      },
    );

    app.post(
      '/referrals',
      {
        config: { action: 'referral.create', responseHeaders: createdReferralHeaders },
        schema: {
          tags: TAG,
          summary: 'Create a draft referral',
          body: Type.Object({ ...ActingFor, ...ReferralFields }, { additionalProperties: false }),
          response: { 201: Referral, ...problemResponses },
        },
      },
      async (request, reply) => {
        const { institutionIdType, institutionId, requesterIdentifier, ...fields } = request.body;
        const caller = callerOf(
          request,
          { idType: institutionIdType, id: institutionId },
          requesterIdentifier,
        );
        const view = await ctx.referralCommands.create(caller, fields);
        return reply.code(201).send(view);
      },
    );

    app.patch(
      '/referrals/:referralId',
      {
        config: { action: 'referral.update', responseHeaders: referralHeaders },
        schema: {
          tags: TAG,
          summary: 'Update a draft (or a referral that awaits the sender)',
          description: 'Absent fields stay as they are; null clears a field.',
          params: ReferralIdParams,
          body: Type.Object({ ...ActingFor, ...ReferralFields }, { additionalProperties: false }),
          response: { 200: Referral, ...problemResponses },
        },
      },
      async (request) => {
        const { institutionIdType, institutionId, requesterIdentifier, ...fields } = request.body;
        const caller = callerOf(
          request,
          { idType: institutionIdType, id: institutionId },
          requesterIdentifier,
        );
        const view = await ctx.referralCommands.update(
          caller,
          request.params.referralId,
          fields,
          ifMatchOf(request),
        );
        return view;
      },
    );

    app.delete(
      '/referrals/:referralId',
      {
        config: { action: 'referral.delete' },
        schema: {
          tags: TAG,
          summary: 'Delete a draft',
          description: 'Returns the referral as it was. The row is kept, invisible, for the audit trail.',
          params: ReferralIdParams,
          querystring: Type.Object(
            {
              institutionIdType: InstitutionIdType,
              institutionId: InstitutionId,
              requesterIdentifier: Type.Optional(RequesterIdentifier),
            },
            { additionalProperties: false },
          ),
          response: { 200: ReferralSummary, ...problemResponses },
        },
      },
      async (request) => {
        const caller = callerOf(request, institutionOf(request.query), request.query.requesterIdentifier);
        return ctx.referralCommands.delete(caller, request.params.referralId, ifMatchOf(request));
      },
    );

    app.post(
      '/referrals/:referralId/submit',
      {
        config: { action: 'referral.submit', responseHeaders: referralHeaders },
        schema: {
          tags: TAG,
          summary: 'Submit a referral to its provider',
          description:
            'Needs an offering, a patient name and a patient UIN (422 incomplete_referral lists what is missing).',
          params: ReferralIdParams,
          body: Type.Object(ActingFor, { additionalProperties: false }),
          response: { 200: Referral, ...problemResponses },
        },
      },
      async (request) => {
        const caller = callerOf(request, institutionOf(request.body), request.body.requesterIdentifier);
        return await ctx.referralCommands.submit(caller, request.params.referralId, ifMatchOf(request));
      },
    );

    app.post(
      '/referrals/:referralId/cancel',
      {
        config: { action: 'referral.cancel', responseHeaders: referralHeaders },
        schema: {
          tags: TAG,
          summary: 'Cancel a referral',
          params: ReferralIdParams,
          body: Type.Object(
            { ...ActingFor, cancelNote: Reason, cancelledByName: Type.Optional(PersonName) },
            { additionalProperties: false },
          ),
          response: { 200: ReferralSummary, ...problemResponses },
        },
      },
      async (request) => {
        const { body } = request;
        const caller = callerOf(request, institutionOf(body), body.requesterIdentifier);
        const summary = await ctx.referralCommands.cancel(
          caller,
          request.params.referralId,
          { cancelNote: body.cancelNote, cancelledByName: body.cancelledByName },
          ifMatchOf(request),
        );
        return summary;
      },
    );

    app.post(
      '/referrals/:referralId/back-to-draft',
      {
        config: { action: 'referral.back-to-draft', responseHeaders: referralHeaders },
        schema: {
          tags: TAG,
          summary: 'Return a referral to draft',
          params: ReferralIdParams,
          body: Type.Object(ActingFor, { additionalProperties: false }),
          response: { 200: ReferralSummary, ...problemResponses },
        },
      },
      async (request) => {
        const caller = callerOf(request, institutionOf(request.body), request.body.requesterIdentifier);
        return await ctx.referralCommands.backToDraft(caller, request.params.referralId, ifMatchOf(request));
      },
    );

    app.post(
      '/referrals/:referralId/notes',
      {
        config: { action: 'referral.add-note' },
        schema: {
          tags: TAG,
          summary: 'Add a note to a referral',
          description: 'Notes are plain text and immutable; a referral holds at most 200.',
          params: ReferralIdParams,
          body: Type.Object(
            {
              ...ActingFor,
              content: Type.String({ minLength: 1, maxLength: 8000 }),
              authorName: Type.Optional(PersonName),
            },
            { additionalProperties: false },
          ),
          response: { 201: Note, ...problemResponses },
        },
      },
      async (request, reply) => {
        const { body } = request;
        const caller = callerOf(request, institutionOf(body), body.requesterIdentifier);
        const note = await ctx.referralCommands.addNote(
          caller,
          request.params.referralId,
          { content: body.content, authorName: body.authorName },
          ifMatchOf(request),
        );
        return reply.code(201).send(note);
      },
    );
  };
}
