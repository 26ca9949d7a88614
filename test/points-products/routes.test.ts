import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { PointsProduct, PointsPurchase } from '../../src/points-products/schemas.js';
import { CODE_ALPHABET, CODE_LENGTH, newRewardCode } from '../../src/reward-fulfillments/code.js';
import type { RewardFulfillment } from '../../src/reward-fulfillments/schemas.js';
import { bearer, createTenant, createTestApp, type Tenant, type TestApp } from '../helpers/app.js';
import { expectError } from '../helpers/contract.js';
import { engineState, rowCount, unbalancedCustomers } from '../helpers/engine.js';

let t: TestApp;
let a: Tenant;
let jane: number;

const fixed = (name: string, price: number, extra: Record<string, unknown> = {}) => ({
  exchange_type: 'fixed',
  points_price: price,
  reward: { name, description: `${name}, once`, image_url: 'https://cdn.example.com/r.png' },
  ...extra,
});
const variable = (name: string, extra: Record<string, unknown> = {}) => ({
  exchange_type: 'variable',
  variable_points_step: 100,
  variable_points_step_reward_value: 1,
  variable_points_min: 200,
  variable_points_max: 1000,
  reward: { name },
  ...extra,
});

async function products(tenant: Tenant, inputs: Record<string, unknown>[]): Promise<PointsProduct[]> {
  return (await t.services.pointsProducts.create(tenant.accountId, inputs)) as PointsProduct[];
}

async function give(points: number, customer = jane, tenant = a): Promise<void> {
  await t.services.pointsTransactions.adjust(tenant.accountId, { customer_id: customer, points_change: points });
}

const get = (path: string, key = a.apiKey) => t.app.inject({ method: 'GET', url: path, headers: bearer(key) });
const buy = (productId: number, body: unknown, headers: Record<string, string> = {}, key = a.apiKey) =>
  t.app.inject({
    method: 'POST',
    url: `/v1/points_products/${productId}/purchase`,
    headers: { ...bearer(key), ...headers },
    payload: body as object,
  });
const balance = async (id = jane) => (await t.services.customers.get(a.accountId, id)).points_balance;
/** What a refused purchase must leave as it was: the engine's tables and the purchase tables. */
const state = async () => ({
  ...(await engineState(t.db.kysely)),
  purchases: await rowCount(t.db.kysely, 'points_purchases'),
  fulfillments: await rowCount(t.db.kysely, 'reward_fulfillments'),
});

beforeEach(async () => {
  t = await createTestApp();
  a = await createTenant(t.services);
  jane = (await t.services.customers.create(a.accountId, { email: 'jane@example.com' })).id;
});
afterEach(async () => t.close());

describe('GET /v1/points_products and /v1/points_products/{id}', () => {
  it('lists the enabled products newest first, in the reference shape, with the points labels', async () => {
    const [coupon, slider, hidden] = await products(a, [
      fixed('$5 off', 100),
      variable('$1 per 100'),
      fixed('Old', 1, { enabled: false }),
    ]);
    const page = (await get('/v1/points_products')).json();
    expect(page.points_products.map((p: PointsProduct) => p.id)).toEqual([slider!.id, coupon!.id]);
    expect(page.points_products[1]).toEqual({
      id: coupon!.id,
      exchange_type: 'fixed',
      exchange_description: '100 Points',
      points_price: 100,
      variable_points_step: null,
      variable_points_step_reward_value: null,
      variable_points_min: null,
      variable_points_max: null,
      expires_after_days: null,
      reward: {
        id: expect.any(Number),
        name: '$5 off',
        description: '$5 off, once',
        image_url: 'https://cdn.example.com/r.png',
        created_at: expect.any(String),
        updated_at: expect.any(String),
      },
      created_at: expect.any(String),
      updated_at: expect.any(String),
    });
    expect(page.points_products[0]).toMatchObject({
      exchange_description: '1 off for every 100 Points',
      points_price: null,
      variable_points_step: 100,
      reward: { description: '', image_url: '' },
    });
    await t.services.pointsSettings.set(a.accountId, { points_label: { one: 'Coin', other: 'Coins' } });
    const [single] = await products(a, [fixed('Sticker', 1)]);
    expect((await get(`/v1/points_products/${single!.id}`)).json().points_product.exchange_description).toBe('1 Coin');
    expect((await get(`/v1/points_products/${coupon!.id}`)).json().points_product.exchange_description).toBe(
      '100 Coins',
    );
    expectError(await get(`/v1/points_products/${hidden!.id}`), 'not_found');
  });

  it('filters by exchange_type, pages with cursors bound to the filter, and keeps accounts apart', async () => {
    const made = await products(a, [fixed('a', 1), variable('b'), fixed('c', 3), fixed('d', 4)]);
    const fixedOnly = (await get('/v1/points_products?exchange_type=fixed&limit=2')).json();
    expect(fixedOnly.points_products.map((p: PointsProduct) => p.reward.name)).toEqual(['d', 'c']);
    const next = (
      await get(`/v1/points_products?exchange_type=fixed&limit=2&cursor=${fixedOnly.metadata.next_cursor}`)
    ).json();
    expect(next.points_products.map((p: PointsProduct) => p.reward.name)).toEqual(['a']);
    expectError(await get(`/v1/points_products?limit=2&cursor=${fixedOnly.metadata.next_cursor}`), 'invalid_cursor');
    expectError(await get('/v1/points_products?exchange_type=both'), 'invalid_parameter');
    const b = await createTenant(t.services, 'Shop B');
    expect((await get('/v1/points_products', b.apiKey)).json().points_products).toEqual([]);
    expectError(await get(`/v1/points_products/${made[0]!.id}`, b.apiKey), 'not_found');
  });
});

