// GET /doctor: a serving process's own view of its installation, for `refhub doctor --server` and
// for operators. It runs the doctor's checks (services/doctor-checks.ts) with what this process
// really uses (its store, its Redis connection, its EHR_URL, its qpdf) and lists its effective
// settings, so an operator need not guess from their shell's environment what the server was
// started with. Secrets
// are shown only as set or unset, and URLs without passwords or query values. Ops keys only, as
// `Authorization: ApiKey <key>` or as the password of HTTP Basic (a browser asks for it).
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { describeConfig } from '../../config.ts';
import { ForbiddenRoleError, UnauthorizedError } from '../../errors.ts';
import {
  ehrUrlCheck,
  scannerCheck,
  failed,
  notChecked,
  passed,
  pdfCheckerCheck,
  queuesCheck,
  storeCheckNames,
  storeChecks,
  type DoctorCheck,
  type DoctorReport,
} from '../../services/doctor-checks.ts';
import { BASIC_CHALLENGE, presentedKey } from '../admin/ops-auth.ts';
import type { ApiDeps } from '../api-deps.ts';
import { sendProblem } from '../plugins/problem.ts';
import { DoctorReportSchema } from '../schemas/doctor.schema.ts';
import { CHECK_TIMEOUT_MS, within } from './health.routes.ts';

export const DOCTOR_PATH = '/doctor';

export type DoctorRoutesDeps = Pick<ApiDeps, 'config' | 'store' | 'queues' | 'apiKeys' | 'pingScanner'>;

export function doctorRoutes(deps: DoctorRoutesDeps) {
  const { engine } = deps.store;

  async function opsOnly(request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply | undefined> {
    const presented = presentedKey(request.headers.authorization);
    const key = presented === undefined ? undefined : await deps.apiKeys.authenticate(presented);
    if (key === undefined) {
      void reply.header('WWW-Authenticate', BASIC_CHALLENGE);
      return sendProblem(
        reply,
        new UnauthorizedError('Send an ops key as "Authorization: ApiKey <key>" (or as the Basic password).'),
      );
    }
    if (key.role !== 'ops') {
      return sendProblem(reply, new ForbiddenRoleError(`A ${key.role} key may not read /doctor.`));
    }
    return undefined;
  }

  async function checks(): Promise<DoctorCheck[]> {
    const store = within(storeChecks(deps.store.probe, engine), CHECK_TIMEOUT_MS).catch(() => [
      failed('database', 'the database did not answer in time'),
      ...storeCheckNames(engine)
        .slice(1)
        .map((name) => notChecked(name, 'the database did not answer')),
    ]);
    const backend = deps.queues.backend;
    const queues = within(deps.queues.health(), CHECK_TIMEOUT_MS).then(
      (health) => queuesCheck(backend, health),
      () => queuesCheck(backend, { problem: 'the queues did not answer in time', detail: undefined }),
    );
    const lock =
      engine === 'pglite'
        ? [passed('pglite lock', `this process (${process.pid}) holds DATA_DIR ${deps.config.dataDir}`)]
        : [];
    return [
      ...lock,
      ...(await store),
      await queues,
      await ehrUrlCheck(deps.config),
      // Bounded by its own deadline, and never throws.
      await scannerCheck(deps.config, deps.pingScanner),
      // Likewise: qpdf as this process runs it for every PDF upload.
      await pdfCheckerCheck(deps.config),
    ];
  }

  return (app: FastifyInstance) => {
    app.get(
      DOCTOR_PATH,
      { onRequest: opsOnly, schema: { hide: true, response: { 200: DoctorReportSchema } } },
      async (): Promise<DoctorReport> => ({
        pid: process.pid,
        store: engine,
        checks: await checks(),
        configuration: describeConfig(deps.config),
      }),
    );
  };
}
