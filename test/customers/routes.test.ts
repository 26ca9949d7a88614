import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Customer } from '../../src/customers/schemas.js';
import { bearer, createTenant, createTestApp, type Tenant, type TestApp } from '../helpers/app.js';
import { expectError } from '../helpers/contract.js';

let t: TestApp;
let a: Tenant;

beforeEach(async () => {
  t = await createTestApp();
  a = await createTenant(t.services);
});
afterEach(async () => t.close());

const get = (path: string, key = a.apiKey) => t.app.inject({ method: 'GET', url: path, headers: bearer(key) });
const emails = (page: { customers: Customer[] }) => page.customers.map((c) => c.email);

async function customers(n: number): Promise<number[]> {
  const ids: number[] = [];
  for (let i = 0; i < n; i++) {
    ids.push((await t.services.customers.create(a.accountId, { email: `c${i}@example.com` })).id);
    t.clock.advance(1000);
  }
  return ids;
}

describe('GET /v1/customers/{id}', () => {
  it('shows the customer with balance, state and an all-time VIP status', async () => {
    const [id] = await customers(1);
    const silver = await t.services.vipTiers.create(a.accountId, { name: 'Silver', milestone: 100 });
    const gold = await t.services.vipTiers.create(a.accountId, { name: 'Gold', milestone: 500 });
    await t.services.pointsTransactions.adjust(a.accountId, { customer_id: id!, points_change: 150 });
    await t.services.pointsTransactions.adjust(a.accountId, { customer_id: id!, points_change: -50 });
    const response = await get(`/v1/customers/${id}`);
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual({
      customer: {
        id,
        first_name: null,
        last_name: null,
        email: 'c0@example.com',
        state: 'member',
        date_of_birth: null,
        points_balance: 100,
        points_expire_at: null,
        // A member's referral URL: the server's referral base and their random code.
        referral_url: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+\/r\/[0-9A-Za-z]{12}$/),
        vip_tier_id: silver.id,
        vip_status: {
          vip_tier_id: silver.id,
          vip_tier_expires_at: null,
          progress_value: 150,
          current_vip_period_end: null,
          delta_to_retain_vip_tier: null,
          next_vip_tier_id: gold.id,
          delta_to_next_vip_tier: 350,
        },
        created_at: expect.stringMatching(/^2026-01-01T00:00:00\.000Z$/),
        updated_at: expect.any(String),
      },
    });
    // include is accepted and changes nothing.
    expect((await get(`/v1/customers/${id}?include=vip_status.vip_tier`)).body).toBe(response.body);
  });

  it("is 404 for an unknown id and another account's, and 400 for an id that is not one", async () => {
    const [id] = await customers(1);
    const b = await createTenant(t.services, 'Shop B');
    const other = await get(`/v1/customers/${id}`, b.apiKey);
    expectError(other, 'not_found');
    expect(other.body).not.toContain('c0@example.com');
    expectError(await get('/v1/customers/999999'), 'not_found');
    for (const bad of ['abc', '0', '-1', '1.5', '99999999999999999999']) {
      expectError(await get(`/v1/customers/${bad}`), 'invalid_parameter');
    }
  });
});