describe('POST /v1/points_products/{id}/purchase', () => {
  it('spends the points, records the purchase and issues a code, in one answer', async () => {
    const [coupon] = await products(a, [fixed('$5 off', 100)]);
    await give(250);
    const response = await buy(coupon!.id, { customer_id: jane });
    expect(response.statusCode, response.body).toBe(201);
    const purchase = response.json<{ points_purchase: PointsPurchase }>().points_purchase;
    expect(purchase).toEqual({
      id: expect.any(Number),
      customer_id: jane,
      points_product_id: coupon!.id,
      points_spent: 100,
      reward_fulfillment: {
        id: expect.any(Number),
        name: '$5 off',
        code: expect.stringMatching(new RegExp(`^[${CODE_ALPHABET}]{${CODE_LENGTH}}$`)),
        customer_id: jane,
        fulfillment_status: 'issued',
        image_url: 'https://cdn.example.com/r.png',
        action_text: null,
        action_url: null,
        usage_instructions: null,
        terms_and_conditions: null,
        expires_at: null,
        usage_status: 'unused',
        used_at: null,
        created_at: expect.any(String),
        updated_at: expect.any(String),
      },
      created_at: expect.any(String),
      updated_at: expect.any(String),
    });
    expect(await balance()).toBe(150);
    const ledger = (await get(`/v1/points_transactions?customer_id=${jane}`)).json().points_transactions;
    expect(ledger[0]).toMatchObject({ points_change: -100, description: '$5 off', points_purchase_id: purchase.id });
    // Spending does not lower the points earned.
    expect((await t.services.customers.get(a.accountId, jane)).vip_status.progress_value).toBe(250);
    const issued = (await get(`/v1/reward_fulfillments?customer_id=${jane}`)).json().reward_fulfillments;
    expect(issued).toEqual([purchase.reward_fulfillment]);
    expect(await unbalancedCustomers(t.db.kysely)).toEqual([]);
  });

  it('spends a chosen number of points on a variable product, in steps within its bounds', async () => {
    const [slider] = await products(a, [variable('$1 per 100')]);
    await give(1000);
    const bought = await buy(slider!.id, { customer_id: jane, points_to_spend: 300 });
    expect(bought.statusCode, bought.body).toBe(201);
    expect(bought.json().points_purchase.points_spent).toBe(300);
    expect(await balance()).toBe(700);
    for (const points of [150, 100, 1100]) {
      const error = expectError(
        await buy(slider!.id, { customer_id: jane, points_to_spend: points }),
        'invalid_parameter',
      );
      expect(error.details[0].field).toBe('points_to_spend');
    }
    expect(expectError(await buy(slider!.id, { customer_id: jane }), 'invalid_parameter').details[0].field).toBe(
      'points_to_spend',
    );
  });

  it('refuses every bad purchase with the contract error, writing nothing', async () => {
    const [coupon] = await products(a, [fixed('$5 off', 100)]);
    const [hidden] = await products(a, [fixed('Hidden', 1, { enabled: false })]);
    const b = await createTenant(t.services, 'Shop B');
    const [theirs] = await products(b, [fixed('B coupon', 1)]);
    const bob = (await t.services.customers.create(b.accountId, { email: 'bob@example.com' })).id;
    await give(99);
    const cases: Array<[string, () => Promise<import('fastify').LightMyRequestResponse>, string, string?]> = [
      ['a balance short of the price', () => buy(coupon!.id, { customer_id: jane }), 'insufficient_points'],
      ['a product of another account', () => buy(theirs!.id, { customer_id: jane }), 'not_found'],
      ['a disabled product', () => buy(hidden!.id, { customer_id: jane }), 'not_found'],
      ['an unknown product', () => buy(999_999, { customer_id: jane }), 'not_found'],
      [
        'a customer of another account',
        () => buy(coupon!.id, { customer_id: bob }),
        'invalid_parameter',
        'customer_id',
      ],
      ['no customer_id', () => buy(coupon!.id, {}), 'invalid_parameter', 'customer_id'],
      [
        'a customer_id that is a string',
        () => buy(coupon!.id, { customer_id: String(jane) }),
        'invalid_parameter',
        'customer_id',
      ],
      [
        'points_to_spend on a fixed product',
        () => buy(coupon!.id, { customer_id: jane, points_to_spend: 100 }),
        'invalid_parameter',
        'points_to_spend',
      ],
      ['an unknown field', () => buy(coupon!.id, { customer_id: jane, coupon: 'x' }), 'invalid_parameter', 'coupon'],
      ['a body that is not an object', () => buy(coupon!.id, [jane]), 'invalid_request'],
      [
        'an invalid product id',
        () =>
          t.app.inject({
            method: 'POST',
            url: '/v1/points_products/abc/purchase',
            headers: bearer(a.apiKey),
            payload: { customer_id: jane },
          }),
        'invalid_parameter',
        'id',
      ],
    ];
    for (const [title, request, code, field] of cases) {
      const before = await state();
      const error = expectError(await request(), code as never);
      if (field)
        expect(
          error.details?.map((d: { field: string }) => d.field),
          title,
        ).toContain(field);
      expect(await state(), title).toEqual(before);
    }
    await t.services.customers.setState(jane, 'disabled');
    await give(1);
    const before = await state();
    expectError(await buy(coupon!.id, { customer_id: jane }), 'customer_not_member');
    expect(await state()).toEqual(before);
  });

  it('replays a purchase sent again with its Idempotency-Key, and refuses the key for another body', async () => {
    const [coupon] = await products(a, [fixed('$5 off', 100)]);
    await give(500);
    const key = { 'idempotency-key': 'order-77-reward' };
    const first = await buy(coupon!.id, { customer_id: jane }, key);
    expect(first.statusCode).toBe(201);
    const again = await buy(coupon!.id, { customer_id: jane }, key);
    expect(again.statusCode).toBe(201);
    expect(again.body).toBe(first.body);
    expect(await balance()).toBe(400);
    const [other] = await products(a, [fixed('Other', 1)]);
    expectError(await buy(other!.id, { customer_id: jane }, key), 'idempotency_key_reused');
    expect(await balance()).toBe(400);
  });
});

