import { get } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { bearerMatches } from '../../src/http/metrics.js';
import { createTestApp, createTestDatabaseUrl, type TestApp, type TestDatabaseUrl } from '../helpers/app.js';
import { expectError } from '../helpers/contract.js';
import { type ServerProcess, startServer } from '../helpers/server-process.js';
import { eventually } from '../helpers/wait.js';

const TOKEN = 'metrics-secret-0123456789abcdef';

describe('/metrics behind METRICS_TOKEN, on the API port', () => {
  let t: TestApp | undefined;
  afterEach(async () => t?.close());

  it('answers only with the bearer token, 401 with a challenge otherwise', async () => {
    t = await createTestApp({ METRICS_TOKEN: TOKEN });
    const scrape = (authorization?: string) =>
      t!.app.inject({ method: 'GET', url: '/metrics', headers: authorization ? { authorization } : {} });
    for (const authorization of [
      undefined,
      `Bearer ${TOKEN}x`,
      `Bearer ${TOKEN.slice(0, -1)}`,
      `Basic ${TOKEN}`,
      TOKEN,
    ]) {
      const refused = await scrape(authorization);
      expectError(refused, 'unauthorized');
      expect(refused.headers['www-authenticate']).toBe('Bearer realm="metrics"');
      expect(refused.body).not.toContain('loyalty_');
    }
    const answered = await scrape(`Bearer ${TOKEN}`);
    expect(answered.statusCode).toBe(200);
    expect(answered.body).toMatch(/^loyalty_http_requests_total\{method="GET",route="\/metrics",status="401"\} 5$/m);
  });

  it('is not served on the API port when METRICS_PORT is set', async () => {
    t = await createTestApp({ METRICS_PORT: '0' });
    expectError(await t.app.inject({ method: 'GET', url: '/metrics' }), 'not_found');
  });

  it('compares the token whole, whatever the length sent', () => {
    expect(bearerMatches(`Bearer ${TOKEN}`, TOKEN)).toBe(true);
    expect(bearerMatches(`bearer  ${TOKEN}`, TOKEN)).toBe(true);
    expect(bearerMatches(undefined, TOKEN)).toBe(false);
    expect(bearerMatches('Bearer ', TOKEN)).toBe(false);
    expect(bearerMatches(`Bearer ${TOKEN} extra`, TOKEN)).toBe(false);
    expect(bearerMatches(`Bearer ${'x'.repeat(10_000)}`, TOKEN)).toBe(false);
  });
});

// Real server processes: the metrics listener of one process, and of the primary of WORKERS=2,
// which aggregates what every worker counted.
describe('METRICS_PORT: a listener of its own', () => {
  let server: ServerProcess | undefined;
  let database: TestDatabaseUrl | undefined;
  afterEach(async () => {
    await server?.stop('SIGKILL');
    server = undefined;
    await database?.drop();
    database = undefined;
  });

  const metricsPort = (output: string) =>
    Number(/metrics listening at http:\/\/127\.0\.0\.1:(\d+)\/metrics/.exec(output)?.[1]);
  const waitFor = async (condition: () => boolean) => {
    await eventually(async () => condition(), 10_000, 50);
    expect(condition()).toBe(true);
  };
  const healthRequests = (text: string) =>
    Number(/^loyalty_http_requests_total\{method="GET",route="\/healthz",status="200"\} (\d+)$/m.exec(text)?.[1] ?? 0);

  for (const workers of [1, 2]) {
    it(`serves /metrics there only, behind the token, with WORKERS=${workers}, and stops cleanly`, async () => {
      database = await createTestDatabaseUrl();
      server = await startServer({
        DATABASE_URL: database.url,
        WORKERS: String(workers),
        RATE_LIMIT_PER_SECOND: '0',
        METRICS_PORT: '0',
        METRICS_TOKEN: TOKEN,
      });
      await waitFor(() => metricsPort(server!.output()) > 0);
      // Every worker listening: the primary hands them connections in turn, so each counts some.
      await waitFor(() => (server!.output().match(/Server listening at/g) ?? []).length === workers);
      const metrics = `http://127.0.0.1:${metricsPort(server.output())}/metrics`;

      expect((await fetch(`${server.url}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } })).status).toBe(
        404,
      );
      const refused = await fetch(metrics);
      expect(refused.status).toBe(401);
      expect(refused.headers.get('www-authenticate')).toBe('Bearer realm="metrics"');
      expect(await refused.json()).toMatchObject({ error: { code: 'unauthorized' } });
      expect((await fetch(metrics.replace('/metrics', '/other'))).status).toBe(404);

      // A new connection each, so that with two workers both take some of them.
      const requests = 20;
      for (let i = 0; i < requests; i++) expect(await getOnNewConnection(`${server.url}/healthz`)).toBe(200);
      const scraped = await fetch(metrics, { headers: { authorization: `Bearer ${TOKEN}` } });
      expect(scraped.status, server.output()).toBe(200);
      expect(scraped.headers.get('content-type')).toMatch(/^text\/plain/);
      // Every request counted once, whichever worker answered it.
      expect(healthRequests(await scraped.text())).toBe(requests);

      expect(await server.stop('SIGTERM')).toBe(0);
      await expect(fetch(metrics)).rejects.toThrow();
    });
  }
});

function getOnNewConnection(url: string): Promise<number | undefined> {
  return new Promise((resolve, reject) => {
    get(url, { agent: false }, (response) => {
      response.resume();
      response.on('end', () => resolve(response.statusCode));
    }).on('error', reject);
  });
}
