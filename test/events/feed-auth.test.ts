import { expect } from 'vitest';
import { UnitOfWork } from '../../src/storage/unit-of-work.js';
import type { Tenant, TestApp } from '../helpers/app.js';
import { describeAuthSuite } from '../helpers/auth-suite.js';
import { expectError } from '../helpers/contract.js';

// The shared authentication and tenancy cases, on both routes of the events feed. In a file of
// their own: feed.test.ts builds an app before each of its tests, which these cases, sharing one
// per route, do not need.

const URL = '/v1/events';

/** The public id of A's event, recorded by the seed of each case. */
let seeded = '';
const seed = async (t: TestApp, a: Tenant) => {
  await new UnitOfWork(t.db.kysely, t.clock).run(async (w) => {
    t.services.events.record(w, a.accountId, 'customer.created', {
      customer: { id: 1, email: 'c1@example.com', points_balance: 0 },
    });
  });
  const row = await t.db.kysely
    .selectFrom('events')
    .select('public_id')
    .where('account_id', '=', a.accountId)
    .executeTakeFirstOrThrow();
  seeded = row.public_id;
};

describeAuthSuite('GET /v1/events', {
  request: () => ({ method: 'GET', url: URL }),
  scope: 'event:read',
  successStatus: 200,
  seed,
  expectIsolated: (response) => {
    expect(response.statusCode).toBe(200);
    expect(response.json().events).toEqual([]);
  },
});

describeAuthSuite('GET /v1/events/{id}', {
  request: () => ({ method: 'GET', url: `${URL}/${seeded}` }),
  scope: 'event:read',
  successStatus: 200,
  seed,
  expectIsolated: (response) => {
    expectError(response, 'not_found');
  },
});
