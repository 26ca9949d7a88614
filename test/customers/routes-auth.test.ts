import { expect } from 'vitest';
import { describeAuthSuite } from '../helpers/auth-suite.js';
import { expectError } from '../helpers/contract.js';

// The shared authentication and tenancy cases, on every route of the customers room. In a file of
// their own: routes.test.ts builds an app before each of its tests, which these cases, sharing one
// per route, do not need.

/** A's customer Jane, made by the seed of each case. */
let jane = 0;

describeAuthSuite('GET /v1/customers', {
  request: () => ({ method: 'GET', url: '/v1/customers' }),
  scope: 'customer:read',
  successStatus: 200,
  seed: async (t, a) => {
    jane = (await t.services.customers.create(a.accountId, { email: 'jane@example.com' })).id;
  },
  expectIsolated: (response) => {
    expect(response.statusCode).toBe(200);
    expect(response.json().customers).toEqual([]);
  },
});

describeAuthSuite('GET /v1/customers/{id}', {
  request: () => ({ method: 'GET', url: `/v1/customers/${jane}` }),
  scope: 'customer:read',
  successStatus: 200,
  seed: async (t, a) => {
    jane = (await t.services.customers.create(a.accountId, { email: 'jane@example.com' })).id;
  },
  expectIsolated: (response) => {
    expectError(response, 'not_found');
    expect(response.body).not.toContain('jane');
  },
});
