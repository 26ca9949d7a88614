import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { PointsTransaction } from '../../src/points-transactions/schemas.js';
import { bearer, createTenant, createTestApp, type Tenant, type TestApp } from '../helpers/app.js';
import { expectError } from '../helpers/contract.js';
import { engineState, unbalancedCustomers } from '../helpers/engine.js';

const URL = '/v1/points_transactions';

let t: TestApp;
let a: Tenant;
let jane: number;

beforeEach(async () => {
  t = await createTestApp();
  a = await createTenant(t.services);
  jane = (await t.services.customers.create(a.accountId, { email: 'jane@example.com' })).id;
});
afterEach(async () => t.close());

const post = (transaction: unknown, headers: Record<string, string> = {}, key = a.apiKey) =>
  t.app.inject({
    method: 'POST',
    url: URL,
    headers: { ...bearer(key), ...headers },
    payload: { points_transaction: transaction },
  });

const get = (path: string, key = a.apiKey) => t.app.inject({ method: 'GET', url: path, headers: bearer(key) });

async function change(points: number, extra: Record<string, unknown> = {}): Promise<PointsTransaction> {
  const response = await post({ customer_id: jane, points_change: points, ...extra });
  expect(response.statusCode, response.body).toBe(201);
  return response.json<{ points_transaction: PointsTransaction }>().points_transaction;
}

const balance = async (id = jane) => (await t.services.customers.get(a.accountId, id)).points_balance;

describe('POST /v1/points_transactions', () => {
  it('adds and removes points: 201 with the transaction, the balance is the sum of the ledger', async () => {
    const credit = await change(500, { description: 'Welcome gift', internal_note: 'Ticket #12' });
    expect(credit).toEqual({
      id: expect.any(Number),
      customer_id: jane,
      points_change: 500,
      description: 'Welcome gift',
      internal_note: 'Ticket #12',
      activity_id: null,
      points_purchase_id: null,
      created_at: new Date(t.clock.now()).toISOString(),
      updated_at: new Date(t.clock.now()).toISOString(),
    });
    const debit = await change(-200);
    expect(debit).toMatchObject({ points_change: -200, description: '', internal_note: null });
    expect(await balance()).toBe(300);
    const customer = await t.services.customers.get(a.accountId, jane);
    // Spending never lowers what was earned.
    expect(customer.vip_status.progress_value).toBe(500);
    expect(await unbalancedCustomers(t.db.kysely)).toEqual([]);
  });

  it('refuses a change below 0 with 422 insufficient_points and writes nothing', async () => {
    await change(100);
    const before = await engineState(t.db.kysely);
    const error = expectError(await post({ customer_id: jane, points_change: -101 }), 'insufficient_points');
    expect(error.message).toMatch(/100 points/);
    expect(await engineState(t.db.kysely)).toEqual(before);
    await change(-100);
    expect(await balance()).toBe(0);
  });

  it('moves the VIP tier with a positive change, never down with a negative one', async () => {
    const silver = await t.services.vipTiers.create(a.accountId, { name: 'Silver', milestone: 100 });
    await change(99);
    expect((await t.services.customers.get(a.accountId, jane)).vip_tier_id).toBeNull();
    await change(1);
    expect((await t.services.customers.get(a.accountId, jane)).vip_tier_id).toBe(silver.id);
    await change(-100);
    expect((await t.services.customers.get(a.accountId, jane)).vip_tier_id).toBe(silver.id);
  });

  const invalid: Array<[string, () => unknown, string]> = [
    ['a points_change of 0', () => ({ customer_id: jane, points_change: 0 }), 'points_transaction.points_change'],
    [
      'a fractional points_change',
      () => ({ customer_id: jane, points_change: 1.5 }),
      'points_transaction.points_change',
    ],
    [
      'a points_change over 1,000,000,000',
      () => ({ customer_id: jane, points_change: 1_000_000_001 }),
      'points_transaction.points_change',
    ],
    [
      'a points_change under -1,000,000,000',
      () => ({ customer_id: jane, points_change: -1_000_000_001 }),
      'points_transaction.points_change',
    ],
    [
      'a points_change as a string',
      () => ({ customer_id: jane, points_change: '5' }),
      'points_transaction.points_change',
    ],
    ['no points_change', () => ({ customer_id: jane }), 'points_transaction.points_change'],
    ['no customer_id', () => ({ points_change: 5 }), 'points_transaction.customer_id'],
    [
      'a customer_id of no customer',
      () => ({ customer_id: 999_999, points_change: 5 }),
      'points_transaction.customer_id',
    ],
    [
      'a description of 256 characters',
      () => ({ customer_id: jane, points_change: 5, description: 'd'.repeat(256) }),
      'points_transaction.description',
    ],
    [
      'a null description',
      () => ({ customer_id: jane, points_change: 5, description: null }),
      'points_transaction.description',
    ],
    [
      'an internal_note of 1,001 characters',
      () => ({ customer_id: jane, points_change: 5, internal_note: 'n'.repeat(1001) }),
      'points_transaction.internal_note',
    ],
    ['an unknown field', () => ({ customer_id: jane, points_change: 5, reason: 'x' }), 'points_transaction.reason'],
  ];
  for (const [title, body, field] of invalid) {
    it(`refuses ${title}: invalid_parameter naming ${field}, nothing written`, async () => {
      const before = await engineState(t.db.kysely);
      const error = expectError(await post(body()), 'invalid_parameter');
      expect(error.details.map((d: { field: string }) => d.field)).toContain(field);
      expect(await engineState(t.db.kysely)).toEqual(before);
    });
  }

  it("refuses another account's customer as invalid_parameter, revealing nothing", async () => {
    const b = await createTenant(t.services, 'Shop B');
    const before = await engineState(t.db.kysely);
    const error = expectError(await post({ customer_id: jane, points_change: 5 }, {}, b.apiKey), 'invalid_parameter');
    expect(error.message).not.toContain('jane');
    expect(await engineState(t.db.kysely)).toEqual(before);
  });

  it('accepts the edges of every bound', async () => {
    await change(1_000_000_000, { description: 'd'.repeat(255), internal_note: 'n'.repeat(1000) });
    await change(-1_000_000_000);
    expect(await balance()).toBe(0);
  });
});

