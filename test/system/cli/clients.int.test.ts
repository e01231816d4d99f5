// `refhub clients …`, spawned as operators run it against a PostgreSQL database: a client registered
// with a public JWK from a file or a JWKS URL, listed apart from API keys, its keys rotated and the
// client revoked, with what the client needs printed at creation (its ID alone on the last line).
// What the commands refuse ends with one line on stderr and exit 1. Tokens are asked for in-process
// here, with the service the commands changed the rows of: the rotated keys sign, the old ones no
// longer do, and a revoked client's token stops working.
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK } from 'jose';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { CLIENTS_HEADER } from '../../../src/cli/client-credentials.command.ts';
import { DEMO_CATALOG_FILE } from '../../../src/composition/demo-setup.ts';
import { systemClock } from '../../../src/domain/clock.ts';
import { createCatalogService } from '../../../src/services/catalog/catalog.service.ts';
import { createStores } from '../../../src/db/stores.ts';
import { testDataKeys } from '../../support/data-keys.ts';
import { OAuthError } from '../../../src/errors.ts';
import { createClientCredentials } from '../../../src/services/client-credentials/client-credentials.service.ts';
import { testRedisUrl } from '../../support/bridge.ts';
import { openPostgresStoreWithUrl } from '../../support/engines.ts';
import { describeRun, runRefhub, type CliResult } from '../../support/refhub-cli.ts';
import { storesOf } from '../../support/stores.ts';

const QUEUE_PREFIX = `cli-clients-${randomUUID()}`;
const PUBLIC_URL = 'https://refhub.example.org';
const TOKEN_URL = `${PUBLIC_URL}/oauth2/token`;
const UUID_LINE = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const STACK = /\n\s+at /;
const ASSERTION_TYPE = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';

const tempDirs: string[] = [];

afterAll(async () => {
  const redis = new Redis(testRedisUrl());
  const keys = await redis.keys(`{${QUEUE_PREFIX}[}:]*`);
  if (keys.length > 0) await redis.del(...keys);
  redis.disconnect();
  for (const dir of tempDirs) fs.rmSync(dir, { recursive: true, force: true });
});

interface KeyPair {
  readonly privateKey: CryptoKey;
  readonly publicJwk: JWK;
  readonly privateJwk: JWK;
}

async function keyPair(kid: string): Promise<KeyPair> {
  const { privateKey, publicKey } = await generateKeyPair('ES384', { extractable: true });
  return {
    privateKey,
    publicJwk: { ...(await exportJWK(publicKey)), kid, alg: 'ES384', use: 'sig' },
    privateJwk: { ...(await exportJWK(privateKey)), kid, alg: 'ES384', use: 'sig' },
  };
}

function assertion(clientId: string, key: KeyPair): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({ jti: randomUUID() })
    .setProtectedHeader({ alg: 'ES384', kid: key.publicJwk.kid ?? '' })
    .setIssuer(clientId)
    .setSubject(clientId)
    .setAudience(TOKEN_URL)
    .setIssuedAt(now)
    .setExpirationTime(now + 60)
    .sign(key.privateKey);
}

