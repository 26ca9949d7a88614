import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { bearer, createTenant, createTestApp, type Tenant, type TestApp } from '../helpers/app.js';
import { expectError } from '../helpers/contract.js';

let t: TestApp;
let a: Tenant;

beforeEach(async () => {
  t = await createTestApp();
  a = await createTenant(t.services);
});
afterEach(async () => t.close());

const get = (path: string, key = a.apiKey) => t.app.inject({ method: 'GET', url: path, headers: bearer(key) });

async function customerWith(points: number, email: string): Promise<number> {
  const id = (await t.services.customers.create(a.accountId, { email })).id;
  if (points > 0) await t.services.pointsTransactions.adjust(a.accountId, { customer_id: id, points_change: points });
  return id;
}
const tierOf = async (id: number) => (await t.services.customers.get(a.accountId, id)).vip_tier_id;

describe('VIP tiers: an all-time program kept in step with every change', () => {
  it('lists the tiers ascending milestone in the reference shape', async () => {
    await t.services.vipTiers.create(a.accountId, { name: 'Gold', milestone: 500, perks: [{ name: 'Free shipping' }] });
    await t.services.vipTiers.create(a.accountId, {
      name: 'Bronze',
      milestone: 0,
      image_url: 'https://cdn.example.com/b.svg',
    });
    const response = await get('/v1/vip_tiers?include=perks');
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual({
      vip_tiers: [
        {
          id: expect.any(Number),
          name: 'Bronze',
          image_url: 'https://cdn.example.com/b.svg',
          milestone: 0,
          perks: [],
          entry_rewards: [],
        },
        {
          id: expect.any(Number),
          name: 'Gold',
          image_url: '',
          milestone: 500,
          perks: [{ name: 'Free shipping' }],
          entry_rewards: [],
        },
      ],
    });
  });

  it('places every customer of the account again when a tier is created, changed or deleted', async () => {
    const low = await customerWith(50, 'low@example.com');
    const mid = await customerWith(150, 'mid@example.com');
    const high = await customerWith(600, 'high@example.com');
    const b = await createTenant(t.services, 'Shop B');
    const other = (await t.services.customers.create(b.accountId, { email: 'other@example.com' })).id;
    await t.services.pointsTransactions.adjust(b.accountId, { customer_id: other, points_change: 1000 });

    const silver = await t.services.vipTiers.create(a.accountId, { name: 'Silver', milestone: 100 });
    expect([await tierOf(low), await tierOf(mid), await tierOf(high)]).toEqual([null, silver.id, silver.id]);
    const gold = await t.services.vipTiers.create(a.accountId, { name: 'Gold', milestone: 500 });
    expect([await tierOf(low), await tierOf(mid), await tierOf(high)]).toEqual([null, silver.id, gold.id]);
    // Another account's customers are not in this account's tiers.
    expect((await t.services.customers.get(b.accountId, other)).vip_tier_id).toBeNull();

    await t.services.vipTiers.update(silver.id, { milestone: 40 });
    expect([await tierOf(low), await tierOf(mid), await tierOf(high)]).toEqual([silver.id, silver.id, gold.id]);
    await t.services.vipTiers.update(gold.id, { milestone: 700 });
    expect(await tierOf(high)).toBe(silver.id);
    await t.services.vipTiers.delete(silver.id);
    expect([await tierOf(low), await tierOf(mid), await tierOf(high)]).toEqual([null, null, null]);
    const customer = await t.services.customers.get(a.accountId, high);
    expect(customer.vip_status).toMatchObject({
      next_vip_tier_id: gold.id,
      delta_to_next_vip_tier: 100,
      progress_value: 600,
    });
  });

  it('places a new customer in a tier at milestone 0, however the customer is made', async () => {
    const base = await t.services.vipTiers.create(a.accountId, { name: 'Member', milestone: 0 });
    const byCli = (await t.services.customers.create(a.accountId, { email: 'cli@example.com' })).id;
    expect(await tierOf(byCli)).toBe(base.id);
    const response = await t.app.inject({
      method: 'POST',
      url: '/v1/customer_identities/create_or_update',
      headers: bearer(a.accessToken),
      payload: { customer_identity: { distinct_id: 'crm-1', email: 'api@example.com' } },
    });
    expect(await tierOf(response.json().customer_identity.customer_id)).toBe(base.id);
  });

  it('refuses two tiers with one milestone, and unknown ids', async () => {
    const silver = await t.services.vipTiers.create(a.accountId, { name: 'Silver', milestone: 100 });
    const gold = await t.services.vipTiers.create(a.accountId, { name: 'Gold', milestone: 500 });
    await expect(t.services.vipTiers.create(a.accountId, { name: 'Again', milestone: 100 })).rejects.toMatchObject({
      code: 'invalid_parameter',
    });
    await expect(t.services.vipTiers.update(gold.id, { milestone: 100 })).rejects.toMatchObject({
      code: 'invalid_parameter',
    });
    await expect(t.services.vipTiers.update(999_999, { name: 'x' })).rejects.toMatchObject({ code: 'not_found' });
    await expect(t.services.vipTiers.delete(999_999)).rejects.toMatchObject({ code: 'not_found' });
    // Another account may use the same milestone.
    const b = await createTenant(t.services, 'Shop B');
    await t.services.vipTiers.create(b.accountId, { name: 'Silver', milestone: 100 });
    expect((await t.services.vipTiers.list(a.accountId)).map((tier) => tier.id)).toEqual([silver.id, gold.id]);
  });
});

describe('GET /v1/points_settings', () => {
  it('answers Point / Points until the merchant names them', async () => {
    expect((await get('/v1/points_settings')).json()).toEqual({
      points_settings: { points_label: { one: 'Point', other: 'Points' }, points_expiry: null },
    });
    await t.services.pointsSettings.set(a.accountId, { points_label: { one: 'Coin', other: 'Coins' } });
    expect((await get('/v1/points_settings')).json()).toEqual({
      points_settings: { points_label: { one: 'Coin', other: 'Coins' }, points_expiry: null },
    });
    await expect(t.services.pointsSettings.set(a.accountId, { points_label: { one: 'x' } })).rejects.toMatchObject({
      code: 'invalid_parameter',
    });
  });
});

it('keeps another account out of GET /v1/vip_tiers', async () => {
  const b = await createTenant(t.services, 'Shop B');
  await t.services.vipTiers.create(b.accountId, { name: 'B tier', milestone: 1 });
  expect((await get('/v1/vip_tiers')).json()).toEqual({ vip_tiers: [] });
  expectError(await get('/v1/vip_tiers?include=x'.padEnd(300, 'x')), 'invalid_parameter');
});
