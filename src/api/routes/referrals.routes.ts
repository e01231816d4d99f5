// The referral endpoints of the spec (contract §5.1–§5.6) and the sender operations it leaves out
// (§5.8–§5.9). Each handler checks the caller and calls one service function.
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { ValidationError } from '../../errors.ts';
import type { ApiDeps } from '../api-deps.ts';
import { PRIORITY_CODE_PATTERN, prioritiesOf } from '../../domain/priorities.ts';
import { REASON_ACTIONS } from '../../domain/reasons.ts';
import type { CoreStatus } from '../../domain/statuses.ts';
import { callerOf } from '../plugins/auth.ts';
import { ifMatchOf, institutionOf, createdReferralHeaders, referralHeaders } from '../http.ts';
import {
  ActingFor,
  InstitutionId,
  InstitutionIdType,
  MULTILINE,
  OfferingId,
  PersonName,
  Reason,
  ReasonCodeField,
  ReferralIdParams,
  RequesterIdentifier,
  Uin,
} from '../schemas/primitives.ts';
import { documentedAs } from '../schemas/documented.ts';
import { GuardedHeaders, GuardedPostHeaders, PostHeaders } from '../schemas/headers.ts';
import { ref } from '../schemas/named.ts';
import { operation } from '../schemas/operation.ts';
import {
  InstitutionParams,
  ListFilters,
  Note,
  Referral,
  ReferralFields,
  PriorityCode,
  ReasonCode,
  ReferralPage,
  ReferralSummary,
} from '../schemas/referral.schema.ts';
import { problems, success } from '../schemas/responses.ts';

const ADDITIONAL_FIELDS = ['ehrForm'] as const;

type ListQueryInput = {
  status?: CoreStatus[] | undefined;
  priority?: string[] | undefined;
  role?: 'sender' | 'provider' | undefined;
  offset?: number | undefined;
  pageSize?: number | undefined;
  sort?: 'updatedAt' | 'submittedAt' | 'createdAt' | undefined;
};

function listQuery(input: ListQueryInput, patientUin?: string) {
  return {
    coreStatuses: input.status ?? [],
    ...(input.priority === undefined ? {} : { priorities: input.priority }),
    ...(input.role === undefined ? {} : { side: input.role }),
    ...(patientUin === undefined ? {} : { patientUin }),
    sort: input.sort ?? 'updatedAt',
    offset: input.offset ?? 0,
    pageSize: input.pageSize ?? 10,
  };
}

export type ReferralRoutesDeps = Pick<ApiDeps, 'referralQueries' | 'referralCommands' | 'catalog'>;

