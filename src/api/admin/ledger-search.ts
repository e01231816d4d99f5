// The ops pages of the ledger search (the capability `ledger-search`): `/admin/ledger` searches the
// forwards' ledger or the webhook deliveries by a time range and a filter, a keyset page at a time;
// `/admin/ledger/export` streams the whole search as CSV or NDJSON; `GET /admin/ledger/replay` is the
// dry run and its confirmation; `POST /admin/ledger/replay` runs the replay. The POST is a change: the
// sign-in guard lets it through only with OPS_DASHBOARD_WRITE=true and from the ops pages themselves
// (Origin and Sec-Fetch-Site), as the queue dashboard's changes. A bad filter is answered with
// problem+json naming the field (the API's error handler). Reads are audited here with the referrals
// they show; a replay is audited by the service (who, the referrals) and recorded (the filter, counts).
import { randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { create as contentDisposition } from 'content-disposition';
import {
  EXPORT_FORMATS,
  EXPORT_MEDIA_TYPES,
  filterFields,
  LEDGERS,
  parseLedgerFilter,
  type ExportFormat,
  type FilterInput,
  type Ledger,
} from '../../domain/ledger-search.ts';
import { UnauthorizedError, ValidationError } from '../../errors.ts';
import {
  LEDGER_EXPORT_PATH,
  LEDGER_PATH,
  LEDGER_REPLAY_PATH,
  ledgerPageCsp,
  renderLedgerSearchPage,
  renderReplayConfirmPage,
  renderReplayDonePage,
} from '../../render/pages/ledger-search.page.ts';
import type { LedgerSearch } from '../../services/ledger-search.service.ts';
import type { DisplayTime } from '../../domain/display-time.ts';
import type { AdminAudit } from './admin-audit.ts';
import type { OpsAuth } from './ops-auth.ts';
import { registerStrictFormParser } from '../request-encoding.ts';

export interface LedgerPagesDeps {
  readonly ledgerSearch: Pick<LedgerSearch, 'page' | 'exportLines' | 'dryRun' | 'replay'>;
  readonly displayTime: Pick<DisplayTime, 'dateTime'>;
  readonly writable: boolean;
  readonly audit: AdminAudit;
  readonly auth: Pick<OpsAuth, 'sessionOf'>;
}

/** Rows on one page of the search. */
const PAGE_ROWS = 50;

type Query = Readonly<Record<string, string | string[] | undefined>>;

/** One value of a field sent at most once; a field sent twice is refused, naming it. */
function single(query: Query, name: string): string | undefined {
  const value = query[name];
  if (Array.isArray(value)) throw new ValidationError([{ path: name, message: 'must be given once' }]);
  return value;
}

function ledgerOf(query: Query): Ledger {
  const value = single(query, 'ledger');
  if (value === undefined || !(LEDGERS as readonly string[]).includes(value)) {
    throw new ValidationError([{ path: 'ledger', message: `must be ${LEDGERS.join(' or ')}` }]);
  }
  return value as Ledger;
}

function inputOf(query: Query): FilterInput {
  return {
    from: single(query, 'from'),
    to: single(query, 'to'),
    outcome: single(query, 'outcome'),
    status: single(query, 'status'),
    errorCode: single(query, 'errorCode'),
    offering: single(query, 'offering'),
    institution: single(query, 'institution'),
    referral: single(query, 'referral'),
  };
}

/** The filter of what was sent; problem+json naming each bad field otherwise. */
function checkedLedgerFilter(input: FilterInput) {
  const parsed = parseLedgerFilter(input);
  if ('problems' in parsed) {
    throw new ValidationError(parsed.problems.map((p) => ({ path: p.field, message: p.message })));
  }
  return parsed.filter;
}

function formatOf(query: Query): ExportFormat {
  const value = single(query, 'format');
  if (value === undefined || !(EXPORT_FORMATS as readonly string[]).includes(value)) {
    throw new ValidationError([{ path: 'format', message: `must be ${EXPORT_FORMATS.join(' or ')}` }]);
  }
  return value as ExportFormat;
}

function sendPage(reply: FastifyReply, nonce: string, page: string): FastifyReply {
  return reply
    .header('Content-Security-Policy', ledgerPageCsp(nonce))
    .type('text/html; charset=utf-8')
    .send(page);
}

export function ledgerPages(deps: LedgerPagesDeps) {
  return (app: FastifyInstance, _options: unknown, done: (error?: Error) => void) => {
    registerStrictFormParser(app);
    const sessionOf = (request: FastifyRequest) => {
      const session = deps.auth.sessionOf(request);
      if (session === undefined) throw new UnauthorizedError();
      return session;
    };
    const frameOf = (request: FastifyRequest) => ({
      nonce: randomBytes(16).toString('base64'),
      keyPrefix: sessionOf(request).key.prefix,
      requestId: request.id,
    });

    app.get(LEDGER_PATH, { schema: { hide: true } }, async (request, reply) => {
      const session = sessionOf(request);
      const query = request.query as Query;
      // The form alone until a search is asked for: the first visit has no filter.
      if (Object.keys(query).length === 0) {
        await deps.audit.record(request, {
          action: 'admin.ledger.read',
          outcome: 'success',
          key: session.key,
          user: session.user,
        });
        const f = frameOf(request);
        return sendPage(
          reply,
          f.nonce,
          renderLedgerSearchPage({
            ...f,
            displayTime: deps.displayTime,
            ledger: 'forwards',
            fields: {},
            page: undefined,
          }),
        );
      }
      const ledger = ledgerOf(query);
      const filter = checkedLedgerFilter(inputOf(query));
      const page = await deps.ledgerSearch.page(ledger, filter, single(query, 'after'), PAGE_ROWS);
      await deps.audit.record(request, {
        action: 'admin.ledger.read',
        outcome: 'success',
        key: session.key,
        user: session.user,
        referralIds: [...new Set(page.rows.flatMap((r) => (r.referralId === null ? [] : [r.referralId])))],
      });
      const f = frameOf(request);
      return sendPage(
        reply,
        f.nonce,
        renderLedgerSearchPage({
          ...f,
          displayTime: deps.displayTime,
          ledger,
          fields: filterFields(filter),
          page,
        }),
      );
    });

    app.get(LEDGER_EXPORT_PATH, { schema: { hide: true } }, async (request, reply) => {
      const session = sessionOf(request);
      const query = request.query as Query;
      const ledger = ledgerOf(query);
      const filter = checkedLedgerFilter(inputOf(query));
      const format = formatOf(query);
      await deps.audit.record(request, {
        action: 'admin.ledger.export',
        outcome: 'success',
        key: session.key,
        user: session.user,
      });
      const name = `refhub-${ledger}-${filter.from.toISOString().slice(0, 10)}-${filter.to.toISOString().slice(0, 10)}.${format}`;
      // Streamed: each batch of rows is written as it is read, never the whole export in memory.
      return reply
        .type(EXPORT_MEDIA_TYPES[format])
        .header('Content-Disposition', contentDisposition(name))
        .send(Readable.from(deps.ledgerSearch.exportLines(ledger, filter, format)));
    });

    app.get(LEDGER_REPLAY_PATH, { schema: { hide: true } }, async (request, reply) => {
      const session = sessionOf(request);
      const query = request.query as Query;
      const ledger = ledgerOf(query);
      const filter = checkedLedgerFilter(inputOf(query));
      const plan = await deps.ledgerSearch.dryRun(ledger, filter);
      await deps.audit.record(request, {
        action: 'admin.ledger.dry-run',
        outcome: 'success',
        key: session.key,
        user: session.user,
        referralIds: [
          ...new Set(plan.candidates.flatMap((c) => (c.referralId === null ? [] : [c.referralId]))),
        ],
      });
      const f = frameOf(request);
      return sendPage(
        reply,
        f.nonce,
        renderReplayConfirmPage({
          ...f,
          ledger,
          fields: filterFields(filter),
          plan,
          writable: deps.writable,
        }),
      );
    });

    app.post(LEDGER_REPLAY_PATH, { schema: { hide: true } }, async (request, reply) => {
      const session = sessionOf(request);
      const body = (request.body ?? {}) as Query;
      const ledger = ledgerOf(body);
      const filter = checkedLedgerFilter(inputOf(body));
      const plan = await deps.ledgerSearch.replay(ledger, filter, {
        requestId: request.id,
        apiKeyId: session.key.id,
        system: session.key.system,
        requester: session.user,
      });
      const f = frameOf(request);
      return sendPage(
        reply,
        f.nonce,
        renderReplayDonePage({ ...f, ledger, fields: filterFields(filter), plan }),
      );
    });
    done();
  };
}
