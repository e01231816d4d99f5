// Standard Webhooks signatures (https://www.standardwebhooks.com): a secret is `whsec_` and the
// base64 of 32 random bytes; a delivery carries `webhook-id`, `webhook-timestamp` (Unix seconds) and
// `webhook-signature`, a space-separated list of `v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>">`,
// one per secret in use. During a rotation the new and the previous secret both sign, so a receiver
// that still holds the previous one keeps verifying until it has switched.
import { createHmac, randomBytes } from 'node:crypto';

export const SECRET_PREFIX = 'whsec_';

export function newSigningSecret(): string {
  return `${SECRET_PREFIX}${randomBytes(32).toString('base64')}`;
}

function keyOf(secret: string): Buffer {
  return Buffer.from(
    secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret,
    'base64',
  );
}

/** One `v1,<signature>` of the message under `secret`. */
export function signMessage(secret: string, id: string, timestampSeconds: number, body: string): string {
  const mac = createHmac('sha256', keyOf(secret)).update(`${id}.${timestampSeconds}.${body}`, 'utf8');
  return `v1,${mac.digest('base64')}`;
}

/** The three headers of a delivery, signed with every secret in `secrets` (newest first). */
export function signedHeaders(
  secrets: readonly string[],
  id: string,
  timestampSeconds: number,
  body: string,
): Record<'webhook-id' | 'webhook-timestamp' | 'webhook-signature', string> {
  return {
    'webhook-id': id,
    'webhook-timestamp': String(timestampSeconds),
    'webhook-signature': secrets.map((s) => signMessage(s, id, timestampSeconds, body)).join(' '),
  };
}
