// The secret that signs web sessions. In production it is SESSION_SECRET (config refuses to start
// without it). Elsewhere, when it is unset, the installation generates one on first start and keeps it
// in its database, so `npm start` needs no setup and every process on that database agrees.
import { randomBytes } from 'node:crypto';
import type { Config } from '../../config.ts';
import type { Stores } from '../../db/stores.ts';

export async function resolveSessionSecret(
  config: Pick<Config, 'env' | 'sessionSecret'>,
  installation: Pick<Stores['installation'], 'getOrCreate'>,
): Promise<string> {
  if (config.sessionSecret !== undefined) return config.sessionSecret;
  if (config.env === 'production') throw new Error('SESSION_SECRET is required when NODE_ENV=production');
  return installation.getOrCreate('web-session', randomBytes(32).toString('base64url'));
}
