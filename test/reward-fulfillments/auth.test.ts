import type { LightMyRequestResponse } from 'fastify';
import { expect } from 'vitest';
import type { Tenant, TestApp } from '../helpers/app.js';
import { describeAuthSuite } from '../helpers/auth-suite.js';
import { expectError } from '../helpers/contract.js';

// The shared authentication and tenancy cases on the two writes of a reward code: its use and its
// cancellation. A's customer holds code 1, bought for 10 of its 1,000 points.

const seedCode = async (t: TestApp, a: Tenant) => {
  const customer = (await t.services.customers.create(a.accountId, { email: 'jane@example.com' })).id;
  await t.services.pointsTransactions.adjust(a.accountId, { customer_id: customer, points_change: 1000 });
  await t.services.pointsProducts.create(a.accountId, {
    exchange_type: 'fixed',
    points_price: 10,
    reward: { name: '$5 off' },
  });
  await t.services.pointsProducts.purchase(a.accountId, 1, { customer_id: customer });
};

/** B's request is A's code unknown: 404, and the code and the points are as they were. */
const untouched = async (response: LightMyRequestResponse, t: TestApp, a: Tenant) => {
  expectError(response, 'not_found');
  const code = await t.services.rewardFulfillments.get(a.accountId, 1);
  expect(code).toMatchObject({ fulfillment_status: 'issued', used_at: null });
  expect((await t.services.customers.get(a.accountId, code.customer_id)).points_balance).toBe(990);
};

describeAuthSuite('POST /v1/reward_fulfillments/{id}/use', {
  request: () => ({ method: 'POST', url: '/v1/reward_fulfillments/1/use' }),
  scope: 'reward_fulfillment:write',
  successStatus: 200,
  seed: seedCode,
  expectIsolated: untouched,
});

describeAuthSuite('POST /v1/reward_fulfillments/{id}/cancel', {
  request: () => ({ method: 'POST', url: '/v1/reward_fulfillments/1/cancel' }),
  scope: 'reward_fulfillment:write',
  successStatus: 200,
  seed: seedCode,
  expectIsolated: untouched,
});