describe('Idempotency-Key', () => {
  it('replays the first answer for the same key and body, writing nothing', async () => {
    const key = { 'idempotency-key': 'adjust-1' };
    const first = await post({ customer_id: jane, points_change: 50 }, key);
    expect(first.statusCode).toBe(201);
    t.clock.advance(60_000);
    const before = await engineState(t.db.kysely);
    // The same body, its keys in another order.
    const again = await t.app.inject({
      method: 'POST',
      url: URL,
      headers: { ...bearer(a.apiKey), ...key, 'content-type': 'application/json' },
      payload: `{"points_transaction":{"points_change":50,"customer_id":${jane}}}`,
    });
    expect(again.statusCode).toBe(201);
    expect(again.body).toBe(first.body);
    expect(await engineState(t.db.kysely)).toEqual(before);
    expect(await balance()).toBe(50);
  });

  it('refuses the same key with another body: 409 idempotency_key_reused', async () => {
    const key = { 'idempotency-key': 'adjust-1' };
    expect((await post({ customer_id: jane, points_change: 50 }, key)).statusCode).toBe(201);
    const before = await engineState(t.db.kysely);
    expectError(await post({ customer_id: jane, points_change: 51 }, key), 'idempotency_key_reused');
    expect(await engineState(t.db.kysely)).toEqual(before);
  });

  it('keeps keys per account, and forgets them after 24 hours', async () => {
    const key = { 'idempotency-key': 'k' };
    const b = await createTenant(t.services, 'Shop B');
    const bob = (await t.services.customers.create(b.accountId, { email: 'bob@example.com' })).id;
    expect((await post({ customer_id: jane, points_change: 5 }, key)).statusCode).toBe(201);
    expect((await post({ customer_id: bob, points_change: 5 }, key, b.apiKey)).statusCode).toBe(201);
    t.clock.advance(24 * 60 * 60 * 1000 - 1);
    const replay = await post({ customer_id: jane, points_change: 5 }, key);
    expect(replay.statusCode).toBe(201);
    expect(await balance()).toBe(5);
    t.clock.advance(1);
    const fresh = await post({ customer_id: jane, points_change: 5 }, key);
    expect(fresh.statusCode).toBe(201);
    expect(fresh.body).not.toBe(replay.body);
    expect(await balance()).toBe(10);
  });

  it('keeps no answer for a refused request: a retry after the cause is fixed succeeds', async () => {
    const key = { 'idempotency-key': 'spend-1' };
    expectError(await post({ customer_id: jane, points_change: -10 }, key), 'insufficient_points');
    await change(10);
    expect((await post({ customer_id: jane, points_change: -10 }, key)).statusCode).toBe(201);
    expect(await balance()).toBe(0);
  });

  it('refuses a key that is empty, too long or not printable ASCII, writing nothing', async () => {
    const before = await engineState(t.db.kysely);
    for (const value of ['', 'k'.repeat(256), 'clé', 'a\tb']) {
      const error = expectError(
        await post({ customer_id: jane, points_change: 5 }, { 'idempotency-key': value }),
        'invalid_parameter',
      );
      expect(error.details[0].field).toBe('idempotency-key');
    }
    expect(await engineState(t.db.kysely)).toEqual(before);
    expect(
      (await post({ customer_id: jane, points_change: 5 }, { 'idempotency-key': `~${'k'.repeat(253)} ` })).statusCode,
    ).toBe(201);
  });
});