// Each spawn of refhub costs seconds, and more on a busy machine.
describe('refhub clients', { timeout: 600_000 }, () => {
  it('creates, lists, rotates the keys of and revokes clients, and refuses what it cannot register', async () => {
    const { store, url: databaseUrl } = await openPostgresStoreWithUrl();
    try {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'refhub-clients-'));
      tempDirs.push(dir);
      const env = {
        DATABASE_URL: databaseUrl,
        DATA_DIR: dir,
        REDIS_URL: testRedisUrl(),
        QUEUE_PREFIX,
        PUBLIC_URL,
      };
      const cli = async (args: string[], outcome: 'ok' | 'fail' = 'ok'): Promise<CliResult> => {
        const r = await runRefhub(args, env);
        if (outcome === 'ok') {
          expect(r.code, describeRun(args, r)).toBe(0);
        } else {
          expect(r.code, describeRun(args, r)).toBe(1);
          expect(r.stderr, 'a message, not a stack trace').not.toMatch(STACK);
          expect(r.stdout, describeRun(args, r)).toBe('');
        }
        return r;
      };
      const file = (name: string, value: unknown) => {
        const at = path.join(dir, name);
        fs.writeFileSync(at, typeof value === 'string' ? value : JSON.stringify(value));
        return at;
      };

      expect((await cli(['clients', 'list'])).stdout).toBe('No clients.\n');
      await createCatalogService({ stores: createStores(store.db, testDataKeys()) }).loadFile(
        DEMO_CATALOG_FILE,
      );

      const [k1, k2, k3] = await Promise.all([keyPair('clinic-1'), keyPair('clinic-2'), keyPair('clinic-3')]);
      const oneJwk = file('clinic-1.jwk.json', k1.publicJwk);
      const privateJwks = file('private.jwks.json', { keys: [k2.publicJwk, k3.privateJwk] });
      const privateJwk = file('private.jwk.json', k3.privateJwk);
      const sender = ['clients', 'create', '--system', 'HAS', '--role', 'sender'];

      const [neither, both, privateKey, unknownInstitution, twoInstitutions, opsRole, notJson, notAKey] =
        await Promise.all([
          cli([...sender, '--institution', 'hci:S1234A'], 'fail'),
          cli(
            [
              ...sender,
              '--institution',
              'hci:S1234A',
              '--jwks-url',
              'https://keys.example.org/jwks.json',
              '--jwk-file',
              oneJwk,
            ],
            'fail',
          ),
          cli([...sender, '--institution', 'hci:S1234A', '--jwk-file', privateJwks], 'fail'),
          cli([...sender, '--institution', 'hci:S0000X', '--jwk-file', oneJwk], 'fail'),
          cli(
            [...sender, '--institution', 'hci:S1234A', '--institution', 'hci:S2345B', '--jwk-file', oneJwk],
            'fail',
          ),
          cli(
            ['clients', 'create', '--system', 'HAS', '--role', 'ops', '--institution', 'hci:S1234A'],
            'fail',
          ),
          cli(
            [...sender, '--institution', 'hci:S1234A', '--jwk-file', file('broken.json', '{ "kty": ')],
            'fail',
          ),
          cli(
            [...sender, '--institution', 'hci:S1234A', '--jwk-file', file('list.json', [k1.publicJwk])],
            'fail',
          ),
        ]);
      expect(neither.stderr).toMatch(
        /^refhub: the client's public keys are required: --jwks-url .* --jwk-file/,
      );
      expect(both.stderr).toMatch(/--jwks-url or --jwk-file, not both/);
      expect(privateKey.stderr).toContain(
        `${privateJwks}/keys/1: holds a private key: register the public key only`,
      );
      expect(unknownInstitution.stderr).toMatch(/hci:S0000X is not an institution in the catalog/);
      expect(twoInstitutions.stderr).toMatch(/a client acts for exactly one institution/);
      expect(opsRole.stderr).toMatch(/--role/);
      expect(opsRole.stderr).toMatch(/expected sender or provider/);
      expect(notJson.stderr).toMatch(/broken\.json: cannot be read/);
      expect(notAKey.stderr).toMatch(/list\.json: must hold a JWK .* or a JWKS/);
      // Nothing refused was registered.
      expect((await cli(['clients', 'list'])).stdout).toBe('No clients.\n');

      // create prints what the client needs, its ID alone on the last line.
      const [created, byUrl] = await Promise.all([
        cli([...sender, '--institution', 'hci:S1234A', '--jwk-file', oneJwk]),
        cli([
          'clients',
          'create',
          '--system',
          'Epic',
          '--role',
          'provider',
          '--institution',
          'hci:S9001Z',
          '--jwks-url',
          'https://keys.example.org/jwks.json',
          '--label',
          'Central General',
        ]),
      ]);
      const clientId = created.stdout.trimEnd().split('\n').at(-1)!;
      expect(clientId).toMatch(UUID_LINE);
      expect(created.stdout).toContain(
        `Registered sender client ${clientId} for HAS, acting for hci:S1234A, with keys: inline 1 key (clinic-1).\n`,
      );
      expect(created.stdout).toContain(`Token URL (the aud of its assertions): ${TOKEN_URL}\n`);
      expect(created.stdout).toContain('Scopes: system/Referral.read system/Referral.write\n');
      const providerId = byUrl.stdout.trimEnd().split('\n').at(-1)!;
      expect(providerId).toMatch(UUID_LINE);
      expect(byUrl.stdout).toContain('with keys: url https://keys.example.org/jwks.json.');

      // Clients are listed apart from API keys.
      const [listed, keys] = await Promise.all([cli(['clients', 'list']), cli(['keys', 'list'])]);
      expect(keys.stdout).toBe('No API keys.\n');
      const rows = listed.stdout.split('\n').filter((line) => line !== '');
      expect(rows[0]).toBe(CLIENTS_HEADER);
      expect(rows[0]).toBe('ID\tROLE\tSYSTEM\tINSTITUTION\tKEYS\tSTATE\tLABEL');
      expect(rows).toHaveLength(3);
      expect(rows.find((l) => l.startsWith(clientId))).toBe(
        `${clientId}\tsender\tHAS\thci:S1234A\tinline 1 key (clinic-1)\tactive\t`,
      );
      expect(rows.find((l) => l.startsWith(providerId))).toBe(
        `${providerId}\tprovider\tEpic\thci:S9001Z\turl https://keys.example.org/jwks.json\tactive\tCentral General`,
      );

      // The service the API runs, over the same database.
      const service = createClientCredentials({
        stores: storesOf(store.db),
        clock: systemClock,
        tokenUrl: TOKEN_URL,
        fetchJwks: () => Promise.reject(new Error('no JWKS URL is fetched here')),
        endpoints: { production: false, allowed: new Set() },
      });
      const tokenWith = async (key: KeyPair) =>
        service.issueToken({
          grant_type: 'client_credentials',
          client_assertion_type: ASSERTION_TYPE,
          client_assertion: await assertion(clientId, key),
        });
      expect((await tokenWith(k1)).token.token_type).toBe('Bearer');

      // Rotation: the client's keys are replaced, and the old key no longer signs.
      const rotated = await cli([
        'clients',
        'keys',
        clientId,
        '--jwk-file',
        file('clinic-2-3.jwks.json', { keys: [k2.publicJwk, k3.publicJwk] }),
      ]);
      expect(rotated.stdout).toBe(
        `Replaced the keys of client ${clientId}: inline 2 keys (clinic-2, clinic-3).\n`,
      );
      const [afterRotation, rotatePrivate, rotateNeither] = await Promise.all([
        cli(['clients', 'list']),
        cli(['clients', 'keys', clientId, '--jwk-file', privateJwk], 'fail'),
        cli(['clients', 'keys', clientId], 'fail'),
      ]);
      expect(afterRotation.stdout).toContain(
        `${clientId}\tsender\tHAS\thci:S1234A\tinline 2 keys (clinic-2, clinic-3)\tactive\t`,
      );
      expect(rotatePrivate.stderr).toContain(`${privateJwk}: holds a private key`);
      expect(rotateNeither.stderr).toMatch(/public keys are required/);
      await expect(tokenWith(k1)).rejects.toBeInstanceOf(OAuthError);
      const { token } = await tokenWith(k3);
      expect(await service.authenticate(token.access_token)).toMatchObject({ id: clientId });

      // Revocation: at once, for the client's tokens already issued too; an API key's command does not
      // revoke a client.
      const notAKeyRevoke = await cli(['keys', 'revoke', clientId], 'fail');
      expect(notAKeyRevoke.stderr).toContain(`No active API key has the ID or prefix ${clientId}`);
      expect((await cli(['clients', 'revoke', clientId])).stdout).toBe(
        `Revoked client ${clientId} (HAS, hci:S1234A): its access tokens stop working at once.\n`,
      );
      expect(await service.authenticate(token.access_token)).toBeUndefined();
      await expect(tokenWith(k3)).rejects.toThrow(/unknown or has been revoked/);

      const [afterRevoke, again, rotateRevoked, notAnId] = await Promise.all([
        cli(['clients', 'list']),
        cli(['clients', 'revoke', clientId], 'fail'),
        cli(['clients', 'keys', clientId, '--jwk-file', oneJwk], 'fail'),
        cli(['clients', 'revoke', 'client_0190'], 'fail'),
      ]);
      expect(afterRevoke.stdout.split('\n').find((l) => l.startsWith(clientId))).toMatch(
        // As every page writes times: in the display zone, with the zone named.
        /\trevoked (Mon|Tue|Wed|Thu|Fri|Sat|Sun) \d{1,2} [A-Z][a-z]{2} \d{4}, \d{2}:\d{2} SGT\t$/,
      );
      expect(afterRevoke.stdout.split('\n').find((l) => l.startsWith(providerId))).toMatch(/\tactive\t/);
      expect(again.stderr).toContain(`No active client has the ID or prefix ${clientId}`);
      expect(rotateRevoked.stderr).toContain(`No active client has the ID ${clientId}`);
      expect(notAnId.stderr).toMatch(/expected a client ID \(a UUID\)/);
    } finally {
      await store.close();
    }
  });
});
