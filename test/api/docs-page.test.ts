// The docs page, `/docs`, is refhub's: its title and mark, no other product's logo, and it reads the
// one document refhub publishes, `/openapi.json`; the plugin's own copies of it redirect there.
import fs from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DOCS_ICON_SVG, DOCS_LOGO_SVG } from '../../src/api/docs-page.ts';
import { createTestApp, type TestApp } from '../support/test-app.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');

describe('the docs page', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp('pglite');
  });
  afterAll(async () => {
    await t.close();
  });

  const get = (url: string) => t.app.inject({ method: 'GET', url });

  it('is titled refhub API, with refhub’s icon', async () => {
    const page = await get('/docs/');
    expect(page.statusCode).toBe(200);
    expect(page.body).toMatch(/<title>refhub API<\/title>/);
    expect(page.body).not.toMatch(/Swagger UI<\/title>/);
    const icon = /<link rel="icon" type="image\/svg\+xml" href="\.\/([^"]+)"/.exec(page.body)?.[1];
    expect(icon, page.body).toBeDefined();
    const served = await get(`/docs/${icon!}`);
    expect(served.statusCode).toBe(200);
    expect(served.body).toBe(DOCS_ICON_SVG);
  });

  it('shows refhub’s mark in the top bar, not the plugin’s logo', async () => {
    const initializer = await get('/docs/static/swagger-initializer.js');
    expect(initializer.statusCode).toBe(200);
    const logo = /img\.src = 'data:image\/svg\+xml;base64,([^']+)'/.exec(initializer.body)?.[1];
    expect(logo, initializer.body).toBeDefined();
    expect(Buffer.from(logo!, 'base64').toString('utf8')).toBe(DOCS_LOGO_SVG);
    const pluginLogo = await fs.readFile(path.join(ROOT, 'node_modules/@fastify/swagger-ui/logo.svg'));
    expect(initializer.body).not.toContain(pluginLogo.toString('base64'));
  });

  it('reads /openapi.json, and /docs/json and /docs/yaml redirect there', async () => {
    const initializer = await get('/docs/static/swagger-initializer.js');
    expect(initializer.body).toMatch(/"urls":\[\{"url":"\/openapi\.json","name":"refhub API"\}\]/);
    for (const url of ['/docs/json', '/docs/yaml']) {
      const res = await get(url);
      expect(res.statusCode, url).toBe(301);
      expect(res.headers.location, url).toBe('/openapi.json');
    }
    expect((await get('/openapi.json')).json()).toEqual(t.app.swagger());
  });
});
