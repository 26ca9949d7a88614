import { afterEach, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.js';

/** What Chromium sends for a page it navigates to. */
const BROWSER_ACCEPT =
  'text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,image/apng,*/*;q=0.8';
const LINKS = ['/admin', '/docs', '/v1/openapi.json'];

describe('GET / points a newcomer to the console, the API reference and the API', () => {
  let t: TestApp | undefined;
  afterEach(async () => t?.close());

  const get = (headers: Record<string, string> = {}, method: 'GET' | 'HEAD' = 'GET') =>
    t!.app.inject({ method, url: '/', headers });

  it('answers a browser with a page linking to /admin, /docs and the OpenAPI document, under a strict CSP', async () => {
    t = await createTestApp();
    const page = await get({ accept: BROWSER_ACCEPT });
    expect(page.statusCode).toBe(200);
    expect(page.headers['content-type']).toBe('text/html; charset=utf-8');
    for (const link of LINKS) expect(page.body).toContain(`href="${link}"`);
    // The console's kind of policy: its own stylesheet, no script, nothing inline, never framed.
    const csp = String(page.headers['content-security-policy']);
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("style-src 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).not.toContain('script-src');
    expect(csp).not.toContain('unsafe-inline');
    expect(page.body).not.toMatch(/<script|<style|\sstyle=|\son[a-z]+=/i);
    expect(page.headers.vary).toMatch(/accept/i);
    expect(page.headers['x-frame-options']).toBe('DENY');

    // Every link and the stylesheet lead somewhere.
    const stylesheet = /<link rel="stylesheet" href="([^"]+)"/.exec(page.body)?.[1];
    expect(stylesheet).toBe('/admin/assets/admin.css');
    for (const url of [...LINKS, stylesheet as string]) {
      const answer = await t.app.inject({ method: 'GET', url });
      expect(answer.statusCode, url).toBeLessThan(400);
    }
  });

  it('gives the page to clients without a preference (curl, no Accept)', async () => {
    t = await createTestApp();
    const clients: Record<string, string>[] = [{}, { accept: '*/*' }, { accept: 'text/html, application/json' }];
    for (const headers of clients) {
      const answer = await get(headers);
      expect(answer.statusCode).toBe(200);
      expect(answer.headers['content-type'], JSON.stringify(headers)).toMatch(/^text\/html/);
    }
  });

  it('answers a JSON client with a small index of the same links', async () => {
    t = await createTestApp();
    for (const accept of ['application/json', 'application/json, text/html;q=0.5', 'text/html;q=0.1, */*']) {
      const answer = await get({ accept });
      expect(answer.statusCode, accept).toBe(200);
      expect(answer.headers['content-type'], accept).toBe('application/json; charset=utf-8');
      expect(answer.headers.vary).toMatch(/accept/i);
      expect(answer.json()).toEqual({
        name: 'Loyalty API',
        links: { console: '/admin', api_reference: '/docs', openapi: '/v1/openapi.json', health: '/healthz' },
      });
    }
  });

  it('answers the favicon browsers ask for with 204, not an error', async () => {
    t = await createTestApp();
    const icon = await t.app.inject({ method: 'GET', url: '/favicon.ico' });
    expect(icon.statusCode).toBe(204);
    expect(icon.body).toBe('');
  });

  it('answers HEAD with the headers of GET and no body', async () => {
    t = await createTestApp();
    const page = await get({ accept: BROWSER_ACCEPT }, 'HEAD');
    expect(page.statusCode).toBe(200);
    expect(page.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(page.body).toBe('');
    const index = await get({ accept: 'application/json' }, 'HEAD');
    expect(index.statusCode).toBe(200);
    expect(index.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(index.body).toBe('');
  });

  it('is not an API operation: no credential asked or checked, no rate limit, not in the OpenAPI document', async () => {
    t = await createTestApp({ RATE_LIMIT_PER_SECOND: '1', AUTH_FAILURES_PER_MINUTE: '1' });
    for (let i = 0; i < 5; i++) {
      // A bad credential is not even read: the page needs none.
      const answer = await get({ authorization: 'Bearer api_not_a_real_key' });
      expect(answer.statusCode).toBe(200);
      expect(answer.headers['ratelimit-limit']).toBeUndefined();
      expect(answer.headers['www-authenticate']).toBeUndefined();
    }
    const document = (await t.app.inject({ method: 'GET', url: '/v1/openapi.json' })).json();
    expect(Object.keys(document.paths)).not.toContain('/');
    expect(Object.keys(document.paths)).not.toContain('/favicon.ico');
  });
});
