// `refhub sandbox-ehr`: the sandbox EHR as a process of its own. It prints exactly one line to
// stdout, `sandbox EHR listening on <EHR URL>`, once it accepts connections (scripts and tests wait
// for it and read the port from it); its logs go to stderr so that the line stays alone. It stops
// cleanly on SIGTERM or SIGINT, and also when the program that spawned it with an IPC channel goes
// away, so a sandbox started by a test run or a dev script cannot outlive it.
import { readFileSync } from 'node:fs';
import { InvalidArgumentError } from 'commander';
import type { Config } from '../config.ts';
import type { Logger } from '../logger.ts';
import type { SandboxEhr, SandboxTls } from '../sandbox-ehr/sandbox-ehr.ts';

export const SANDBOX_DEFAULT_PORT = 4010;

/** Listen errors that are the operator's to fix, reported as a bad argument rather than a stack trace. */
const LISTEN_FAILURES = new Set(['EADDRINUSE', 'EADDRNOTAVAIL', 'EACCES', 'ENOTFOUND', 'EAI_AGAIN']);

export interface SandboxEhrCommandOptions {
  readonly port: number;
  readonly host: string;
  /** Falls back to `EHR_TOKEN` (through the config), so the sandbox and the forwarder agree by default. */
  readonly token?: string | undefined;
  /** A PEM certificate (chain) and its key: the sandbox then serves https, as the EHR does in production. */
  readonly tlsCert?: string | undefined;
  readonly tlsKey?: string | undefined;
}

function readPem(option: string, file: string): Buffer {
  try {
    return readFileSync(file);
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    throw new InvalidArgumentError(
      `cannot read ${option} ${file} (${typeof code === 'string' ? code : 'unreadable'})`,
    );
  }
}

/** The certificate to serve https with, or undefined for plain http; both files or neither. */
export function sandboxTlsOf(
  options: Pick<SandboxEhrCommandOptions, 'tlsCert' | 'tlsKey'>,
): SandboxTls | undefined {
  if (options.tlsCert === undefined && options.tlsKey === undefined) return undefined;
  if (options.tlsCert === undefined || options.tlsKey === undefined) {
    throw new InvalidArgumentError(
      '--tls-cert and --tls-key go together: give both, or neither for plain http',
    );
  }
  return { cert: readPem('--tls-cert', options.tlsCert), key: readPem('--tls-key', options.tlsKey) };
}

/** Refuses before anything is built or listens: the sandbox is never an EHR in production. */
export function refuseSandboxInProduction(config: Pick<Config, 'env'>): void {
  if (config.env === 'production') {
    throw new InvalidArgumentError('the sandbox EHR does not run with NODE_ENV=production');
  }
}

export interface SandboxEhrCommandDeps {
  readonly sandbox: SandboxEhr;
  /** Writes to stderr. */
  readonly logger: Logger;
  /** Whether the sandbox requires a bearer token. */
  readonly bearerToken: boolean;
}

export async function runSandboxEhr(
  deps: SandboxEhrCommandDeps,
  options: Pick<SandboxEhrCommandOptions, 'port' | 'host' | 'tlsCert' | 'tlsKey'>,
): Promise<void> {
  const { sandbox, logger } = deps;
  const tls = sandboxTlsOf(options);
  const running = await sandbox
    .listen({ port: options.port, host: options.host, tls })
    .catch((error: unknown) => {
      const code = (error as { code?: unknown }).code;
      if (typeof code === 'string' && LISTEN_FAILURES.has(code)) {
        throw new InvalidArgumentError(`cannot listen on ${options.host}:${options.port} (${code})`);
      }
      // A certificate or key that is not PEM, or a key that does not match the certificate.
      if (tls !== undefined && typeof code === 'string' && code.startsWith('ERR_OSSL')) {
        throw new InvalidArgumentError(`cannot serve https with --tls-cert and --tls-key (${code})`);
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
  logger.info({ url: running.url, bearerToken: deps.bearerToken }, 'sandbox EHR started');
  process.stdout.write(`sandbox EHR listening on ${running.url}\n`);
}
