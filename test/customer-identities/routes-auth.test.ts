import { expect } from 'vitest';
import type { CustomerIdentityResponse } from '../../src/customer-identities/schemas.js';
import { describeAuthSuite } from '../helpers/auth-suite.js';

// The shared authentication and tenancy cases, on the customer identities route. In a file of its
// own: routes.test.ts builds an app before each of its tests, which these cases, sharing one, do
// not need.

const URL = '/v1/customer_identities/create_or_update';

describeAuthSuite('POST /v1/customer_identities/create_or_update', {
  successStatus: 200,
  request: () => ({
    method: 'POST',
    url: URL,
    payload: { customer_identity: { distinct_id: 'crm-1', email: 'jane@example.com', first_name: 'Bea' } },
  }),
  scope: 'customer_identity:write',
  accessTokenOnly: true,
  seed: async (t, a) => {
    await t.services.customerIdentities.createOrUpdate(a.accountId, {
      distinct_id: 'crm-1',
      email: 'jane@example.com',
      first_name: 'Jane',
      properties: { owner: 'A' },
    });
  },
  expectIsolated: async (response, t, a, b) => {
    expect(response.statusCode).toBe(201);
    const [ofA] = await t.services.customerIdentities.listIdentities(a.accountId);
    const [ofB] = await t.services.customerIdentities.listIdentities(b.accountId);
    const created = response.json<CustomerIdentityResponse>().customer_identity;
    expect(created).toEqual(ofB);
    expect(created.id).not.toBe(ofA?.id);
    expect(created.customer_id).not.toBe(ofA?.customer_id);
    expect(created).toMatchObject({ first_name: 'Bea', properties: {} });
    expect(ofA).toMatchObject({ distinct_id: 'crm-1', first_name: 'Jane', properties: { owner: 'A' } });
    expect(await t.services.customers.list(a.accountId)).toHaveLength(1);
  },
});
