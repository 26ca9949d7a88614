import { expect } from 'vitest';
import type { Tenant, TestApp } from '../helpers/app.js';
import { describeAuthSuite } from '../helpers/auth-suite.js';
import { expectError } from '../helpers/contract.js';

// The shared authentication and tenancy cases, on every route of the points transactions room. In
// a file of their own: routes.test.ts builds an app before each of its tests, which these cases,
// sharing one per route, do not need.

const URL = '/v1/points_transactions';

/** A's customer Jane, with 5 points from one transaction, made by the seed of each case. */
let jane = 0;
let transactionId = 0;

const seedJane = async (t: TestApp, a: Tenant) => {
  jane = (await t.services.customers.create(a.accountId, { email: 'jane@example.com' })).id;
  await t.services.pointsTransactions.adjust(a.accountId, { customer_id: jane, points_change: 5 });
  const [transaction] = (await t.services.pointsTransactions.page(a.accountId, {})).points_transactions;
  transactionId = transaction?.id ?? 0;
};

describeAuthSuite('POST /v1/points_transactions', {
  request: () => ({
    method: 'POST',
    url: URL,
    payload: { points_transaction: { customer_id: jane, points_change: 1 } },
  }),
  scope: 'points_transaction:write',
  successStatus: 201,
  seed: seedJane,
  expectIsolated: async (response, t, a) => {
    expectError(response, 'invalid_parameter');
    expect((await t.services.customers.get(a.accountId, jane)).points_balance).toBe(5);
  },
});

describeAuthSuite('GET /v1/points_transactions', {
  request: () => ({ method: 'GET', url: URL }),
  scope: 'points_transaction:read',
  successStatus: 200,
  seed: seedJane,
  expectIsolated: (response) => {
    expect(response.statusCode).toBe(200);
    expect(response.json().points_transactions).toEqual([]);
  },
});

describeAuthSuite('GET /v1/points_transactions/{id}', {
  request: () => ({ method: 'GET', url: `${URL}/${transactionId}` }),
  scope: 'points_transaction:read',
  successStatus: 200,
  seed: seedJane,
  expectIsolated: (response) => {
    expectError(response, 'not_found');
  },
});
