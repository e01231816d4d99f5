// The serving modes: `refhub all` (API and background in one process, the only mode with PGlite),
// `refhub api` and `refhub worker`. Serving builds the context, loads the catalog (or the demo outside
// production), picks where forms go, starts what the mode runs and listens, then prints the banner.
// On SIGTERM or SIGINT it stops in order within SHUTDOWN_GRACE_SECONDS: readiness says "draining",
// the listener drains and closes, active jobs finish, the relays stop, the pools close.
import { flushCompileCache } from 'node:module';
import { loadConfig, type Config } from '../config.ts';
import { fail } from '../cli/failure.ts';
import { VERSION } from '../version.ts';
import { setUpDemo } from './demo-setup.ts';
import { checkEhrAddress } from '../services/outbound-address.ts';
import { requirePdfChecker } from '../services/attachments/pdf-probe.ts';
import { QUEUE_UNAVAILABLE } from '../queue/connections.ts';
import { errorCode } from '../queue/poll-loop.ts';
import { createContext, type AppContext } from './context.ts';

export type ServeCommand = 'all' | 'api' | 'worker';

const HOUSEKEEPING_INTERVAL_MS = 15 * 60_000;

/** The stages of a start, in order, at which LOG_LEVEL=debug logs the process's memory. */
type StartStage = 'loaded' | 'store' | 'catalog' | 'background' | 'app' | 'listening';

const MiB = 1024 * 1024;

/** `process.memoryUsage()` in MiB, one decimal: what the `start-up memory` debug line reports. */
function memoryInMiB(usage: NodeJS.MemoryUsage = process.memoryUsage()): Record<string, number> {
  return Object.fromEntries(
    (['rss', 'heapUsed', 'heapTotal', 'external', 'arrayBuffers'] as const).map((field) => [
      field,
      Math.round((usage[field] / MiB) * 10) / 10,
    ]),
  );
}

/** How long a stopping API process keeps its listener open while load balancers take it out. */
export function drainMs(graceSeconds: number): number {
  return Math.min(2_000, (graceSeconds * 1000) / 4);
}

/** Where forms go: EHR_URL, or (never in production) the sandbox EHR, started in this process. */
async function ehrTarget(ctx: AppContext): Promise<{ url: string; close: () => Promise<void> }> {
  if (ctx.config.ehrUrl !== undefined) return { url: ctx.config.ehrUrl, close: () => Promise.resolve() };
  const { createSandboxEhr } = await import('../sandbox-ehr/sandbox-ehr.ts');
  const sandbox = await createSandboxEhr({
    token: ctx.config.ehrToken,
    logger: ctx.logger.child({ component: 'sandbox-ehr' }),
  }).listen({ port: 0, host: '127.0.0.1' });
  ctx.logger.warn({ url: sandbox.url }, 'EHR_URL is unset: forms go to the in-process sandbox EHR');
  return sandbox;
}

/**
 * Claims the queues for this installation before anything touches them, and refuses to start when
 * another installation holds them (queue/backend.ts: a Redis prefix; queues in the database are the
 * installation's own). Queues out of reach at start do not stop a start (work waits in the outbox):
 * the reconciler of a process with workers claims them on its first pass after they are back.
 */
async function claimQueues(ctx: AppContext, withBackground: boolean): Promise<void> {
  try {
    await ctx.claimQueues();
    // A process with workers moves what an earlier release queued under the prefix's one tag
    // (queue/legacy-queues.ts) before they start; each reconciler pass does so again.
    if (withBackground) await moveLegacyQueues(ctx);
  } catch (error) {
    if ((error as { code?: unknown }).code === QUEUE_UNAVAILABLE) {
      const later = withBackground ? '; it is claimed once Redis is back' : '';
      ctx.logger.warn(
        { check: 'queues' },
        `Redis is unreachable: the queue prefix ${ctx.config.queuePrefix} is not claimed yet${later}`,
      );
      return;
    }
    await ctx.close();
    throw error;
  }
}

/** A move that fails is logged and left to the reconciler's next pass. */
async function moveLegacyQueues(ctx: AppContext): Promise<void> {
  try {
    await ctx.queues.moveLegacyQueues();
  } catch (error) {
    ctx.logger.warn(
      { err: { code: errorCode(error) } },
      'the jobs queued by an earlier release were not moved yet; the reconciler tries again',
    );
  }
}

