// The sandbox EHR as a separate process, as tests of the forwarder use it: `refhub sandbox-ehr
// --port 0` is spawned, its one stdout line gives the URL, and a small `fetch` client drives the
// control API. The child can never outlive the test process: it is killed when the test process
// exits, and it stops by itself when the IPC channel to its parent closes (even on a SIGKILL).
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { Agent, fetch as undiciFetch } from 'undici';
import { contentDigest } from '../../src/domain/forwarding/content-digest.ts';
import type { EhrAttachmentRequest, EhrForwardRequest } from '../../src/domain/forwarding/forward-request.ts';
import { attachmentMessageIdOf, messageIdOf } from '../../src/domain/ids.ts';
import { childEnv } from './child-env.ts';
import type {
  DeliveryFilter,
  SandboxBehaviour,
  SandboxBehaviourInput,
  SandboxDelivery,
  SandboxRequestCounts,
} from '../../src/sandbox-ehr/sandbox-ehr.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');
const BIN = path.join(ROOT, 'bin', 'refhub.js');
const LISTENING = /^sandbox EHR listening on (https?:\/\/\S+\/ehr\/referrals)$/m;
const CONTROL_TIMEOUT_MS = 10_000;
const STOP_GRACE_MS = 5_000;

/** Settings that would leak from the developer's shell into the sandbox. */
export interface SandboxEhrProcessOptions {
  /** Passed as `--token`; the control client then sends it too. */
  readonly token?: string;
  readonly logLevel?: 'trace' | 'debug' | 'info' | 'warn' | 'error' | 'silent';
  /** How long to wait for the listening line (default 20 s). */
  readonly startTimeoutMs?: number;
  /** Serve https: `--tls-cert` and `--tls-key`; the control client trusts `ca`. */
  readonly tls?: { readonly cert: string; readonly key: string; readonly ca: string };
}

export interface ProcessExit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

export interface SandboxEhrProcess {
  /** The EHR endpoint: what `EHR_URL` should be. */
  readonly url: string;
  /** The origin of the control API. */
  readonly baseUrl: string;
  readonly token: string | undefined;
  readonly pid: number;
  setBehaviour(behaviour: SandboxBehaviourInput): Promise<SandboxBehaviour>;
  behaviour(): Promise<SandboxBehaviour>;
  deliveries(filter?: DeliveryFilter): Promise<SandboxDelivery[]>;
  requests(): Promise<SandboxRequestCounts>;
  /** Clears deliveries, counts and staged behaviour. */
  reset(): Promise<void>;
  /** Everything the process has written so far. */
  output(): { readonly stdout: string; readonly stderr: string };
  /** Sends `signal` (SIGTERM by default), SIGKILLs after a grace period, and resolves with the exit. */
  stop(signal?: 'SIGTERM' | 'SIGINT'): Promise<ProcessExit>;
}

function environment(logLevel: string): NodeJS.ProcessEnv {
  return childEnv({ NODE_ENV: 'test', LOG_LEVEL: logLevel });
}

/** Spawns `refhub <args>` on this Node (vitest runs on the project's Node 24) with a parent-death link. */
function spawnRefhub(args: readonly string[], env: NodeJS.ProcessEnv): ChildProcess {
  const child = spawn(process.execPath, [BIN, ...args], {
    cwd: ROOT,
    env,
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
  });
  const kill = () => child.kill('SIGKILL');
  process.once('exit', kill);
  child.once('exit', () => process.off('exit', kill));
  // The channel is only a lifeline for the child; it must not keep this process alive.
  child.channel?.unref();
  return child;
}

/** Runs `refhub sandbox-ehr <args>` to its exit (for argument errors); kills it after `timeoutMs`. */
export function runSandboxEhrCommand(
  args: readonly string[],
  env: Record<string, string> = {},
  timeoutMs = 20_000,
): Promise<ProcessExit & { readonly stdout: string; readonly stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawnRefhub(['sandbox-ehr', ...args], { ...environment('info'), ...env });
    let stdout = '';
    let stderr = '';
    child.stdout?.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`refhub sandbox-ehr ${args.join(' ')} did not exit in ${timeoutMs} ms:\n${stderr}`));
    }, timeoutMs);
    child.once('error', reject);
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
}

