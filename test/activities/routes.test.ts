import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Activity } from '../../src/activities/schemas.js';
import type { Customer } from '../../src/customers/schemas.js';
import { bearer, createTenant, createTestApp, type Tenant, type TestApp } from '../helpers/app.js';
import { expectError } from '../helpers/contract.js';
import { engineState, fixedRule, program, unbalancedCustomers, variableRule } from '../helpers/engine.js';

const URL = '/v1/activities';

let t: TestApp;
let a: Tenant;

beforeEach(async () => {
  t = await createTestApp();
  a = await createTenant(t.services);
});
afterEach(async () => t.close());

const post = (activity: unknown, key = a.apiKey) =>
  t.app.inject({ method: 'POST', url: URL, headers: bearer(key), payload: { activity } });

async function record(activity: Record<string, unknown>, status: 200 | 201 = 201): Promise<Activity> {
  const response = await post(activity);
  expect(response.statusCode, response.body).toBe(status);
  return response.json<{ activity: Activity }>().activity;
}

async function customer(id: number, key = a.apiKey): Promise<Customer> {
  const response = await t.app.inject({ method: 'GET', url: `/v1/customers/${id}`, headers: bearer(key) });
  expect(response.statusCode, response.body).toBe(200);
  return response.json<{ customer: Customer }>().customer;
}

const credited = (activity: Activity) => activity.points_transactions.map((p) => p.points_change);

