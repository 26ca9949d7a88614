import { afterEach, describe, expect, it } from 'vitest';
import { bearer, createTenant, createTestApp, type TestApp } from '../helpers/app.js';
import { expectError } from '../helpers/contract.js';
import { referralSettingsFixture } from '../helpers/fixtures.js';

describe('HTTPS rules', () => {
  let t: TestApp | undefined;
  afterEach(async () => t?.close());

  const get = (remoteAddress: string, headers: Record<string, string> = {}, url = '/v1/referral_settings') =>
    t!.app.inject({ method: 'GET', url, remoteAddress, headers });

  async function setUp(env: Record<string, string> = {}) {
    t = await createTestApp(env);
    const a = await createTenant(t.services);
    await t.services.referralSettings.set(a.accountId, referralSettingsFixture);
    return a;
  }

  it('accepts plain HTTP from loopback clients', async () => {
    const a = await setUp();
    expect((await get('127.0.0.1', bearer(a.apiKey))).statusCode).toBe(200);
    expect((await get('::1', bearer(a.apiKey))).statusCode).toBe(200);
  });

  it('refuses plain HTTP from other clients with 403 https_required, before authentication', async () => {
    const a = await setUp();
    expectError(await get('203.0.113.9', bearer(a.apiKey)), 'https_required');
    expectError(await get('10.1.2.3'), 'https_required');
    expectError(await get('10.1.2.3', { 'x-forwarded-proto': 'https' }), 'https_required');
  });

  it('keeps health checks reachable for load balancers', async () => {
    await setUp();
    expect((await get('10.1.2.3', {}, '/healthz')).statusCode).toBe(200);
  });

  it('behind a trusted proxy, accepts X-Forwarded-Proto: https and refuses http', async () => {
    const a = await setUp({ TRUST_PROXY: 'true' });
    const ok = await get('10.1.2.3', { ...bearer(a.apiKey), 'x-forwarded-proto': 'https' });
    expect(ok.statusCode).toBe(200);
    expect(ok.headers['strict-transport-security']).toMatch(/max-age=\d+/);
    expectError(await get('10.1.2.3', { ...bearer(a.apiKey), 'x-forwarded-proto': 'http' }), 'https_required');
    expectError(await get('10.1.2.3', bearer(a.apiKey)), 'https_required');
    // A local proxy forwarding a plain-HTTP client is refused too.
    expectError(await get('127.0.0.1', { ...bearer(a.apiKey), 'x-forwarded-proto': 'http' }), 'https_required');
  });

  it('trusts X-Forwarded-Proto only from the listed proxies', async () => {
    const a = await setUp({ TRUST_PROXY: '10.0.0.0/8' });
    expect((await get('10.1.2.3', { ...bearer(a.apiKey), 'x-forwarded-proto': 'https' })).statusCode).toBe(200);
    expectError(await get('192.0.2.1', { ...bearer(a.apiKey), 'x-forwarded-proto': 'https' }), 'https_required');
  });
});

describe('rate limit', () => {
  let t: TestApp | undefined;
  afterEach(async () => t?.close());

  it('limits each credential separately to RATE_LIMIT_PER_SECOND, then 429 with Retry-After', async () => {
    t = await createTestApp({ RATE_LIMIT_PER_SECOND: '3' });
    const a = await createTenant(t.services);
    const b = await createTenant(t.services);
    const get = (token: string) =>
      t!.app.inject({ method: 'GET', url: '/v1/referral_settings', headers: bearer(token) });
    const remaining = [];
    for (let i = 0; i < 3; i++) remaining.push((await get(a.apiKey)).headers['ratelimit-remaining']);
    expect(remaining).toEqual(['2', '1', '0']);
    const limited = await get(a.apiKey);
    expectError(limited, 'rate_limited');
    expect(Number(limited.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(limited.headers['ratelimit-limit']).toBe('3');
    // Another credential of the same account has its own budget.
    expect((await get(a.accessToken)).statusCode).toBe(404);
    expect((await get(b.apiKey)).statusCode).toBe(404);
  });

  it('does not count or limit unauthenticated requests against a credential', async () => {
    t = await createTestApp({ RATE_LIMIT_PER_SECOND: '1' });
    for (let i = 0; i < 3; i++) {
      expectError(await t.app.inject({ method: 'GET', url: '/v1/referral_settings' }), 'unauthorized');
    }
  });

  it('is off with RATE_LIMIT_PER_SECOND=0', async () => {
    t = await createTestApp({ RATE_LIMIT_PER_SECOND: '0' });
    const a = await createTenant(t.services);
    for (let i = 0; i < 30; i++) {
      const response = await t.app.inject({ method: 'GET', url: '/v1/referral_settings', headers: bearer(a.apiKey) });
      expect(response.statusCode).toBe(404);
      expect(response.headers['ratelimit-limit']).toBeUndefined();
    }
  });
});

describe('health and readiness', () => {
  it('/healthz and /readyz answer 200, and /readyz 503 unavailable once the database is gone', async () => {
    const t = await createTestApp();
    try {
      expect((await t.app.inject({ method: 'GET', url: '/healthz' })).json()).toEqual({ status: 'ok' });
      expect((await t.app.inject({ method: 'GET', url: '/readyz' })).json()).toEqual({ status: 'ready' });
      await t.db.close();
      const down = await t.app.inject({ method: 'GET', url: '/readyz' });
      expectError(down, 'unavailable');
      expect(down.headers['retry-after']).toBe('1');
    } finally {
      await t.app.close();
    }
  });
});