describe('GET /v1/points_transactions and /v1/points_transactions/{id}', () => {
  it('lists id descending with cursors, filtered by customer and updated_at_min', async () => {
    const bob = (await t.services.customers.create(a.accountId, { email: 'bob@example.com' })).id;
    const made: PointsTransaction[] = [];
    for (let i = 1; i <= 5; i++) {
      made.push(await change(i));
      t.clock.advance(1000);
      const response = await post({ customer_id: bob, points_change: 10 * i });
      made.push(response.json().points_transaction);
      t.clock.advance(1000);
    }
    const page1 = (await get(`${URL}?limit=3&customer_id=${jane}`)).json();
    expect(page1.points_transactions.map((p: PointsTransaction) => p.points_change)).toEqual([5, 4, 3]);
    const page2 = (await get(`${URL}?limit=3&customer_id=${jane}&cursor=${page1.metadata.next_cursor}`)).json();
    expect(page2.points_transactions.map((p: PointsTransaction) => p.points_change)).toEqual([2, 1]);
    expect(page2.metadata.next_cursor).toBe('');
    const back = (await get(`${URL}?limit=3&customer_id=${jane}&cursor=${page2.metadata.previous_cursor}`)).json();
    expect(back.points_transactions.map((p: PointsTransaction) => p.points_change)).toEqual([5, 4, 3]);

    // A cursor is bound to its filters.
    expectError(await get(`${URL}?limit=3&cursor=${page1.metadata.next_cursor}`), 'invalid_cursor');
    expectError(await get(`${URL}?limit=3&customer_id=${bob}&cursor=${page1.metadata.next_cursor}`), 'invalid_cursor');

    const since = made[6]!.updated_at;
    const recent = (await get(`${URL}?updated_at_min=${since}`)).json();
    expect(recent.points_transactions.map((p: PointsTransaction) => p.id)).toEqual(
      made
        .slice(6)
        .map((p) => p.id)
        .reverse(),
    );
    expectError(await get(`${URL}?updated_at_min=yesterday`), 'invalid_parameter');
    expectError(await get(`${URL}?limit=0`), 'invalid_parameter');
  });

  it("reads one transaction; another account's id is 404 and reveals nothing", async () => {
    const made = await change(7, { internal_note: 'secret' });
    const one = await get(`${URL}/${made.id}`);
    expect(one.statusCode).toBe(200);
    expect(one.json()).toEqual({ points_transaction: made });
    const b = await createTenant(t.services, 'Shop B');
    const other = await get(`${URL}/${made.id}`, b.apiKey);
    const error = expectError(other, 'not_found');
    expect(other.body).not.toContain('secret');
    expect(error.message).not.toContain('7');
    expectError(await get(`${URL}/999999`), 'not_found');
    expectError(await get(`${URL}/abc`), 'invalid_parameter');
    expect((await get(`${URL}?customer_id=${jane}`, b.apiKey)).json().points_transactions).toEqual([]);
  });
});