describe('GET /v1/customers', () => {
  it('pages id descending with cursors both ways', async () => {
    await customers(5);
    const first = (await get('/v1/customers?limit=2')).json();
    expect(emails(first)).toEqual(['c4@example.com', 'c3@example.com']);
    expect(first.metadata.previous_cursor).toBe('');
    const second = (await get(`/v1/customers?limit=2&cursor=${first.metadata.next_cursor}`)).json();
    expect(emails(second)).toEqual(['c2@example.com', 'c1@example.com']);
    const third = (await get(`/v1/customers?limit=2&cursor=${second.metadata.next_cursor}`)).json();
    expect(emails(third)).toEqual(['c0@example.com']);
    expect(third.metadata.next_cursor).toBe('');
    const back = (await get(`/v1/customers?limit=3&cursor=${third.metadata.previous_cursor}`)).json();
    expect(emails(back)).toEqual(['c3@example.com', 'c2@example.com', 'c1@example.com']);
  });

  it('filters by email (as create_or_update matches), state and updated_at_min', async () => {
    const ids = await customers(4);
    await t.services.customers.setState(ids[1]!, 'disabled');
    await t.services.customers.setState(ids[2]!, 'candidate');
    expect(emails((await get('/v1/customers?email=%20C1@EXAMPLE.com%20')).json())).toEqual(['c1@example.com']);
    expect(emails((await get('/v1/customers?email=nobody@example.com')).json())).toEqual([]);
    expect(emails((await get('/v1/customers?state=member')).json())).toEqual(['c3@example.com', 'c0@example.com']);
    expect(emails((await get('/v1/customers?state=candidate')).json())).toEqual(['c2@example.com']);
    const since = new Date(Date.UTC(2026, 0, 1) + 3000).toISOString();
    // c1 and c2 were updated by setState (at the clock's time after creating all four).
    expect(emails((await get(`/v1/customers?updated_at_min=${since}`)).json())).toEqual([
      'c3@example.com',
      'c2@example.com',
      'c1@example.com',
    ]);
    expectError(await get('/v1/customers?state=vip'), 'invalid_parameter');
    expectError(await get('/v1/customers?updated_at_min=2026-01-01'), 'invalid_parameter');
  });

  it('binds a cursor to its filters: the same cursor with other filters is invalid_cursor', async () => {
    await customers(4);
    const page = (await get('/v1/customers?limit=1&state=member')).json();
    const cursor = page.metadata.next_cursor;
    expect((await get(`/v1/customers?limit=1&state=member&cursor=${cursor}`)).statusCode).toBe(200);
    // Another limit is fine; other filters are not.
    expect((await get(`/v1/customers?limit=3&state=member&cursor=${cursor}`)).statusCode).toBe(200);
    for (const query of [
      '',
      '&state=disabled',
      '&state=member&email=c1@example.com',
      '&state=member&updated_at_min=2020-01-01T00:00:00Z',
    ]) {
      const error = expectError(await get(`/v1/customers?limit=1${query}&cursor=${cursor}`), 'invalid_cursor');
      expect(error.message).toMatch(/other filters/);
    }
    // The same filters written differently are the same filters.
    const since = (await get('/v1/customers?limit=1&updated_at_min=2020-01-01T00:00:00Z')).json().metadata.next_cursor;
    expect(
      (await get(`/v1/customers?limit=1&updated_at_min=2020-01-01T01:00:00%2B01:00&cursor=${since}`)).statusCode,
    ).toBe(200);
    // A cursor of another list is refused.
    await t.services.earningRules.create(a.accountId, [
      {
        name: 'r1',
        image_url: 'https://x.example/1.svg',
        reward: { type: 'points' },
        reward_value: { type: 'fixed', fixed: { value: 1 } },
      },
      {
        name: 'r2',
        image_url: 'https://x.example/2.svg',
        reward: { type: 'points' },
        reward_value: { type: 'fixed', fixed: { value: 1 } },
      },
    ]);
    const rulesCursor = (await get('/v1/earning_rules?limit=1')).json().metadata.next_cursor;
    expectError(await get(`/v1/customers?cursor=${rulesCursor}`), 'invalid_cursor');
  });

  it("never shows another account's customers", async () => {
    await customers(2);
    const b = await createTenant(t.services, 'Shop B');
    expect((await get('/v1/customers', b.apiKey)).json().customers).toEqual([]);
    const cursor = (await get('/v1/customers?limit=1')).json().metadata.next_cursor;
    expectError(await get(`/v1/customers?limit=1&cursor=${cursor}`, b.apiKey), 'invalid_cursor');
  });
});
