import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Customer } from '../../src/customers/schemas.js';
import { bearer, createTenant, createTestApp, type Tenant, type TestApp } from '../helpers/app.js';
import { expectError } from '../helpers/contract.js';
import { fixedRule, program, unbalancedCustomers } from '../helpers/engine.js';

// Points expiry (engine-contract.md, "Points expiry"), on the service's clock: the setting, the
// customer's points_expire_at, the reminder 14 days before (once per idle stretch), the expiry of
// the whole balance (once, as one points transaction), and no expiry for a customer active since.

const DAY = 86_400_000;
const DAYS = 90;

let t: TestApp;
let a: Tenant;
let jane: number;
let token: string;

const api = (method: 'GET' | 'POST', url: string, payload?: object) =>
  t.app.inject({ method, url, headers: bearer(a.apiKey), ...(payload ? { payload } : {}) });
const customer = async (id = jane): Promise<Customer> => (await api('GET', `/v1/customers/${id}`)).json().customer;
const give = (points: number, id = jane) =>
  t.services.pointsTransactions.adjust(a.accountId, { customer_id: id, points_change: points });
const expiries = async (id = jane) =>
  t.db.kysely
    .selectFrom('points_transactions')
    .select(['points_change', 'created_at'])
    .where('customer_id', '=', id)
    .where('description', '=', 'Points expired')
    .execute();
const reminders = async () =>
  (
    await t.db.kysely
      .selectFrom('events')
      .select(['data', 'created_at'])
      .where('type', '=', 'customer.points_expiring')
      .orderBy('id')
      .execute()
  ).map((row) => ({ customer: JSON.parse(row.data).customer as Customer, at: Number(row.created_at) }));
const pass = () => t.services.pointsExpiry.runOnce();

beforeEach(async () => {
  t = await createTestApp();
  a = await createTenant(t.services);
  jane = (await t.services.customers.create(a.accountId, { email: 'jane@example.com' })).id;
  ({ token } = await program(t.services, a.accountId, (tk) => [fixedRule('Order', 10, tk)]));
});
afterEach(async () => t.close());

describe('points_expiry in the points settings', () => {
  it('is null by default, set and cleared, and refused outside 30–1,825 days', async () => {
    expect((await api('GET', '/v1/points_settings')).json().points_settings).toEqual({
      points_label: { one: 'Point', other: 'Points' },
      points_expiry: null,
    });
    await t.services.pointsSettings.set(a.accountId, { points_expiry: { inactivity_days: DAYS } });
    expect((await api('GET', '/v1/points_settings')).json().points_settings).toEqual({
      points_label: { one: 'Point', other: 'Points' },
      points_expiry: { inactivity_days: DAYS },
    });
    // Labels changed alone leave the expiry as it was.
    await t.services.pointsSettings.set(a.accountId, { points_label: { one: 'Coin', other: 'Coins' } });
    expect((await t.services.pointsSettings.get(a.accountId)).points_expiry).toEqual({ inactivity_days: DAYS });
    for (const days of [29, 1826, 45.5, '90']) {
      await expect(
        t.services.pointsSettings.set(a.accountId, { points_expiry: { inactivity_days: days } }),
      ).rejects.toMatchObject({ code: 'invalid_parameter' });
    }
    await t.services.pointsSettings.set(a.accountId, { points_expiry: null });
    expect((await t.services.pointsSettings.get(a.accountId)).points_expiry).toBeNull();
  });
});

describe('a customer’s points_expire_at', () => {
  it('is null without expiry or without points, else the last activity plus the days', async () => {
    expect((await customer()).points_expire_at).toBeNull();
    await give(100);
    expect((await customer()).points_expire_at).toBeNull();
    await t.services.pointsSettings.set(a.accountId, { points_expiry: { inactivity_days: DAYS } });
    const credited = t.clock.now();
    expect((await customer()).points_expire_at).toBe(new Date(credited + DAYS * DAY).toISOString());

    // An activity (even one crediting nothing: a disabled rule's) moves it.
    t.clock.advance(10 * DAY);
    const answer = await api('POST', '/v1/activities', { activity: { token, customer_id: jane } });
    expect(answer.statusCode).toBe(201);
    const shown = answer.json().activity.points_transactions[0];
    expect(shown.points_change).toBe(10);
    expect((await customer()).points_expire_at).toBe(new Date(t.clock.now() + DAYS * DAY).toISOString());
    await give(-110);
    expect((await customer()).points_expire_at).toBeNull();
  });
});

