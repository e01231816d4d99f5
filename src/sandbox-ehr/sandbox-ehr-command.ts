// `refhub sandbox-ehr`: the sandbox EHR as a process of its own. It prints exactly one line to
// stdout, `sandbox EHR listening on <EHR URL>`, once it accepts connections (scripts and tests wait
// for it and read the port from it); its logs go to stderr so that the line stays alone. It stops
// cleanly on SIGTERM or SIGINT, and also when the program that spawned it with an IPC channel goes
// away, so a sandbox started by a test run or a dev script cannot outlive it.
import { InvalidArgumentError } from 'commander';
import type { Config } from '../config.ts';
import { createLogger } from '../logger.ts';
import { createSandboxEhr } from './sandbox-ehr.ts';

export const SANDBOX_DEFAULT_PORT = 4010;

/** Listen errors that are the operator's to fix, reported as a bad argument rather than a stack trace. */
const LISTEN_FAILURES = new Set(['EADDRINUSE', 'EADDRNOTAVAIL', 'EACCES', 'ENOTFOUND', 'EAI_AGAIN']);

export interface SandboxEhrCommandOptions {
  readonly port: number;
  readonly host: string;
  /** Falls back to `EHR_TOKEN` (through the config), so the sandbox and the forwarder agree by default. */
  readonly token?: string | undefined;
}

/** Commander parser for `--port`: a whole number from 0 (any free port) to 65535. */
export function portArg(value: string): number {
  if (!/^\d{1,5}$/.test(value) || Number(value) > 65_535) {
    throw new InvalidArgumentError('expected a port number from 0 to 65535');
  }
  return Number(value);
}

/** Commander parser for `--token`: printable ASCII without spaces, as a bearer token must be. */
export function tokenArg(value: string): string {
  if (!/^[\x21-\x7e]{1,512}$/.test(value)) {
    throw new InvalidArgumentError('expected 1 to 512 printable characters without spaces');
  }
  return value;
}

export async function serveSandboxEhr(config: Config, options: SandboxEhrCommandOptions): Promise<void> {
  if (config.env === 'production') {
    throw new InvalidArgumentError('the sandbox EHR does not run with NODE_ENV=production');
  }
  const logger = createLogger(config, process.stderr).child({ component: 'sandbox-ehr' });
  const token = options.token ?? config.ehrToken;
  const sandbox = createSandboxEhr({ token, logger });
  const running = await sandbox.listen({ port: options.port, host: options.host }).catch((error: unknown) => {
    const code = (error as { code?: unknown }).code;
    if (typeof code === 'string' && LISTEN_FAILURES.has(code)) {
      throw new InvalidArgumentError(`cannot listen on ${options.host}:${options.port} (${code})`);
    }
    throw error;
  });
  let stopping = false;
  const stop = (reason: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ cause: reason }, 'sandbox EHR stopping');
    void running
      .close()
      .catch((error: unknown) => {
        logger.error({ err: error }, 'sandbox EHR did not close cleanly');
      })
      .finally(() => {
        process.exit(0);
      });
  };
  // A second signal during the close gets Node's default: an immediate stop.
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
  if (process.connected) {
    process.once('disconnect', () => {
      stop('parent process went away');
    });
  }
  logger.info({ url: running.url, bearerToken: token !== undefined }, 'sandbox EHR started');
  process.stdout.write(`sandbox EHR listening on ${running.url}\n`);
}