describe('POST /v1/activities: recording and crediting', () => {
  it('records the activity and credits a fixed rule: 201, the contract shape, the balance moved', async () => {
    const { token, ruleIds } = await program(t.services, a.accountId, (tk) => [fixedRule('Sign up', 100, tk)]);
    const response = await post({ token, customer_email: 'Jane@Example.com ', distinct_id: 'signup-1' });
    expect(response.statusCode, response.body).toBe(201);
    const body = response.json<{ activity: Activity }>();
    expect(Object.keys(body)).toEqual(['activity']);
    expect(Object.keys(body.activity).sort()).toEqual(
      [
        'created_at',
        'created_on_origin_at',
        'customer_id',
        'distinct_id',
        'id',
        'points_transactions',
        'properties',
        'token',
        'updated_at',
      ].sort(),
    );
    expect(body.activity).toMatchObject({ token, distinct_id: 'signup-1', properties: {}, created_on_origin_at: null });
    expect(body.activity.points_transactions).toEqual([
      {
        id: expect.any(Number),
        customer_id: body.activity.customer_id,
        points_change: 100,
        description: 'Sign up',
        internal_note: null,
        activity_id: body.activity.id,
        points_purchase_id: null,
        created_at: body.activity.created_at,
        updated_at: body.activity.created_at,
      },
    ]);
    expect(ruleIds).toHaveLength(1);
    const jane = await customer(body.activity.customer_id);
    expect(jane).toMatchObject({ email: 'Jane@Example.com', state: 'member', points_balance: 100 });
    expect(await unbalancedCustomers(t.db.kysely)).toEqual([]);
  });

  it('finds the customer by email as create_or_update does, or by id', async () => {
    const { token } = await program(t.services, a.accountId, (tk) => [fixedRule('Visit', 5, tk)]);
    const existing = await t.services.customers.create(a.accountId, { email: 'jane@example.com' });
    expect((await record({ token, customer_email: ' JANE@example.COM' })).customer_id).toBe(existing.id);
    expect((await record({ token, customer_id: existing.id })).customer_id).toBe(existing.id);
    expect((await customer(existing.id)).points_balance).toBe(10);
    expect(await t.services.customers.list(a.accountId)).toHaveLength(1);
  });

  it('computes variable rewards in exact decimals: 1 per 0.01 on 0.29 is 29, 1 per 1 on 25.50 is 25', async () => {
    const cents = await program(t.services, a.accountId, (tk) => [variableRule('Cents', 1, 0.01, tk)], 'cents');
    const dollars = await program(t.services, a.accountId, (tk) => [variableRule('Dollars', 1, 1, tk)], 'dollars');
    const thirds = await program(t.services, a.accountId, (tk) => [variableRule('Thirds', 0.1, 0.3, tk)], 'thirds');
    const email = 'jane@example.com';
    expect(credited(await record({ token: cents.token, customer_email: email, properties: { amount: 0.29 } }))).toEqual(
      [29],
    );
    expect(
      credited(await record({ token: cents.token, customer_email: email, properties: { amount: '0.29' } })),
    ).toEqual([29]);
    expect(
      credited(await record({ token: dollars.token, customer_email: email, properties: { amount: '25.50' } })),
    ).toEqual([25]);
    expect(
      credited(await record({ token: dollars.token, customer_email: email, properties: { amount: 25.5 } })),
    ).toEqual([25]);
    // 0.1 × 0.9 / 0.3 is 0.3: no point; 0.1 × 3 / 0.3 is 1 exactly.
    expect(credited(await record({ token: thirds.token, customer_email: email, properties: { amount: 0.9 } }))).toEqual(
      [],
    );
    expect(credited(await record({ token: thirds.token, customer_email: email, properties: { amount: 3 } }))).toEqual([
      1,
    ]);
    // 0 is a valid amount that earns nothing.
    expect(credited(await record({ token: dollars.token, customer_email: email, properties: { amount: 0 } }))).toEqual(
      [],
    );
  });

  it('evaluates every enabled bound rule in ascending id; unbound and disabled rules credit nothing', async () => {
    const type = await t.services.activityTypes.create(a.accountId, { name: 'Order' });
    await t.services.earningRules.create(a.accountId, [
      fixedRule('First', 10, type.token),
      fixedRule('Unbound', 1000, null),
      fixedRule('Disabled', 2000, type.token, { enabled: false }),
      variableRule('Second', 2, 1, type.token),
    ]);
    const activity = await record({
      token: type.token,
      customer_email: 'a@example.com',
      properties: { amount: '7.99' },
    });
    expect(activity.points_transactions.map((p) => [p.description, p.points_change])).toEqual([
      ['First', 10],
      ['Second', 15],
    ]);
    const ids = activity.points_transactions.map((p) => p.id);
    expect(ids).toEqual([...ids].sort((x, y) => x - y));
  });

  it('is idempotent on token and distinct_id: 200 with the first activity, unchanged, credited once', async () => {
    const { token } = await program(t.services, a.accountId, (tk) => [variableRule('Order', 1, 1, tk)]);
    const first = await record({
      token,
      customer_email: 'a@example.com',
      distinct_id: 'o-1',
      properties: { amount: 10 },
    });
    const again = await record(
      { token, customer_email: 'b@example.com', distinct_id: 'o-1', properties: { amount: 999 } },
      200,
    );
    expect(again).toEqual(first);
    expect(await t.services.customers.list(a.accountId)).toHaveLength(1); // b@ was not created
    expect((await customer(first.customer_id)).points_balance).toBe(10);
    // Another token may reuse the distinct_id; no distinct_id never deduplicates.
    const other = await program(t.services, a.accountId, (tk) => [fixedRule('Review', 3, tk)], 'review');
    expect((await record({ token: other.token, customer_id: first.customer_id, distinct_id: 'o-1' })).id).not.toBe(
      first.id,
    );
    await record({ token: other.token, customer_id: first.customer_id });
    await record({ token: other.token, customer_id: first.customer_id });
    expect((await customer(first.customer_id)).points_balance).toBe(19);
  });

  it('records activities of customers who are not members without crediting them', async () => {
    const { token } = await program(t.services, a.accountId, (tk) => [fixedRule('Visit', 5, tk)]);
    const jane = await t.services.customers.create(a.accountId, { email: 'jane@example.com' });
    for (const state of ['candidate', 'disabled'] as const) {
      await t.services.customers.setState(jane.id, state);
      const activity = await record({ token, customer_id: jane.id });
      expect(activity.points_transactions).toEqual([]);
    }
    await t.services.customers.setState(jane.id, 'member');
    expect(credited(await record({ token, customer_id: jane.id }))).toEqual([5]);
    expect((await customer(jane.id)).points_balance).toBe(5);
  });

  it('applies VIP restrictions with the tier the customer had before the activity', async () => {
    const silver = await t.services.vipTiers.create(a.accountId, { name: 'Silver', milestone: 100 });
    const { token } = await program(t.services, a.accountId, (tk) => [
      fixedRule('Base', 100, tk),
      fixedRule('Silver bonus', 7, tk, { restricted_to_vip_tier_ids: [silver.id] }),
    ]);
    const first = await record({ token, customer_email: 'a@example.com' });
    // Base lifts her to Silver, but the bonus looks at her tier before this activity: none.
    expect(credited(first)).toEqual([100]);
    expect((await customer(first.customer_id)).vip_tier_id).toBe(silver.id);
    expect(credited(await record({ token, customer_id: first.customer_id }))).toEqual([100, 7]);
  });

  it('stops at a lifetime limit', async () => {
    const { token } = await program(t.services, a.accountId, (tk) => [
      fixedRule('Review', 25, tk, { earning_limit: { max: 2, type: 'lifetime' } }),
    ]);
    const results = [];
    for (let i = 0; i < 4; i++) results.push(credited(await record({ token, customer_email: 'a@example.com' })));
    expect(results).toEqual([[25], [25], [], []]);
  });

  it('counts a rolling limit by the activity times, a month back being a calendar month', async () => {
    const { token } = await program(t.services, a.accountId, (tk) => [
      fixedRule('Monthly', 10, tk, {
        earning_limit: { max: 1, type: 'rolling', rolling: { unit: 'month', unit_count: 1 } },
      }),
    ]);
    const at = async (time: string) =>
      credited(await record({ token, customer_email: 'a@example.com', created_on_origin_at: time }));
    expect(await at('2025-01-31T12:00:00Z')).toEqual([10]);
    // Feb 28 minus a month is Jan 28: Jan 31 is inside (Jan 28 12:00, Feb 28 12:00].
    expect(await at('2025-02-28T12:00:00Z')).toEqual([]);
    // Mar 31 minus a month is Feb 28 (the last day of February): Jan 31 is outside.
    expect(await at('2025-03-31T12:00:00Z')).toEqual([10]);
    // An offset is an instant: 2025-04-30T13:00+02:00 is 11:00Z, still within a month of Mar 31 12:00Z.
    expect(await at('2025-04-30T13:00:00+02:00')).toEqual([]);
    const activity = await record({
      token,
      customer_email: 'a@example.com',
      created_on_origin_at: '2025-01-31T12:00:00+00:00',
    });
    expect(activity.created_on_origin_at).toBe('2025-01-31T12:00:00.000Z');
  });

  it('accepts created_on_origin_at up to 5 minutes ahead of its clock', async () => {
    const { token } = await program(t.services, a.accountId, (tk) => [fixedRule('Visit', 1, tk)]);
    const soon = new Date(t.clock.now() + 5 * 60 * 1000).toISOString();
    expect(credited(await record({ token, customer_email: 'a@example.com', created_on_origin_at: soon }))).toEqual([1]);
  });
});

