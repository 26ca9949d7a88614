import { describe, expect, it } from 'vitest';
import { testEngine } from '../helpers/app.js';
import { referralSettingsFixture } from '../helpers/fixtures.js';
import { seedTenant } from '../helpers/seed.js';
import { eventually } from '../helpers/wait.js';
import { CREATE_OR_UPDATE, type Reply, samples, send, sendJson, serverOnNewDatabase } from './support.js';

// A real server process counts in /metrics exactly the requests it answered, and every log
// line of a request carries the request id the caller gave in X-Request-Id (or the one the
// server made up when the caller's was unusable), the same id the response carries.

describe(`metrics and request ids of a real server process (${testEngine})`, () => {
  const fixture = serverOnNewDatabase(
    (url) =>
      seedTenant(url, 'Watched shop', (services, t) =>
        services.referralSettings.set(t.accountId, referralSettingsFixture),
      ),
    { LOG_LEVEL: 'info' },
  );

  it('counts every request it answered, by method, route pattern and status', async () => {
    const { server, seeded: tenant } = fixture;
    const plan: { method: string; path: string; token: string | null; body?: unknown; count: number }[] = [
      { method: 'GET', path: '/v1/referral_settings', token: tenant.apiKey, count: 3 },
      { method: 'GET', path: '/v1/referral_settings', token: null, count: 2 },
      { method: 'GET', path: '/v1/earning_rules?limit=5', token: tenant.accessToken, count: 4 },
      { method: 'GET', path: '/v1/earning_rules?limit=0', token: tenant.apiKey, count: 1 },
      {
        method: 'POST',
        path: CREATE_OR_UPDATE,
        token: tenant.accessToken,
        body: { customer_identity: { distinct_id: 'm-1', email: 'm@example.com' } },
        count: 2,
      },
      { method: 'GET', path: '/v1/no/such/thing?x=1', token: tenant.apiKey, count: 2 },
      { method: 'GET', path: '/healthz', token: null, count: 1 },
    ];
    const expected = new Map<string, number>();
    for (const step of plan) {
      for (let i = 0; i < step.count; i++) {
        const reply = await sendJson(server.url, step.method, step.path, step.token, step.body);
        const route = reply.status === 404 ? 'unmatched' : step.path.split('?')[0];
        const key = `loyalty_http_requests_total{method="${step.method}",route="${route}",status="${reply.status}"}`;
        expected.set(key, (expected.get(key) ?? 0) + 1);
      }
    }
    // The statuses the plan means to produce, so the counts below cover each kind.
    const statuses = new Set([...expected.keys()].map((k) => /status="(\d+)"/.exec(k)?.[1]));
    expect(statuses).toEqual(new Set(['200', '201', '400', '401', '404']));

    const scrape = await send(server.url, { path: '/metrics' });
    expect(scrape.status).toBe(200);
    const counted = samples(scrape.body);
    const actual = new Map([...counted].filter(([k]) => k.startsWith('loyalty_http_requests_total{')));
    expect(Object.fromEntries(actual)).toEqual(Object.fromEntries(expected));
    // The latency histogram saw the same requests.
    for (const [key, count] of expected) {
      const histogram = key.replace('loyalty_http_requests_total{', 'loyalty_http_request_duration_seconds_count{');
      expect(counted.get(histogram), histogram).toBe(count);
    }
    expect(counted.get('loyalty_auth_failures_total')).toBe(2);
    expect(counted.get('loyalty_database_errors_total')).toBe(0);
    expect(scrape.body).not.toContain('/v1/no/such/thing'); // routes by pattern, never raw URLs

    // The scrape itself is counted once answered.
    const again = samples((await send(server.url, { path: '/metrics' })).body);
    expect(again.get('loyalty_http_requests_total{method="GET",route="/metrics",status="200"}')).toBe(1);
  });

  it("carries the caller's X-Request-Id, or the server's own, on the response and every log line", async () => {
    const { server, seeded: tenant } = fixture;
    const given = ['trace-1f2e', 'svc.a:req-42', `edge-${Date.now()}`];
    const replies: { id: string; reply: Reply }[] = [];
    for (const id of given) {
      replies.push({
        id,
        reply: await sendJson(server.url, 'GET', '/v1/referral_settings', tenant.apiKey, undefined, {
          headers: { 'x-request-id': id },
        }),
      });
    }
    const refusedId = await sendJson(server.url, 'GET', '/v1/earning_rules?limit=999', tenant.apiKey, undefined, {
      headers: { 'x-request-id': 'err-7' },
    });
    replies.push({ id: 'err-7', reply: refusedId });
    // Unusable ids (spaces, too long) are replaced; the replacement is used everywhere.
    const unusable = ['has spaces in it', 'x'.repeat(200), '<script>'];
    const replaced: string[] = [];
    for (const id of unusable) {
      const reply = await sendJson(server.url, 'GET', '/healthz', null, undefined, { headers: { 'x-request-id': id } });
      const header = reply.headers['x-request-id'] as string;
      expect(header).toMatch(/^[0-9a-f-]{36}$/);
      replaced.push(header);
    }
    for (const { id, reply } of replies) expect(reply.headers['x-request-id']).toBe(id);
    expect(refusedId.json.error.request_id).toBe('err-7');

    const ids = [...given, 'err-7', ...replaced];
    const logLines = () =>
      server
        .output()
        .split('\n')
        .slice(0, -1) // a line still being written
        .filter((line) => line.startsWith('{'))
        .map((line) => JSON.parse(line) as { reqId?: string; msg: string });
    // The log lines arrive through a pipe, shortly after the responses.
    await eventually(async () => {
      const logged = logLines().filter((line) => line.msg === 'request completed');
      return ids.every((id) => logged.some((line) => line.reqId === id));
    }, 5000);
    const lines = logLines();
    for (const id of ids) {
      const mine = lines.filter((line) => line.reqId === id);
      expect(mine.map((line) => line.msg).sort(), id).toEqual(['incoming request', 'request completed']);
    }
    for (const id of unusable) expect(server.output()).not.toContain(id);
  });
});
