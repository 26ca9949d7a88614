import { expect } from 'vitest';
import { describeAuthSuite } from '../helpers/auth-suite.js';

// The shared authentication and tenancy cases, on the VIP tier and points settings routes. In a
// file of their own: tiers.test.ts builds an app before each of its tests, which these cases,
// sharing one per route, do not need.

describeAuthSuite('GET /v1/vip_tiers', {
  request: () => ({ method: 'GET', url: '/v1/vip_tiers' }),
  scope: 'vip_tier:read',
  successStatus: 200,
  seed: async (t, a) => {
    await t.services.vipTiers.create(a.accountId, { name: 'Secret tier', milestone: 10 });
  },
  expectIsolated: (response) => {
    expect(response.json()).toEqual({ vip_tiers: [] });
  },
});

describeAuthSuite('GET /v1/points_settings', {
  request: () => ({ method: 'GET', url: '/v1/points_settings' }),
  scope: 'points_settings:read',
  successStatus: 200,
  seed: async (t, a) => {
    await t.services.pointsSettings.set(a.accountId, { points_label: { one: 'Secret', other: 'Secrets' } });
  },
  expectIsolated: (response) => {
    expect(response.json().points_settings.points_label.one).toBe('Point');
  },
});
