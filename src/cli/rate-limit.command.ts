// `refhub keys limit` and `refhub clients limit`: a client's own rate limit, raised or lowered from
// the installation's default (RATE_LIMIT_PER_SECOND, RATE_LIMIT_BURST), or given the default again
// with `--default`. The change is stored on the credential and audited; an API process applies it
// the next time it looks the credential up (services/rate-limits.service.ts).
import { InvalidArgumentError } from 'commander';
import type { Config } from '../config.ts';
import type { ApiKeyRecord } from '../db/api-key.repository.ts';
import type { RateLimitPolicy } from '../domain/rate-limits.ts';
import type { LimitChange, RateLimitSettings } from '../services/rate-limits.service.ts';
import { toStdout, type Output } from './output.ts';

export interface LimitOptions {
  readonly perSecond?: number;
  readonly burst?: number;
  /** Back to the installation's default. */
  readonly default?: boolean;
}

export interface LimitCommandDeps {
  readonly config: Pick<Config, 'rateLimitPerSecond' | 'rateLimitBurst'>;
  readonly rateLimitSettings: Pick<RateLimitSettings, 'setForKey' | 'setForClient'>;
  /** Where it prints: the terminal unless given. */
  readonly out?: Output;
}

/** The change the options ask for: `--per-second` with `--burst`, or `--default` alone. */
export function limitChangeOf(options: LimitOptions): LimitChange {
  const { perSecond, burst } = options;
  if (options.default === true) {
    if (perSecond !== undefined || burst !== undefined)
      throw new InvalidArgumentError(
        '--default gives the installation default: no --per-second or --burst with it',
      );
    return 'default';
  }
  if (perSecond === undefined || burst === undefined)
    throw new InvalidArgumentError(
      'give the limit as --per-second N --burst N (both), or --default for the installation default',
    );
  return { perSecond, burst };
}

/** A limit as the operator reads it. */
export function limitWords(limit: RateLimitPolicy): string {
  return `${limit.perSecond} requests a second, with up to ${limit.burst} at once`;
}

function said(
  deps: LimitCommandDeps,
  what: string,
  record: Pick<ApiKeyRecord, 'rateLimit'>,
  when: string,
): string {
  const limit = record.rateLimit;
  const defaults = { perSecond: deps.config.rateLimitPerSecond, burst: deps.config.rateLimitBurst };
  return limit === null
    ? `${what} has the installation's default limit again: ${limitWords(defaults)}. ${when}\n`
    : `${what} is limited to ${limitWords(limit)}. ${when}\n`;
}

export async function limitKey(
  deps: LimitCommandDeps,
  idOrPrefix: string,
  options: LimitOptions,
): Promise<void> {
  const out = deps.out ?? toStdout;
  const key = await deps.rateLimitSettings.setForKey(idOrPrefix, limitChangeOf(options));
  // An API process reuses a key lookup for 2 seconds (KEY_LOOKUP_REUSE_MS, api-key.service.ts).
  out(said(deps, `Key ${key.id} (${key.prefix}…)`, key, 'Every API process applies it within 2 seconds.'));
}

export async function limitClient(deps: LimitCommandDeps, id: string, options: LimitOptions): Promise<void> {
  const out = deps.out ?? toStdout;
  const client = await deps.rateLimitSettings.setForClient(id, limitChangeOf(options));
  out(said(deps, `Client ${client.id} (${client.system})`, client, 'It applies from its next request.'));
}