describe('the expiring pass', () => {
  beforeEach(async () => {
    await t.services.pointsSettings.set(a.accountId, { points_expiry: { inactivity_days: DAYS } });
  });

  it('reminds once 14 days before, then expires the whole balance once', async () => {
    await give(250);
    const start = t.clock.now();
    t.clock.advance((DAYS - 14) * DAY - 1);
    expect(await pass()).toEqual({ expired: 0, reminded: 0 });
    t.clock.advance(1);
    expect(await pass()).toEqual({ expired: 0, reminded: 1 });
    expect(await pass()).toEqual({ expired: 0, reminded: 0 });
    const [reminder] = await reminders();
    expect(reminder!.customer).toMatchObject({
      id: jane,
      points_balance: 250,
      points_expire_at: new Date(start + DAYS * DAY).toISOString(),
    });

    t.clock.advance(14 * DAY - 1);
    expect(await pass()).toEqual({ expired: 0, reminded: 0 });
    t.clock.advance(1);
    expect(await pass()).toEqual({ expired: 1, reminded: 0 });
    expect(await pass()).toEqual({ expired: 0, reminded: 0 });
    expect(await expiries()).toEqual([{ points_change: -250, created_at: t.clock.now() }]);
    expect(await customer()).toMatchObject({ points_balance: 0, points_expire_at: null });
    expect(await unbalancedCustomers(t.db.kysely)).toEqual([]);
    // The expiry's event, with the customer after it.
    const last = await t.db.kysely
      .selectFrom('events')
      .select(['type', 'data'])
      .orderBy('id', 'desc')
      .executeTakeFirst();
    expect(last?.type).toBe('points_transaction.created');
    expect(JSON.parse(last!.data).customer).toMatchObject({ points_balance: 0, points_expire_at: null });
  });

  it('leaves a customer active since alone, and reminds them again for a new idle stretch', async () => {
    await give(100);
    t.clock.advance((DAYS - 14) * DAY);
    expect(await pass()).toEqual({ expired: 0, reminded: 1 });
    t.clock.advance(13 * DAY);
    expect((await api('POST', '/v1/activities', { activity: { token, customer_id: jane } })).statusCode).toBe(201);
    t.clock.advance(DAY);
    expect(await pass()).toEqual({ expired: 0, reminded: 0 });
    expect(await expiries()).toEqual([]);
    t.clock.advance((DAYS - 14 - 1) * DAY);
    expect(await pass()).toEqual({ expired: 0, reminded: 1 });
    t.clock.advance(14 * DAY);
    expect(await pass()).toEqual({ expired: 1, reminded: 0 });
    expect(await expiries()).toEqual([{ points_change: -110, created_at: t.clock.now() }]);
  });

  it('follows the setting as it changes: a longer period reminds again of the new date, none expires nothing', async () => {
    await give(100);
    t.clock.advance((DAYS - 14) * DAY);
    expect(await pass()).toEqual({ expired: 0, reminded: 1 });
    await t.services.pointsSettings.set(a.accountId, { points_expiry: { inactivity_days: DAYS + 30 } });
    t.clock.advance(14 * DAY);
    expect(await pass()).toEqual({ expired: 0, reminded: 0 });
    t.clock.advance(16 * DAY);
    expect(await pass()).toEqual({ expired: 0, reminded: 1 });
    const [, second] = await reminders();
    expect(second!.customer.points_expire_at).toBe(new Date(t.clock.now() + 14 * DAY).toISOString());
    await t.services.pointsSettings.set(a.accountId, { points_expiry: null });
    t.clock.advance(30 * DAY);
    expect(await pass()).toEqual({ expired: 0, reminded: 0 });
    expect(await customer()).toMatchObject({ points_balance: 100, points_expire_at: null });
  });

  it('expires only members, only in accounts with expiry, and a purchase after it finds nothing to spend', async () => {
    const bob = (await t.services.customers.create(a.accountId, { email: 'bob@example.com' })).id;
    await give(100);
    await give(100, bob);
    await t.services.customers.setState(bob, 'disabled');
    const b = await createTenant(t.services, 'No expiry shop');
    const sam = (await t.services.customers.create(b.accountId, { email: 'sam@example.com' })).id;
    await t.services.pointsTransactions.adjust(b.accountId, { customer_id: sam, points_change: 100 });
    t.clock.advance(DAYS * DAY);
    expect(await pass()).toEqual({ expired: 1, reminded: 0 });
    // Not a member: the balance is frozen, and shows no date.
    expect(await customer(bob)).toMatchObject({ points_balance: 100, points_expire_at: null });
    expect((await t.services.customers.get(b.accountId, sam)).points_balance).toBe(100);

    const product = (await t.services.pointsProducts.create(a.accountId, {
      exchange_type: 'fixed',
      points_price: 50,
      reward: { name: '$5 off' },
    })) as { id: number };
    const refused = await api('POST', `/v1/points_products/${product.id}/purchase`, { customer_id: jane });
    expectError(refused, 'insufficient_points');
  });
});
