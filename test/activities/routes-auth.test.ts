import { expect } from 'vitest';
import { describeAuthSuite } from '../helpers/auth-suite.js';
import { expectError } from '../helpers/contract.js';

// The shared authentication and tenancy cases, on the activities route. In a file of its own:
// routes.test.ts builds an app before each of its tests, which these cases, sharing one, do not
// need.

const URL = '/v1/activities';

describeAuthSuite('POST /v1/activities', {
  request: () => ({
    method: 'POST',
    url: URL,
    payload: { activity: { token: 'activity_x', customer_email: 'a@example.com' } },
  }),
  scope: 'activity:write',
  successStatus: 201,
  seed: async (t, a) => {
    const type = await t.services.activityTypes.create(a.accountId, { name: 'Order' });
    // The suite's request names this token: give the type that token by renaming it in storage.
    await t.db.kysely.updateTable('activity_types').set({ token: 'activity_x' }).where('id', '=', type.id).execute();
  },
  expectIsolated: async (response, t, a) => {
    // B has no activity type with A's token: refused, and A's data untouched.
    expectError(response, 'invalid_parameter');
    expect(await t.services.customers.list(a.accountId)).toEqual([]);
  },
});
