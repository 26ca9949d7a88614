import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ReferralSettingsResponse } from '../../src/referral-settings/schemas.js';
import { bearer, createTenant, createTestApp, type Tenant, type TestApp } from '../helpers/app.js';
import { describeAuthSuite } from '../helpers/auth-suite.js';
import { expectError } from '../helpers/contract.js';
import { referralSettingsFixture as settings } from '../helpers/fixtures.js';

describe('GET /v1/referral_settings', () => {
  let t: TestApp;
  let a: Tenant;
  beforeEach(async () => {
    t = await createTestApp();
    a = await createTenant(t.services);
  });
  afterEach(async () => t.close());

  const get = (token: string) => t.app.inject({ method: 'GET', url: '/v1/referral_settings', headers: bearer(token) });

  it('answers 200 with the spec shape, for an API key and an access token', async () => {
    await t.services.referralSettings.set(a.accountId, settings);
    for (const token of [a.apiKey, a.accessToken]) {
      const response = await get(token);
      expect(response.statusCode).toBe(200);
      expect(response.headers['content-type']).toMatch(/^application\/json/);
      expect(response.json<ReferralSettingsResponse>()).toEqual({ referral_settings: settings });
    }
  });

  it('answers 200 with status inactive for an inactive program', async () => {
    await t.services.referralSettings.set(a.accountId, { ...settings, status: 'inactive' });
    expect((await get(a.apiKey)).json().referral_settings.status).toBe('inactive');
  });

  it('answers 404 not_found when the account never set a program up, or deleted it', async () => {
    expectError(await get(a.apiKey), 'not_found');
    await t.services.referralSettings.set(a.accountId, settings);
    await t.services.referralSettings.delete(a.accountId);
    expectError(await get(a.apiKey), 'not_found');
  });

  it('reflects a replacement of the settings', async () => {
    await t.services.referralSettings.set(a.accountId, settings);
    const changed = { ...settings, sender_reward: { ...settings.sender_reward, name: 'Free shipping' } };
    await t.services.referralSettings.set(a.accountId, changed);
    expect((await get(a.apiKey)).json()).toEqual({ referral_settings: changed });
  });

  it('allows a :write scope to stand for nothing else: earning_rule:read alone is refused', async () => {
    const key = await t.services.auth.createApiKey(a.accountId, 'earning_rule:read');
    expectError(await get(key.key), 'insufficient_scope');
  });

  it('carries the rate-limit headers and X-Request-Id on success', async () => {
    const limited = await createTestApp({ RATE_LIMIT_PER_SECOND: '10' });
    try {
      const b = await createTenant(limited.services);
      await limited.services.referralSettings.set(b.accountId, settings);
      const response = await limited.app.inject({
        method: 'GET',
        url: '/v1/referral_settings',
        headers: bearer(b.apiKey),
      });
      expect(response.statusCode).toBe(200);
      expect(response.headers['ratelimit-limit']).toBe('10');
      expect(response.headers['ratelimit-remaining']).toBe('9');
      expect(response.headers['ratelimit-reset']).toBeDefined();
      expect(response.headers['x-request-id']).toMatch(/.+/);
    } finally {
      await limited.close();
    }
  });
});

describeAuthSuite('GET /v1/referral_settings', {
  successStatus: 200,
  request: () => ({ method: 'GET', url: '/v1/referral_settings' }),
  scope: 'referral_settings:read',
  seed: async (t, a) => {
    await t.services.referralSettings.set(a.accountId, settings);
  },
  expectIsolated: (response) => {
    expectError(response, 'not_found');
  },
});