export async function serve(command: ServeCommand): Promise<void> {
  // The code main.ts loaded, before anything is opened; logged once the logger exists.
  const loaded = process.memoryUsage();
  const config: Config = loadConfig();
  if (command !== 'all' && config.databaseUrl === undefined) {
    fail(
      `\`refhub ${command}\` runs against PostgreSQL: set DATABASE_URL. For embedded PGlite, run \`refhub all\`.`,
    );
  }
  const withApi = command !== 'worker';
  const withBackground = command !== 'api';
  if (withBackground) await checkEhrAddress(config);
  // A process that takes uploads checks PDFs with qpdf: production does not start without it.
  const pdfProblem = withApi ? await requirePdfChecker(config) : undefined;
  const ctx = await createContext(config, `refhub ${command}`, {}, 'migrate');
  if (pdfProblem !== undefined) {
    ctx.logger.warn(
      { check: 'pdf checker' },
      `${pdfProblem}: every PDF attachment is refused until qpdf is installed (QPDF_PATH)`,
    );
  }
  // At debug level, the memory after each stage of the start (docs/performance.md, "Memory").
  const memoryAt = (stage: StartStage, usage?: NodeJS.MemoryUsage) => {
    if (ctx.logger.isLevelEnabled('debug'))
      ctx.logger.debug({ stage, memoryMiB: memoryInMiB(usage) }, 'start-up memory');
  };
  memoryAt('loaded', loaded);
  memoryAt('store');
  await claimQueues(ctx, withBackground);
  let demo;
  if (config.catalogFile !== undefined) {
    const loaded = await ctx.catalog.loadFile(config.catalogFile);
    ctx.logger.info(loaded, 'catalog loaded');
  } else if (config.env !== 'production' && withApi) {
    demo = await setUpDemo(ctx.db, {
      dataDir: config.dataDir,
      engine: ctx.store.engine,
      installationId: await ctx.installationId(),
    });
  }
  memoryAt('catalog');
  const queues = await ctx.queues.health();
  if (queues.problem !== undefined)
    ctx.logger.error({ check: 'queues' }, `${queues.problem}; /readyz fails until it is fixed`);

  const ehr = withBackground ? await ehrTarget(ctx) : undefined;
  const { startBackground } = await import('./background.ts');
  const background = ehr === undefined ? undefined : startBackground(ctx, { ehrUrl: ehr.url });
  memoryAt('background');
  // Loaded here, so that operator commands do not pay for the HTTP stack. A worker serves only its
  // health checks and metrics.
  const app = withApi
    ? await (await import('./api-app.ts')).createApiApp(ctx)
    : await (await import('../api/ops-app.ts')).buildOpsApp(ctx);
  memoryAt('app');
  const stopHousekeeping = withApi ? ctx.housekeeping.start(HOUSEKEEPING_INTERVAL_MS) : () => undefined;
  // On PGlite this process holds DATA_DIR: it runs `refhub keys …` and `refhub clients …` for the CLI.
  const control =
    ctx.store.engine === 'pglite'
      ? await (await import('./control-socket.ts')).listenForCommands(ctx, config.dataDir)
      : undefined;
  // The audit trail's sealer: every API process runs one, and one at a time does the work.
  const stopSealing = withApi
    ? ctx.auditChain.start(config.auditSealIntervalSeconds * 1000, (error: unknown) => {
        ctx.logger.warn(
          { err: { type: (error as Error).name } },
          'sealing the audit trail failed; it will retry',
        );
      })
    : () => undefined;

  let closing = false;
  const shutdown = async (signal: string) => {
    if (closing) return;
    closing = true;
    ctx.logger.info({ signal, graceSeconds: config.shutdownGraceSeconds }, 'shutting down');
    const deadline = setTimeout(() => {
      ctx.logger.error('the shutdown grace period ran out; stopping with work unfinished');
      ctx.logger.flush();
      process.exit(1);
    }, config.shutdownGraceSeconds * 1000);
    deadline.unref();
    stopHousekeeping();
    stopSealing();
    // First /readyz says "draining", and the listener stays open a moment, so that a load balancer
    // stops sending requests and the ones already on their way are read. Closing the listener at once
    // would reset a connection whose request had not been read yet. Then no new connections; the
    // requests in flight finish; active jobs finish (worker.close()); the relay and the reconciler
    // stop; the pools close.
    ctx.lifecycle.draining = true;
    if (withApi) await new Promise((resolve) => setTimeout(resolve, drainMs(config.shutdownGraceSeconds)));
    await app.close();
    await control?.close();
    await background?.stop();
    await ehr?.close();
    // An embedded installation is this one process: nothing of it uses the queues any more, so its
    // prefix is free for whatever runs next (queue/prefix-claim.ts). A PostgreSQL installation's
    // claim lapses by itself once its last process is gone.
    if (ctx.store.engine === 'pglite') {
      await ctx.releaseQueues().catch((error: unknown) => {
        ctx.logger.warn({ err: { code: errorCode(error) } }, 'the queue prefix claim was not given back');
      });
    }
    await ctx.close();
    ctx.logger.info('stopped');
    ctx.logger.flush(() => process.exit(0));
  };
  process.on('SIGTERM', (s) => void shutdown(s));
  process.on('SIGINT', (s) => void shutdown(s));

  const storeName = ctx.store.engine === 'pglite' ? `embedded PGlite in ${config.dataDir}` : 'PostgreSQL';
  const address = await app.listen({ port: config.port, host: config.host });
  memoryAt('listening');
  // Everything a serving process loads is loaded by now: write the compile cache (bin/refhub.js) at
  // once, so that the next start finds it even if this process never exits cleanly.
  flushCompileCache();
  const banner = [''];
  if (withApi) {
    banner.push(
      `refhub ${VERSION} is serving ${address} on ${storeName}`,
      `  API docs: ${address}/docs    Links: ${config.publicUrl}/l/…    Queues: ${address}/admin`,
    );
  } else {
    banner.push(`refhub ${VERSION} worker is running on ${storeName}; health and metrics at ${address}`);
  }
  const backend = ctx.queues.backend;
  banner.push(
    queues.problem === undefined
      ? `  Queues: ${backend.address} (QUEUE_BACKEND=${backend.name})`
      : `  Queues UNREACHABLE: ${backend.address} (QUEUE_BACKEND=${backend.name}): ${queues.problem}; ` +
          'requests are taken and their work waits in the outbox until the queues are back',
  );
  if (ehr !== undefined)
    banner.push(`  Forms go to ${config.ehrUrl === undefined ? 'the sandbox EHR' : 'the EHR'} at ${ehr.url}`);
  if (pdfProblem !== undefined) {
    banner.push(`  PDF attachments are refused: ${pdfProblem} (install qpdf, or set QPDF_PATH)`);
  }
  if (demo) {
    banner.push(
      '',
      `The demo catalog was loaded. These test keys are shown once (also in ${demo.file}, mode 600):`,
      ...demo.keys.map((k) => `  ${k.label.padEnd(14)} ${k.key}  (${k.description})`),
    );
  }
  process.stdout.write(`${banner.join('\n')}\n\n`);
}
