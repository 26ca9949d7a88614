import { expect } from 'vitest';
import type { PointsProduct } from '../../src/points-products/schemas.js';
import type { Tenant, TestApp } from '../helpers/app.js';
import { describeAuthSuite } from '../helpers/auth-suite.js';
import { expectError } from '../helpers/contract.js';

// The shared authentication and tenancy cases, on every route of the points products room. In a
// file of their own: routes.test.ts builds an app before each of its tests, which these cases,
// sharing one per route, do not need.

/** A's customer with 1,000 points and a product they can buy, made by the seed of each case. */
let customerId = 0;
let productId = 0;

const seedProduct = async (t: TestApp, a: Tenant) => {
  customerId = (await t.services.customers.create(a.accountId, { email: 'jane@example.com' })).id;
  await t.services.pointsTransactions.adjust(a.accountId, { customer_id: customerId, points_change: 1000 });
  const product = (await t.services.pointsProducts.create(a.accountId, {
    exchange_type: 'fixed',
    points_price: 10,
    reward: { name: '$5 off', description: '$5 off, once', image_url: 'https://cdn.example.com/r.png' },
  })) as PointsProduct;
  productId = product.id;
};

describeAuthSuite('GET /v1/points_products', {
  request: () => ({ method: 'GET', url: '/v1/points_products' }),
  scope: 'points_product:read',
  successStatus: 200,
  seed: seedProduct,
  expectIsolated: (response) => expect(response.json().points_products).toEqual([]),
});

describeAuthSuite('GET /v1/points_products/{id}', {
  request: () => ({ method: 'GET', url: `/v1/points_products/${productId}` }),
  scope: 'points_product:read',
  successStatus: 200,
  seed: seedProduct,
  expectIsolated: (response) => {
    expectError(response, 'not_found');
  },
});

describeAuthSuite('POST /v1/points_products/{id}/purchase', {
  request: () => ({
    method: 'POST',
    url: `/v1/points_products/${productId}/purchase`,
    payload: { customer_id: customerId },
  }),
  scope: 'points_purchase:write',
  successStatus: 201,
  seed: seedProduct,
  expectIsolated: async (response, t, a) => {
    expectError(response, 'not_found');
    expect((await t.services.customers.get(a.accountId, customerId)).points_balance).toBe(1000);
  },
});

describeAuthSuite('GET /v1/reward_fulfillments', {
  request: () => ({ method: 'GET', url: '/v1/reward_fulfillments' }),
  scope: 'reward_fulfillment:read',
  successStatus: 200,
  seed: async (t, a) => {
    await seedProduct(t, a);
    await t.services.pointsProducts.purchase(a.accountId, productId, { customer_id: customerId });
  },
  expectIsolated: (response) => expect(response.json().reward_fulfillments).toEqual([]),
});
