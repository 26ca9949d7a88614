import type { LightMyRequestResponse } from 'fastify';
import { expect } from 'vitest';
import type { Tenant, TestApp } from '../helpers/app.js';
import { describeAuthSuite } from '../helpers/auth-suite.js';
import { expectError } from '../helpers/contract.js';

// The shared authentication and tenancy cases on the two writes of a reward code: its use and its
// cancellation. A's customer holds one code (`code`), bought for 10 of its 1,000 points. The suite
// keeps one database for its cases, each with accounts of its own: ids are those the seed made.

let code = 0;

const seedCode = async (t: TestApp, a: Tenant) => {
  const customer = (await t.services.customers.create(a.accountId, { email: 'jane@example.com' })).id;
  await t.services.pointsTransactions.adjust(a.accountId, { customer_id: customer, points_change: 1000 });
  const product = (await t.services.pointsProducts.create(a.accountId, {
    exchange_type: 'fixed',
    points_price: 10,
    reward: { name: '$5 off' },
  })) as { id: number };
  const purchase = await t.services.pointsProducts.purchase(a.accountId, product.id, { customer_id: customer });
  code = purchase.reward_fulfillment.id;
};

/** B's request is A's code unknown: 404, and the code and the points are as they were. */
const untouched = async (response: LightMyRequestResponse, t: TestApp, a: Tenant) => {
  expectError(response, 'not_found');
  const fulfillment = await t.services.rewardFulfillments.get(a.accountId, code);
  expect(fulfillment).toMatchObject({ fulfillment_status: 'issued', used_at: null });
  expect((await t.services.customers.get(a.accountId, fulfillment.customer_id)).points_balance).toBe(990);
};

describeAuthSuite('POST /v1/reward_fulfillments/{id}/use', {
  request: () => ({ method: 'POST', url: `/v1/reward_fulfillments/${code}/use` }),
  scope: 'reward_fulfillment:write',
  successStatus: 200,
  seed: seedCode,
  expectIsolated: untouched,
});

describeAuthSuite('POST /v1/reward_fulfillments/{id}/cancel', {
  request: () => ({ method: 'POST', url: `/v1/reward_fulfillments/${code}/cancel` }),
  scope: 'reward_fulfillment:write',
  successStatus: 200,
  seed: seedCode,
  expectIsolated: untouched,
});