export async function startSandboxEhrProcess(
  options: SandboxEhrProcessOptions = {},
): Promise<SandboxEhrProcess> {
  const args = [
    'sandbox-ehr',
    '--port',
    '0',
    ...(options.token === undefined ? [] : ['--token', options.token]),
    ...(options.tls === undefined ? [] : ['--tls-cert', options.tls.cert, '--tls-key', options.tls.key]),
  ];
  const child = spawnRefhub(args, environment(options.logLevel ?? 'info'));
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<ProcessExit>((resolve) => {
    child.once('exit', (code, signal) => {
      resolve({ code, signal });
    });
  });
  const timeoutMs = options.startTimeoutMs ?? 20_000;
  const url = await new Promise<string>((resolve, reject) => {
    const described = () => `\nstdout: ${stdout || '(nothing)'}\nstderr: ${stderr || '(nothing)'}`;
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`refhub sandbox-ehr printed no listening line within ${timeoutMs} ms${described()}`));
    }, timeoutMs);
    const onData = () => {
      const match = LISTENING.exec(stdout);
      if (match?.[1] === undefined) return;
      clearTimeout(timer);
      child.stdout?.off('data', onData);
      resolve(match[1]);
    };
    child.stdout?.on('data', onData);
    child.once('error', (error) => {
      clearTimeout(timer);
      reject(new Error(`refhub sandbox-ehr could not be spawned: ${error.message}`));
    });
    void exited.then(({ code, signal }) => {
      clearTimeout(timer);
      reject(new Error(`refhub sandbox-ehr exited (${code ?? signal}) before listening${described()}`));
    });
  });
  const baseUrl = new URL(url).origin;
  const authorization: Record<string, string> =
    options.token === undefined ? {} : { authorization: `Bearer ${options.token}` };

  // A connection per control call: a kept-alive one that the sandbox closes for being idle just as a
  // call goes out on it fails the call ("other side closed"), which a busy machine makes likely.
  const dispatcher = new Agent({
    pipelining: 0,
    ...(options.tls === undefined ? {} : { connect: { ca: fs.readFileSync(options.tls.ca) } }),
  });

  async function control<T>(method: string, pathAndQuery: string, body?: unknown): Promise<T> {
    const response = await undiciFetch(`${baseUrl}/_sandbox${pathAndQuery}`, {
      method,
      dispatcher,
      headers: { ...authorization, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? null : JSON.stringify(body),
      signal: AbortSignal.timeout(CONTROL_TIMEOUT_MS),
    });
    const text = await response.text();
    if (!response.ok) throw new Error(`${method} /_sandbox${pathAndQuery} → ${response.status}: ${text}`);
    return (text === '' ? undefined : JSON.parse(text)) as T;
  }

  let stopping: Promise<ProcessExit> | undefined;
  return {
    url,
    baseUrl,
    token: options.token,
    pid: child.pid ?? -1,
    setBehaviour: (behaviour) => control('PUT', '/behaviour', behaviour),
    behaviour: () => control('GET', '/behaviour'),
    deliveries: async (filter = {}) => {
      const query = new URLSearchParams(
        Object.entries(filter).filter((entry): entry is [string, string] => typeof entry[1] === 'string'),
      ).toString();
      const page = await control<{ deliveries: SandboxDelivery[] }>(
        'GET',
        `/deliveries${query ? `?${query}` : ''}`,
      );
      return page.deliveries;
    },
    requests: () => control('GET', '/requests'),
    reset: () => control('DELETE', ''),
    output: () => ({ stdout, stderr }),
    stop: (signal = 'SIGTERM') => {
      stopping ??= (async () => {
        if (child.exitCode !== null || child.signalCode !== null) return exited;
        child.kill(signal);
        const grace = setTimeout(() => child.kill('SIGKILL'), STOP_GRACE_MS);
        const exit = await exited;
        clearTimeout(grace);
        await dispatcher.close();
        return exit;
      })();
      return stopping;
    },
  };
}

/** A valid forward request for `referralId` at `version`, with a form holding `text`. */
export function forwardRequestFor(
  referralId: string,
  version = 1,
  overrides: { readonly patientName?: string; readonly uin?: string; readonly text?: string } = {},
): EhrForwardRequest {
  return {
    messageId: messageIdOf(referralId, version),
    referralId,
    version,
    patient: {
      uin: overrides.uin ?? 'S1234567D',
      name: overrides.patientName ?? 'Tan Ah Kow',
      dob: '1960-01-31',
    },
    referralRequest: {
      specialty: { code: 'GASTRO-SOC', textDescription: 'Gastroenterology' },
      type: { textDescription: 'Specialist Referral|Patient Summary' },
    },
    notesItem: {
      text:
        overrides.text ??
        `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Specialist Referral – ${referralId}</title></head>` +
          '<body><p data-field="patient.name">Tan Ah Kow 陈亚九 🩺</p></body></html>',
    },
  };
}

export interface PostOptions {
  /** Replaces the JSON of the request (bytes or text are sent as they are). */
  readonly body?: Uint8Array | string;
  /** Header overrides; `null` removes a header the helper would send. */
  readonly headers?: Readonly<Record<string, string | null>>;
  readonly token?: string;
  readonly signal?: AbortSignal;
}

/** POSTs a forward request the way the forwarder does: Content-Digest, Idempotency-Key, bearer token. */
/** A file sent with the form of `referralId`'s `version`, as the forwarder builds it. */
export function attachmentRequestFor(
  referralId: string,
  version: number,
  number: number,
  content: Buffer,
  mediaType = 'application/pdf',
): EhrAttachmentRequest {
  return {
    messageId: attachmentMessageIdOf(referralId, version, number),
    formMessageId: messageIdOf(referralId, version),
    referralId,
    version,
    document: {
      number,
      fileName: `letter-${number}.pdf`,
      mediaType,
      sizeBytes: content.length,
      sha256: createHash('sha256').update(content).digest('hex'),
      contentBase64: content.toString('base64'),
    },
  };
}

export async function postForward(
  url: string,
  request: EhrForwardRequest | EhrAttachmentRequest,
  options: PostOptions = {},
): Promise<{ readonly status: number; readonly headers: Headers; readonly json: Record<string, unknown> }> {
  const body = options.body ?? JSON.stringify(request);
  const headers: Record<string, string | null> = {
    'content-type': 'application/json',
    'content-digest': contentDigest(body),
    'idempotency-key': request.messageId,
    ...(options.token === undefined ? {} : { authorization: `Bearer ${options.token}` }),
    ...options.headers,
  };
  const response = await fetch(url, {
    method: 'POST',
    headers: Object.fromEntries(
      Object.entries(headers).filter((entry): entry is [string, string] => entry[1] !== null),
    ),
    body,
    redirect: 'manual',
    signal: options.signal ?? AbortSignal.timeout(CONTROL_TIMEOUT_MS),
  });
  const text = await response.text();
  return {
    status: response.status,
    headers: response.headers,
    json: (text === '' ? {} : JSON.parse(text)) as Record<string, unknown>,
  };
}
