// Audit signing keys for tests: a key pair made with jose for the run (never one written out by hand),
// given to refhub as AUDIT_SIGNING_KEY, which production requires.
import { exportJWK, generateKeyPair } from 'jose';
import type { AuditSigningKey } from '../../src/config.ts';

/** A private Ed25519 JWK with `kid`, made for one test run. */
export async function testAuditSigningKey(kid = 'audit-test'): Promise<AuditSigningKey> {
  const { privateKey } = await generateKeyPair('EdDSA', { crv: 'Ed25519', extractable: true });
  const { x, d } = await exportJWK(privateKey);
  if (x === undefined || d === undefined) throw new Error('jose exported an Ed25519 key without x or d');
  return { kty: 'OKP', crv: 'Ed25519', x, d, kid };
}

/** AUDIT_SIGNING_KEY for `key`, as a process started by a test is given it: one line of JSON. */
export function auditSigningKeySetting(key: AuditSigningKey): string {
  return JSON.stringify(key);
}
