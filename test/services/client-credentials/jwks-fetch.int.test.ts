// Fetching a client's JWKS from its URL, with the outbound rules of webhooks: loopback only outside
// production, private addresses never unless allowed, http only outside production, a 200 answer of
// JSON no larger than the cap.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createJwksFetcher } from '../../../src/services/client-credentials/jwks-fetch.ts';

describe('the JWKS fetcher', () => {
  let server: Server;
  let base: string;
  const JWKS = { keys: [{ kty: 'EC', crv: 'P-384', x: 'x', y: 'y', kid: 'k1' }] };
  beforeAll(async () => {
    server = createServer((request, response) => {
      if (request.url === '/jwks.json') response.writeHead(200).end(JSON.stringify(JWKS));
      else if (request.url === '/big') response.writeHead(200).end('x'.repeat(2048));
      else if (request.url === '/html') response.writeHead(200).end('<html></html>');
      else if (request.url === '/moved') response.writeHead(302, { location: '/jwks.json' }).end();
      else response.writeHead(404).end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await new Promise<void>((resolve) => {
      server.close(() => {
        resolve();
      });
    });
  });

  it('fetches a JWKS from a loopback address outside production', async () => {
    const fetchJwks = createJwksFetcher({ production: false, allowed: new Set() });
    try {
      expect(await fetchJwks(`${base}/jwks.json`)).toEqual(JWKS);
    } finally {
      await fetchJwks.close();
    }
  });

  it('refuses what a webhook may not reach: loopback and http in production, private addresses', async () => {
    const production = createJwksFetcher({ production: true, allowed: new Set() });
    const development = createJwksFetcher({ production: false, allowed: new Set() });
    try {
      await expect(production(`${base}/jwks.json`)).rejects.toThrow(/https/);
      await expect(production(`https://127.0.0.1:${new URL(base).port}/jwks.json`)).rejects.toThrow(
        /not public/,
      );
      await expect(development('http://10.0.0.1/jwks.json')).rejects.toThrow(/not public/);
      await expect(development('http://169.254.169.254/latest/meta-data')).rejects.toThrow(/not public/);
    } finally {
      await production.close();
      await development.close();
    }
  });

  it('takes only a 200 answer of JSON within the size cap, and follows no redirect', async () => {
    const fetchJwks = createJwksFetcher({ production: false, allowed: new Set(), maxBytes: 1024 });
    try {
      await expect(fetchJwks(`${base}/big`)).rejects.toThrow(/larger than 1024 bytes/);
      await expect(fetchJwks(`${base}/html`)).rejects.toThrow(/did not answer JSON/);
      await expect(fetchJwks(`${base}/missing`)).rejects.toThrow(/answered 404/);
      await expect(fetchJwks(`${base}/moved`)).rejects.toThrow(/answered 302/);
    } finally {
      await fetchJwks.close();
    }
  });
});
