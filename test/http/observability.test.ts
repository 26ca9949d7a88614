import { sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { bearer, createTenant, createTestApp, type TestApp } from '../helpers/app.js';
import { expectError } from '../helpers/contract.js';
import { referralSettingsFixture } from '../helpers/fixtures.js';

describe('metrics, security headers and failed-authentication limits', () => {
  let t: TestApp | undefined;
  afterEach(async () => t?.close());

  it('exposes Prometheus metrics by route pattern and status', async () => {
    t = await createTestApp({ RATE_LIMIT_PER_SECOND: '1' });
    const a = await createTenant(t.services);
    await t.services.referralSettings.set(a.accountId, referralSettingsFixture);
    const get = (headers = {}) => t!.app.inject({ method: 'GET', url: '/v1/referral_settings', headers });
    expect((await get(bearer(a.apiKey))).statusCode).toBe(200);
    expect((await get(bearer(a.apiKey))).statusCode).toBe(429);
    expect((await get()).statusCode).toBe(401);
    await t.app.inject({ method: 'GET', url: '/v1/no/such/path?x=1' });

    const response = await t.app.inject({ method: 'GET', url: '/metrics' });
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toMatch(/^text\/plain/);
    const text = response.body;
    expect(text).toMatch(/loyalty_http_requests_total\{method="GET",route="\/v1\/referral_settings",status="200"\} 1/);
    expect(text).toMatch(/loyalty_http_requests_total\{method="GET",route="\/v1\/referral_settings",status="429"\} 1/);
    expect(text).toMatch(
      /loyalty_http_request_duration_seconds_bucket\{le="0.005",method="GET",route="\/v1\/referral_settings",status="200"\}/,
    );
    expect(text).toMatch(/loyalty_rate_limit_rejections_total 1/);
    expect(text).toMatch(/loyalty_auth_failures_total 1/);
    expect(text).toMatch(/loyalty_database_errors_total 0/);
    expect(text).toMatch(/route="unmatched",status="404"/);
    expect(text).not.toContain('/v1/no/such/path');
    expect(text).toMatch(/loyalty_process_resident_memory_bytes/);
  });

  it('counts database errors, and answers them with a generic 500', async () => {
    t = await createTestApp();
    const a = await createTenant(t.services);
    await sql`drop table referral_settings`.execute(t.db.kysely);
    const response = await t.app.inject({ method: 'GET', url: '/v1/referral_settings', headers: bearer(a.apiKey) });
    expectError(response, 'internal_error');
    expect(response.body).not.toMatch(/referral_settings|table/);
    expect((await t.app.inject({ method: 'GET', url: '/metrics' })).body).toMatch(/loyalty_database_errors_total 1/);
  });

  it('sends security headers suited to a JSON API on every answer', async () => {
    t = await createTestApp();
    for (const url of ['/v1/referral_settings', '/v1/nope', '/healthz']) {
      const response = await t.app.inject({ method: 'GET', url });
      expect(response.headers).toMatchObject({
        'x-content-type-options': 'nosniff',
        'x-frame-options': 'DENY',
        'content-security-policy': "default-src 'none'; frame-ancestors 'none'",
        'referrer-policy': 'no-referrer',
      });
    }
    expect((await t.app.inject({ method: 'GET', url: '/v1/referral_settings' })).headers['cache-control']).toBe(
      'no-store',
    );
  });

  it('refuses failing credentials from an address after too many failed authentications, never a good key', async () => {
    t = await createTestApp({ AUTH_FAILURES_PER_MINUTE: '3' });
    const a = await createTenant(t.services);
    const get = (token: string, remoteAddress = '127.0.0.1') =>
      t!.app.inject({ method: 'GET', url: '/v1/referral_settings', headers: bearer(token), remoteAddress });
    for (let i = 0; i < 3; i++) expectError(await get(`api_guess${i}`), 'unauthorized');
    const blocked = await get('api_guess0');
    expectError(blocked, 'rate_limited');
    expect(Number(blocked.headers['retry-after'])).toBeGreaterThan(0);
    // A good key is served from the same address (404: the account has no referral program).
    expect((await get(a.apiKey)).statusCode).toBe(404);
    // Another address is not affected.
    expectError(await get('api_guess0', '::1'), 'unauthorized');
  });
});