describe('POST /v1/activities: every refusal writes nothing', () => {
  let token: string;
  let janeId: number;
  let otherCustomerId: number;
  let otherToken: string;

  beforeEach(async () => {
    ({ token } = await program(t.services, a.accountId, (tk) => [variableRule('Order', 1000, 0.0001, tk)]));
    janeId = (await t.services.customers.create(a.accountId, { email: 'jane@example.com' })).id;
    const b = await createTenant(t.services, 'Shop B');
    otherCustomerId = (await t.services.customers.create(b.accountId, { email: 'bob@example.com' })).id;
    otherToken = (await program(t.services, b.accountId, (tk) => [fixedRule('B', 1, tk)])).token;
  });

  const valid = () => ({ token, customer_id: janeId, properties: { amount: '1.5' } });
  const future = () => new Date(t.clock.now() + 5 * 60 * 1000 + 1000).toISOString();
  let deep: Record<string, unknown> = { leaf: 1 };
  for (let i = 0; i < 5; i++) deep = { nested: deep };

  const cases: Array<[string, () => unknown, 'invalid_parameter' | 'invalid_request', string]> = [
    ['no token', () => ({ ...valid(), token: undefined }), 'invalid_parameter', 'activity.token'],
    ['an empty token', () => ({ ...valid(), token: '' }), 'invalid_parameter', 'activity.token'],
    [
      'a token of no activity type',
      () => ({ ...valid(), token: 'activity_nope' }),
      'invalid_parameter',
      'activity.token',
    ],
    ["another account's token", () => ({ ...valid(), token: otherToken }), 'invalid_parameter', 'activity.token'],
    [
      'neither customer_id nor customer_email',
      () => ({ token, properties: { amount: 1 } }),
      'invalid_parameter',
      'activity.customer_id',
    ],
    [
      'both customer_id and customer_email',
      () => ({ ...valid(), customer_email: 'x@example.com' }),
      'invalid_parameter',
      'activity.customer_email',
    ],
    [
      'a customer_id of no customer',
      () => ({ ...valid(), customer_id: 999_999 }),
      'invalid_parameter',
      'activity.customer_id',
    ],
    [
      "another account's customer",
      () => ({ ...valid(), customer_id: otherCustomerId }),
      'invalid_parameter',
      'activity.customer_id',
    ],
    [
      'a customer_id that is a string',
      () => ({ ...valid(), customer_id: String(janeId) }),
      'invalid_parameter',
      'activity.customer_id',
    ],
    ['a customer_id of 0', () => ({ ...valid(), customer_id: 0 }), 'invalid_parameter', 'activity.customer_id'],
    [
      'an email that is not one',
      () => ({ token, customer_email: 'not-an-email', properties: { amount: 1 } }),
      'invalid_parameter',
      'activity.customer_email',
    ],
    ['an empty distinct_id', () => ({ ...valid(), distinct_id: '' }), 'invalid_parameter', 'activity.distinct_id'],
    [
      'a distinct_id of 256 characters',
      () => ({ ...valid(), distinct_id: 'd'.repeat(256) }),
      'invalid_parameter',
      'activity.distinct_id',
    ],
    ['a null distinct_id', () => ({ ...valid(), distinct_id: null }), 'invalid_parameter', 'activity.distinct_id'],
    [
      'properties that are not an object',
      () => ({ ...valid(), properties: [1] }),
      'invalid_parameter',
      'activity.properties',
    ],
    [
      'properties 6 levels deep',
      () => ({ ...valid(), properties: { amount: 1, deep } }),
      'invalid_parameter',
      'activity.properties',
    ],
    [
      'properties over 16 KiB',
      () => ({ ...valid(), properties: { amount: 1, pad: 'x'.repeat(16 * 1024) } }),
      'invalid_parameter',
      'activity.properties',
    ],
    [
      'no amount for a variable rule',
      () => ({ ...valid(), properties: {} }),
      'invalid_parameter',
      'activity.properties.amount',
    ],
    [
      'no properties for a variable rule',
      () => ({ token, customer_id: janeId }),
      'invalid_parameter',
      'activity.properties.amount',
    ],
    [
      'a negative amount',
      () => ({ ...valid(), properties: { amount: -1 } }),
      'invalid_parameter',
      'activity.properties.amount',
    ],
    [
      'a negative amount string',
      () => ({ ...valid(), properties: { amount: '-0.5' } }),
      'invalid_parameter',
      'activity.properties.amount',
    ],
    [
      '5 decimal places',
      () => ({ ...valid(), properties: { amount: 1.00001 } }),
      'invalid_parameter',
      'activity.properties.amount',
    ],
    [
      '5 decimal places in a string',
      () => ({ ...valid(), properties: { amount: '0.00001' } }),
      'invalid_parameter',
      'activity.properties.amount',
    ],
    [
      'an amount over 10,000,000,000',
      () => ({ ...valid(), properties: { amount: 10_000_000_000.5 } }),
      'invalid_parameter',
      'activity.properties.amount',
    ],
    [
      'an amount that is not a number',
      () => ({ ...valid(), properties: { amount: 'ten' } }),
      'invalid_parameter',
      'activity.properties.amount',
    ],
    [
      'an amount in exponent form',
      () => ({ ...valid(), properties: { amount: '1e3' } }),
      'invalid_parameter',
      'activity.properties.amount',
    ],
    [
      'an amount that is an object',
      () => ({ ...valid(), properties: { amount: { value: 1 } } }),
      'invalid_parameter',
      'activity.properties.amount',
    ],
    [
      'an amount that is null',
      () => ({ ...valid(), properties: { amount: null } }),
      'invalid_parameter',
      'activity.properties.amount',
    ],
    [
      'a credit over 1,000,000,000 points',
      () => ({ ...valid(), properties: { amount: 100.0001 } }),
      'invalid_parameter',
      'activity.properties.amount',
    ],
    [
      'created_on_origin_at over 5 minutes ahead',
      () => ({ ...valid(), created_on_origin_at: future() }),
      'invalid_parameter',
      'activity.created_on_origin_at',
    ],
    [
      'created_on_origin_at without an offset',
      () => ({ ...valid(), created_on_origin_at: '2025-01-01T00:00:00' }),
      'invalid_parameter',
      'activity.created_on_origin_at',
    ],
    [
      'created_on_origin_at that is a date',
      () => ({ ...valid(), created_on_origin_at: '2025-01-01' }),
      'invalid_parameter',
      'activity.created_on_origin_at',
    ],
    ['an unknown field', () => ({ ...valid(), points: 5 }), 'invalid_parameter', 'activity.points'],
  ];

  for (const [title, activity, code, field] of cases) {
    it(`refuses ${title}: ${code} naming ${field}`, async () => {
      const before = await engineState(t.db.kysely);
      const error = expectError(await post(activity()), code);
      expect(error.details?.map((d: { field: string }) => d.field)).toContain(field);
      expect(await engineState(t.db.kysely)).toEqual(before);
    });
  }

  it('refuses bodies of the wrong shape as invalid_request', async () => {
    const before = await engineState(t.db.kysely);
    for (const payload of [{}, { activity: 'x' }, { activity: valid(), extra: 1 }, []]) {
      const response = await t.app.inject({ method: 'POST', url: URL, headers: bearer(a.apiKey), payload });
      expectError(response, 'invalid_request');
    }
    expect(await engineState(t.db.kysely)).toEqual(before);
  });

  it('accepts the largest values of every bound', async () => {
    const response = await post({
      ...valid(),
      distinct_id: 'd'.repeat(255),
      properties: { amount: '100', note: 'x'.repeat(1000) },
      created_on_origin_at: new Date(t.clock.now() + 5 * 60 * 1000).toISOString(),
    });
    expect(response.statusCode, response.body).toBe(201);
    expect(credited(response.json<{ activity: Activity }>().activity)).toEqual([1_000_000_000]);
  });
});
