import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { bearer, createTenant, createTestApp, type Tenant, type TestApp } from '../helpers/app.js';
import { referralSettingsFixture } from '../helpers/fixtures.js';

// The whole referral journey through the API: Jane's code, a friend referred (rewarded at once),
// the friend's first order completing the referral, Jane rewarded; her URL leading to the store.

let t: TestApp;
let a: Tenant;
let order: string;
let jane: { id: number; referral_url: string };

beforeEach(async () => {
  t = await createTestApp();
  a = await createTenant(t.services);
  order = (await t.services.activityTypes.create(a.accountId, { name: 'Order' })).token;
  await t.services.referralSettings.set(a.accountId, {
    ...referralSettingsFixture,
    qualifying_activity_token: order,
    minimum_amount: '20',
    landing_url: 'https://shop.example/welcome?utm=loyalty',
  });
  const id = (await t.services.customers.create(a.accountId, { email: 'jane@example.com' })).id;
  jane = (await t.services.customers.get(a.accountId, id)) as { id: number; referral_url: string };
});
afterEach(async () => t.close());

const post = (url: string, payload: object) =>
  t.app.inject({ method: 'POST', url, headers: bearer(a.apiKey), payload });

describe('a referral, from the code to both rewards', () => {
  it("rewards the friend at once, and Jane when the friend's first qualifying order comes", async () => {
    const code = jane.referral_url.split('/').pop()!;
    const made = await post('/v1/referrals', {
      referral: { referral_code: code, receiver_customer_email: 'Friend@Example.com', receiver_first_name: 'Fran' },
    });
    expect(made.statusCode, made.body).toBe(201);
    const referral = made.json().referral;
    expect(referral).toMatchObject({
      status: 'pending',
      referral_code: code,
      receiver_customer_email: 'Friend@Example.com',
      receiver_customer: { first_name: 'Fran', email: 'Friend@Example.com', state: 'member' },
      receiver_reward_fulfillment: { name: '10% off', fulfillment_status: 'issued' },
      sender_customer: { id: jane.id, email: 'jane@example.com' },
      sender_reward_fulfillment: null,
      completed_at: null,
    });

    // An order below the minimum does not complete it; one at the minimum does.
    const small = await post('/v1/activities', {
      activity: { token: order, customer_email: 'friend@example.com', properties: { amount: '19.99' } },
    });
    expect(small.statusCode, small.body).toBe(201);
    expect((await t.services.referrals.get(a.accountId, referral.id)).status).toBe('pending');
    const big = await post('/v1/activities', {
      activity: { token: order, customer_email: 'friend@example.com', properties: { amount: 20 } },
    });
    expect(big.statusCode, big.body).toBe(201);
    const completed = await t.services.referrals.get(a.accountId, referral.id);
    expect(completed).toMatchObject({
      status: 'completed',
      completed_at: expect.any(String),
      sender_reward_fulfillment: { name: '$5 off coupon', customer_id: jane.id },
    });

    const redirect = await t.app.inject({ method: 'GET', url: `/r/${code}` });
    expect(redirect.statusCode).toBe(302);
    expect(redirect.headers.location).toBe(`https://shop.example/welcome?utm=loyalty&ref=${code}`);
    expect((await t.services.referrals.figures(a.accountId)).clicks).toBe(1);
    expect((await t.app.inject({ method: 'GET', url: '/r/unknownCode123' })).statusCode).toBe(404);
  });
});