describe('GET /v1/reward_fulfillments', () => {
  it('lists the issued rewards id descending, filtered, with cursors bound to the filters', async () => {
    const [coupon] = await products(a, [fixed('$5 off', 10)]);
    const bob = (await t.services.customers.create(a.accountId, { email: 'bob@example.com' })).id;
    await give(100);
    await give(100, bob);
    const codes: string[] = [];
    for (const who of [jane, bob, jane, bob, jane]) {
      codes.push((await buy(coupon!.id, { customer_id: who })).json().points_purchase.reward_fulfillment.code);
      t.clock.advance(1000);
    }
    const all = (await get('/v1/reward_fulfillments')).json();
    expect(all.reward_fulfillments.map((f: RewardFulfillment) => f.code)).toEqual([...codes].reverse());
    const janes = (await get(`/v1/reward_fulfillments?customer_id=${jane}&limit=2`)).json();
    expect(janes.reward_fulfillments.map((f: RewardFulfillment) => f.code)).toEqual([codes[4], codes[2]]);
    const rest = (
      await get(`/v1/reward_fulfillments?customer_id=${jane}&limit=2&cursor=${janes.metadata.next_cursor}`)
    ).json();
    expect(rest.reward_fulfillments.map((f: RewardFulfillment) => f.code)).toEqual([codes[0]]);
    expectError(await get(`/v1/reward_fulfillments?limit=2&cursor=${janes.metadata.next_cursor}`), 'invalid_cursor');
    expect(
      (await get('/v1/reward_fulfillments?fulfillment_status=issued&usage_status=unused')).json().reward_fulfillments,
    ).toHaveLength(5);
    expect((await get('/v1/reward_fulfillments?fulfillment_status=cancelled')).json().reward_fulfillments).toEqual([]);
    const since = new Date(Date.UTC(2026, 0, 1) + 3000).toISOString();
    expect((await get(`/v1/reward_fulfillments?updated_at_min=${since}`)).json().reward_fulfillments).toHaveLength(2);
    const b = await createTenant(t.services, 'Shop B');
    expect((await get('/v1/reward_fulfillments', b.apiKey)).json().reward_fulfillments).toEqual([]);
  });
});

describe('reward codes', () => {
  it('10,000 codes are distinct, of the documented alphabet and length', () => {
    const codes = Array.from({ length: 10_000 }, newRewardCode);
    expect(new Set(codes).size).toBe(10_000);
    const shape = new RegExp(`^[${CODE_ALPHABET}]{${CODE_LENGTH}}$`);
    expect(codes.every((code) => shape.test(code))).toBe(true);
    expect(CODE_ALPHABET).toHaveLength(32);
    expect(CODE_ALPHABET).not.toMatch(/[01IO]/);
    // Every symbol appears, about equally (each 1/32 of 160,000 symbols: 5,000).
    const counts = new Map<string, number>();
    for (const code of codes) for (const symbol of code) counts.set(symbol, (counts.get(symbol) ?? 0) + 1);
    expect(counts.size).toBe(32);
    for (const count of counts.values()) expect(count).toBeGreaterThan(4500);
  });
});