export function referralRoutes(deps: ReferralRoutesDeps) {
  return (fastify: FastifyInstance) => {
    const app = fastify.withTypeProvider<TypeBoxTypeProvider>();

    app.get(
      '/institutions/:institutionIdType/:institutionId/referrals',
      {
        config: { action: 'referral.list' },
        schema: {
          ...operation({
            operationId: 'listReferrals',
            tag: 'Referrals',
            scope: 'system/Referral.read',
            summary: 'List referrals of an institution',
            description:
              'Referrals the institution sends, and those it receives once submitted, newest first, a page at ' +
              'a time: ask again with `offset` + `pageSize` while `metadata.hasNext` is true. To find referrals ' +
              'of one patient, use the search operation: patient identifiers never go into URLs.',
          }),
          params: InstitutionParams,
          querystring: Type.Object(
            { ...ListFilters, requesterIdentifier: Type.Optional(RequesterIdentifier) },
            { additionalProperties: false },
          ),
          response: { 200: success(ref(ReferralPage), 'One page of referrals.'), ...problems() },
        },
      },
      async (request) => {
        const caller = callerOf(request, institutionOf(request.params), request.query.requesterIdentifier);
        return deps.referralQueries.list(caller, listQuery(request.query));
      },
    );

    app.post(
      '/institutions/:institutionIdType/:institutionId/referrals/search',
      {
        config: { action: 'referral.search' },
        schema: {
          ...operation({
            operationId: 'searchReferrals',
            tag: 'Referrals',
            scope: 'system/Referral.read',
            summary: 'Search referrals of an institution',
            description:
              'The list operation with filters that must not appear in a URL, such as the patient UIN. It ' +
              'changes nothing, so it can be retried as it is.',
          }),
          headers: PostHeaders,
          params: InstitutionParams,
          body: Type.Object(
            {
              ...ListFilters,
              patientUin: Type.Optional(Uin),
              requesterIdentifier: Type.Optional(RequesterIdentifier),
            },
            { additionalProperties: false },
          ),
          response: {
            200: success(ref(ReferralPage), 'One page of referrals.', { idempotent: true }),
            ...problems({ idempotent: true }),
          },
        },
      },
      async (request) => {
        const caller = callerOf(request, institutionOf(request.params), request.body.requesterIdentifier);
        return deps.referralQueries.list(
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
          ...operation({
            operationId: 'getReferral',
            tag: 'Referrals',
            scope: 'system/Referral.read',
            summary: 'Get a referral',
            description:
              'The referral with its appointments, links, notes and timeline. Its `ETag` guards a later change ' +
              '(send it as `If-Match`). A client that forwards the form to the national EHR fetches it with ' +
              'additionalField=ehrForm immediately before submitting, and forwards the HTML unchanged.',
          }),
          params: ReferralIdParams,
          querystring: Type.Object(
            {
              requesterIdentifier: RequesterIdentifier,
              institutionIdType: InstitutionIdType,
              institutionId: InstitutionId,
              // Validated as text: the handler splits comma-separated values and names the allowed ones.
              additionalField: Type.Optional(
                documentedAs(
                  Type.Array(Type.String({ maxLength: 100 }), {
                    maxItems: 10,
                    description:
                      'Extra fields to include. Repeatable; comma-separated values are accepted too. ' +
                      '`ehrForm` adds `ehrForm` and `ehrFormType`.',
                  }),
                  Type.Array(Type.Enum([...ADDITIONAL_FIELDS]), { maxItems: 10 }),
                ),
              ),
            },
            { additionalProperties: false },
          ),
          response: {
            200: success(ref(Referral), 'The referral.', { etag: true }),
            ...problems(),
          },
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
        const view = await deps.referralQueries.get(caller, request.params.referralId, {
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
          ...operation({
            operationId: 'createReferral',
            tag: 'Referrals',
            scope: 'system/Referral.write',
            summary: 'Create a draft referral',
            description:
              'A draft with the fields given; submit it when it is complete. Send an Idempotency-Key, so that ' +
              'a retry after a lost answer does not create a second draft.',
          }),
          headers: PostHeaders,
          body: Type.Object({ ...ActingFor, ...ReferralFields }, { additionalProperties: false }),
          response: {
            201: success(ref(Referral), 'The draft.', { etag: true, location: true, idempotent: true }),
            ...problems({ idempotent: true }),
          },
        },
      },
      async (request, reply) => {
        const { institutionIdType, institutionId, requesterIdentifier, ...fields } = request.body;
        const caller = callerOf(
          request,
          { idType: institutionIdType, id: institutionId },
          requesterIdentifier,
        );
        const view = await deps.referralCommands.create(caller, fields);
        return reply.code(201).send(view);
      },
    );

    app.patch(
      '/referrals/:referralId',
      {
        config: { action: 'referral.update', responseHeaders: referralHeaders },
        schema: {
          ...operation({
            operationId: 'updateReferral',
            tag: 'Referrals',
            scope: 'system/Referral.write',
            summary: 'Update a draft (or a referral that awaits the sender)',
            description: 'Absent fields stay as they are; null clears a field.',
          }),
          headers: GuardedHeaders,
          params: ReferralIdParams,
          body: Type.Object({ ...ActingFor, ...ReferralFields }, { additionalProperties: false }),
          response: { 200: success(ref(Referral), 'The referral, updated.', { etag: true }), ...problems() },
        },
      },
      async (request) => {
        const { institutionIdType, institutionId, requesterIdentifier, ...fields } = request.body;
        const caller = callerOf(
          request,
          { idType: institutionIdType, id: institutionId },
          requesterIdentifier,
        );
        const view = await deps.referralCommands.update(
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
          ...operation({
            operationId: 'deleteReferral',
            tag: 'Referrals',
            scope: 'system/Referral.write',
            summary: 'Delete a draft',
            description: 'Returns the referral as it was. The row is kept, invisible, for the audit trail.',
          }),
          headers: GuardedHeaders,
          params: ReferralIdParams,
          querystring: Type.Object(
            {
              institutionIdType: InstitutionIdType,
              institutionId: InstitutionId,
              requesterIdentifier: Type.Optional(RequesterIdentifier),
            },
            { additionalProperties: false },
          ),
          response: {
            200: success(ref(ReferralSummary), 'The referral as it was before it was deleted.'),
            ...problems(),
          },
        },
      },
      async (request) => {
        const caller = callerOf(request, institutionOf(request.query), request.query.requesterIdentifier);
        return deps.referralCommands.delete(caller, request.params.referralId, ifMatchOf(request));
      },
    );

    app.post(
      '/referrals/:referralId/submit',
      {
        config: { action: 'referral.submit', responseHeaders: referralHeaders },
        schema: {
          ...operation({
            operationId: 'submitReferral',
            tag: 'Referrals',
            scope: 'system/Referral.write',
            summary: 'Submit a referral to its provider',
            description:
              'Needs an offering, a patient name and a patient UIN (422 incomplete_referral lists what is ' +
              'missing). The form is then forwarded to the national EHR.',
          }),
          headers: GuardedPostHeaders,
          params: ReferralIdParams,
          body: Type.Object(ActingFor, { additionalProperties: false }),
          response: {
            200: success(ref(Referral), 'The referral, pending acceptance.', {
              etag: true,
              idempotent: true,
            }),
            ...problems({ idempotent: true }),
          },
        },
      },
      async (request) => {
        const caller = callerOf(request, institutionOf(request.body), request.body.requesterIdentifier);
        return await deps.referralCommands.submit(caller, request.params.referralId, ifMatchOf(request));
      },
    );

    app.post(
      '/referrals/:referralId/cancel',
      {
        config: { action: 'referral.cancel', responseHeaders: referralHeaders },
        schema: {
          ...operation({
            operationId: 'cancelReferral',
            tag: 'Referrals',
            scope: 'system/Referral.write',
            summary: 'Cancel a referral',
            description:
              'Offer it only while `isCancellable` is true. `reasonCode` is a code of GET /reason-codes for ' +
              '`cancel`; the timeline quotes `cancelNote`, required without a code and with a code that says ' +
              'so. Scheduled appointments are cancelled with it.',
          }),
          headers: GuardedPostHeaders,
          params: ReferralIdParams,
          body: Type.Object(
            {
              ...ActingFor,
              reasonCode: Type.Optional(ReasonCodeField),
              cancelNote: Type.Optional(Reason),
              cancelledByName: Type.Optional(PersonName),
            },
            { additionalProperties: false },
          ),
          response: {
            200: success(ref(ReferralSummary), 'The referral, cancelled.', { etag: true, idempotent: true }),
            ...problems({ idempotent: true }),
          },
        },
      },
      async (request) => {
        const { body } = request;
        const caller = callerOf(request, institutionOf(body), body.requesterIdentifier);
        const summary = await deps.referralCommands.cancel(
          caller,
          request.params.referralId,
          { reasonCode: body.reasonCode, cancelNote: body.cancelNote, cancelledByName: body.cancelledByName },
          ifMatchOf(request),
        );
        return summary;
      },
    );

    app.post(
      '/referrals/:referralId/redirect',
      {
        config: { action: 'referral.redirect', responseHeaders: referralHeaders },
        schema: {
          ...operation({
            operationId: 'redirectReferral',
            tag: 'Referrals',
            scope: 'system/Referral.write',
            summary: 'Redirect a referral to another service',
            description:
              'The provider, from pending acceptance or accepted, or the sender while it awaits acceptance ' +
              '(and may cancel it), hands the referral on to another offering: it ends as `redirected`, and a ' +
              'successor for `offeringId`, submitted, carries its patient, clinical information, priority ' +
              'and files, with `redirectedTo`/`redirectedFrom` naming each other. `reasonCode` is a code of ' +
              'GET /reason-codes for `redirect`; the timeline quotes `comment`, required with a code that ' +
              'says so. `priority` (a code the new offering takes) is needed when the new offering does not ' +
              "take the referral's. The answer is the redirected referral.",
          }),
          headers: GuardedPostHeaders,
          params: ReferralIdParams,
          body: Type.Object(
            {
              ...ActingFor,
              offeringId: { ...OfferingId, description: 'The offering the successor is for.' },
              reasonCode: ReasonCodeField,
              comment: Type.Optional(Reason),
              priority: Type.Optional(
                Type.String({
                  pattern: PRIORITY_CODE_PATTERN,
                  maxLength: 64,
                  description:
                    "The successor's priority, a code of GET /priorities the new offering takes; absent: " +
                    "the referral's own.",
                }),
              ),
              redirectedByName: Type.Optional(PersonName),
            },
            { additionalProperties: false },
          ),
          response: {
            200: success(ref(Referral), 'The referral, redirected; `redirectedTo` names its successor.', {
              etag: true,
              idempotent: true,
            }),
            ...problems({ idempotent: true }),
          },
        },
      },
      async (request) => {
        const { body } = request;
        const caller = callerOf(request, institutionOf(body), body.requesterIdentifier);
        return await deps.referralCommands.redirect(
          caller,
          request.params.referralId,
          {
            offeringId: body.offeringId,
            reasonCode: body.reasonCode,
            comment: body.comment,
            priority: body.priority,
            redirectedByName: body.redirectedByName,
          },
          ifMatchOf(request),
        );
      },
    );

    app.post(
      '/referrals/:referralId/back-to-draft',
      {
        config: { action: 'referral.back-to-draft', responseHeaders: referralHeaders },
        schema: {
          ...operation({
            operationId: 'returnReferralToDraft',
            tag: 'Referrals',
            scope: 'system/Referral.write',
            summary: 'Return a referral to draft',
            description:
              'For a referral that is pending acceptance or awaits the sender. It loses its `submittedAt` ' +
              'and can be edited and submitted again. `reasonCode` (a code of GET /reason-codes for ' +
              '`back-to-draft`) and `comment` are optional; a code may require the comment.',
          }),
          headers: GuardedPostHeaders,
          params: ReferralIdParams,
          body: Type.Object(
            { ...ActingFor, reasonCode: Type.Optional(ReasonCodeField), comment: Type.Optional(Reason) },
            { additionalProperties: false },
          ),
          response: {
            200: success(ref(ReferralSummary), 'The referral, a draft again.', {
              etag: true,
              idempotent: true,
            }),
            ...problems({ idempotent: true }),
          },
        },
      },
      async (request) => {
        const caller = callerOf(request, institutionOf(request.body), request.body.requesterIdentifier);
        return await deps.referralCommands.backToDraft(
          caller,
          request.params.referralId,
          ifMatchOf(request),
          {
            reasonCode: request.body.reasonCode,
            comment: request.body.comment,
          },
        );
      },
    );

    app.get(
      '/priorities',
      {
        config: { action: 'catalog.priorities' },
        schema: {
          ...operation({
            operationId: 'listPriorities',
            tag: 'Referrals',
            scope: 'system/Referral.read',
            summary: 'List the priorities a referral may have',
            description:
              "The catalog's priorities in use, in the catalog's order, with words for people and the FHIR " +
              "request priority each maps to: what a referral's `priority` takes. `offeringId` keeps those the " +
              'offering takes; an offering the catalog does not have is a 400.',
          }),
          querystring: Type.Object(
            { ...InstitutionParams.properties, offeringId: Type.Optional(OfferingId) },
            { additionalProperties: false },
          ),
          response: {
            200: success(Type.Object({ data: Type.Array(ref(PriorityCode)) }), 'The priorities.'),
            ...problems(),
          },
        },
      },
      async (request) => {
        // The key must act for the institution it names, as on every read.
        callerOf(request, institutionOf(request.query), undefined);
        const { offeringId } = request.query;
        const codes = await deps.catalog.listPriorityCodes();
        let offering: { readonly priorities: readonly string[] | null } = { priorities: null };
        if (offeringId !== undefined) {
          const found = await deps.catalog.findOffering(offeringId);
          if (found === undefined)
            throw new ValidationError([{ path: 'query.offeringId', message: 'is not a known offering' }]);
          offering = found;
        }
        return {
          data: prioritiesOf(codes, offering).map(({ code, display, fhirPriority }) => ({
            code,
            display,
            fhirPriority,
          })),
        };
      },
    );

    app.get(
      '/reason-codes',
      {
        config: { action: 'catalog.reason-codes' },
        schema: {
          ...operation({
            operationId: 'listReasonCodes',
            tag: 'Referrals',
            scope: 'system/Referral.read',
            summary:
              'List the reasons a referral may be rejected, sent back, cancelled, returned to draft or redirected for',
            description:
              "The catalog's reason codes in use, in the catalog's order, with words for people, the " +
              'operations each is for and whether a comment must come with it: what `reasonCode` takes on ' +
              'reject, request-action, cancel, back-to-draft and redirect. `action` keeps the codes of one.',
          }),
          querystring: Type.Object(
            { ...InstitutionParams.properties, action: Type.Optional(Type.Enum([...REASON_ACTIONS])) },
            { additionalProperties: false },
          ),
          response: {
            200: success(Type.Object({ data: Type.Array(ref(ReasonCode)) }), 'The reason codes.'),
            ...problems(),
          },
        },
      },
      async (request) => {
        // The key must act for the institution it names, as on every read.
        callerOf(request, institutionOf(request.query), undefined);
        const action = request.query.action;
        const codes = await deps.catalog.listReasonCodes();
        return {
          data: codes
            .filter((c) => c.active && (action === undefined || c.actions.includes(action)))
            .map(({ code, display, actions, commentRequired }) => ({
              code,
              display,
              actions: [...actions],
              commentRequired,
            })),
        };
      },
    );

    app.post(
      '/referrals/:referralId/acknowledge-outcome',
      {
        config: { action: 'referral.acknowledge-outcome', responseHeaders: referralHeaders },
        schema: {
          ...operation({
            operationId: 'acknowledgeReferralOutcome',
            tag: 'Referrals',
            scope: 'system/Referral.write',
            summary: "Acknowledge the provider's outcome",
            description:
              'For a completed referral: the sender read its `outcome`. Until then the referral is listed ' +
              'under the `sender-action-required` filter, with `actionRequired.reason` ' +
              '`outcome-to-acknowledge`.',
          }),
          headers: GuardedPostHeaders,
          params: ReferralIdParams,
          body: Type.Object(
            { ...ActingFor, acknowledgedByName: Type.Optional(PersonName) },
            { additionalProperties: false },
          ),
          response: {
            200: success(ref(Referral), 'The referral, its outcome acknowledged.', {
              etag: true,
              idempotent: true,
            }),
            ...problems({ idempotent: true }),
          },
        },
      },
      async (request) => {
        const { body } = request;
        const caller = callerOf(request, institutionOf(body), body.requesterIdentifier);
        return await deps.referralCommands.acknowledgeOutcome(
          caller,
          request.params.referralId,
          { acknowledgedByName: body.acknowledgedByName },
          ifMatchOf(request),
        );
      },
    );

    app.post(
      '/referrals/:referralId/notes',
      {
        config: { action: 'referral.add-note' },
        schema: {
          ...operation({
            operationId: 'addReferralNote',
            tag: 'Referrals',
            scope: 'system/Referral.write',
            summary: 'Add a note to a referral',
            description:
              'Sender and provider can both add notes. Notes are plain text and immutable; a referral holds ' +
              'at most 200. Adding one changes the referral’s version, and the answer carries no ETag.',
          }),
          headers: GuardedPostHeaders,
          params: ReferralIdParams,
          body: Type.Object(
            {
              ...ActingFor,
              content: Type.String({ minLength: 1, maxLength: 8000, [MULTILINE]: true }),
              authorName: Type.Optional(PersonName),
            },
            { additionalProperties: false },
          ),
          response: {
            201: success(ref(Note), 'The note.', { idempotent: true }),
            ...problems({ idempotent: true }),
          },
        },
      },
      async (request, reply) => {
        const { body } = request;
        const caller = callerOf(request, institutionOf(body), body.requesterIdentifier);
        const note = await deps.referralCommands.addNote(
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
