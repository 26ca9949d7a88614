import { sql } from 'kysely';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { PointsProduct, PointsPurchase } from '../../src/points-products/schemas.js';
import type { RewardFulfillment } from '../../src/reward-fulfillments/schemas.js';
import { bearer, createTenant, createTestApp, type Tenant, type TestApp } from '../helpers/app.js';
import { expectError } from '../helpers/contract.js';
import { engineState, rowCount, unbalancedCustomers } from '../helpers/engine.js';

// Rewards after they are issued (engine-contract.md): a code found by `?code=`, used once,
// cancelled once with its points given back, expired after its product's days; every refusal
// writing nothing; an order's discount_codes using the customer's own codes.

const DAY = 86_400_000;

let t: TestApp;
let a: Tenant;
let jane: number;
let coupon: PointsProduct;

const request = (method: 'GET' | 'POST', url: string, payload?: object, headers: Record<string, string> = {}) =>
  t.app.inject({ method, url, headers: { ...bearer(a.apiKey), ...headers }, ...(payload ? { payload } : {}) });
const use = (id: number, payload?: object, headers?: Record<string, string>) =>
  request('POST', `/v1/reward_fulfillments/${id}/use`, payload, headers);
const cancel = (id: number, headers?: Record<string, string>) =>
  request('POST', `/v1/reward_fulfillments/${id}/cancel`, undefined, headers);

async function give(points: number, customer = jane): Promise<void> {
  await t.services.pointsTransactions.adjust(a.accountId, { customer_id: customer, points_change: points });
}

async function buy(customer = jane, product = coupon): Promise<RewardFulfillment> {
  const purchase: PointsPurchase = await t.services.pointsProducts.purchase(a.accountId, product.id, {
    customer_id: customer,
  });
  return purchase.reward_fulfillment;
}

const customer = async (id = jane) => t.services.customers.get(a.accountId, id);
const updatedEvents = async () =>
  (
    await t.db.kysely
      .selectFrom('events')
      .select('data')
      .where('type', '=', 'reward_fulfillment.updated')
      .orderBy('id')
      .execute()
  ).map((row) => JSON.parse(row.data).reward_fulfillment as RewardFulfillment);
/** What a refusal must leave as it was: the engine's tables, the fulfillments and the events. */
const state = async () => ({
  ...(await engineState(t.db.kysely)),
  fulfillments: await t.db.kysely
    .selectFrom('reward_fulfillments')
    .select(['id', 'fulfillment_status', 'usage_status', 'used_at', 'updated_at'])
    .orderBy('id')
    .execute(),
  events: await rowCount(t.db.kysely, 'events'),
});

beforeEach(async () => {
  t = await createTestApp();
  a = await createTenant(t.services);
  jane = (await t.services.customers.create(a.accountId, { email: 'jane@example.com' })).id;
  coupon = (await t.services.pointsProducts.create(a.accountId, {
    exchange_type: 'fixed',
    points_price: 100,
    expires_after_days: 30,
    reward: { name: '$5 off' },
  })) as PointsProduct;
  await give(500);
});
afterEach(async () => t.close());

describe('GET /v1/reward_fulfillments?code=', () => {
  it('finds a code whatever its case, spaces and dashes, in the credential’s account only', async () => {
    const code = (await buy()).code;
    const typed = `${code.slice(0, 4).toLowerCase()}-${code.slice(4, 8)} ${code.slice(8)}`;
    const found = (await request('GET', `/v1/reward_fulfillments?code=${encodeURIComponent(typed)}`)).json();
    expect(found.reward_fulfillments.map((f: RewardFulfillment) => f.code)).toEqual([code]);

    const b = await createTenant(t.services, 'Other shop');
    const elsewhere = await t.app.inject({
      method: 'GET',
      url: `/v1/reward_fulfillments?code=${code}`,
      headers: bearer(b.apiKey),
    });
    expect(elsewhere.json().reward_fulfillments).toEqual([]);
    expect((await request('GET', '/v1/reward_fulfillments?code=NOPE')).json().reward_fulfillments).toEqual([]);
  });

  it('carries expires_at from the product’s expires_after_days; a product without it issues codes that never expire', async () => {
    const issued = await buy();
    expect(issued.expires_at).toBe(new Date(t.clock.now() + 30 * DAY).toISOString());
    const forever = (await t.services.pointsProducts.create(a.accountId, {
      exchange_type: 'fixed',
      points_price: 100,
      reward: { name: 'Free shipping' },
    })) as PointsProduct;
    expect(forever.expires_after_days).toBeNull();
    expect((await buy(jane, forever)).expires_at).toBeNull();
  });

  it('refuses expires_after_days outside 1–3,650', async () => {
    for (const days of [0, 3651, 1.5, '30']) {
      await expect(
        t.services.pointsProducts.create(a.accountId, {
          exchange_type: 'fixed',
          points_price: 1,
          expires_after_days: days,
          reward: { name: 'x' },
        }),
      ).rejects.toMatchObject({ code: 'invalid_parameter' });
    }
  });
});

describe('POST /v1/reward_fulfillments/{id}/use', () => {
  it('marks the code used once: a second use is 409 reward_already_used and writes nothing', async () => {
    const issued = await buy();
    const first = await use(issued.id);
    expect(first.statusCode).toBe(200);
    const used = first.json().reward_fulfillment;
    expect(used).toMatchObject({ id: issued.id, usage_status: 'used', fulfillment_status: 'issued' });
    expect(used.used_at).toBe(new Date(t.clock.now()).toISOString());
    expect((await updatedEvents()).map((f) => [f.id, f.usage_status])).toEqual([[issued.id, 'used']]);

    const before = await state();
    expectError(await use(issued.id), 'reward_already_used');
    expect(await state()).toEqual(before);
  });

  it('takes used_at from the body: not in the future, not before the code was issued, an instant', async () => {
    const issued = await buy();
    const before = await state();
    const future = new Date(t.clock.now() + 60_000).toISOString();
    const early = new Date(t.clock.now() - 60_000).toISOString();
    for (const body of [{ used_at: future }, { used_at: early }, { used_at: 'yesterday' }, { other: 1 }]) {
      expectError(await use(issued.id, body), 'invalid_parameter');
    }
    expect(await state()).toEqual(before);
    t.clock.advance(3_600_000);
    const at = new Date(t.clock.now() - 1_800_000).toISOString();
    expect((await use(issued.id, { used_at: at })).json().reward_fulfillment.used_at).toBe(at);
  });

  it('refuses a cancelled code (422 reward_cancelled) and an expired one (422 reward_expired), writing nothing', async () => {
    const cancelled = await buy();
    expect((await cancel(cancelled.id)).statusCode).toBe(200);
    const expiring = await buy();
    t.clock.advance(30 * DAY);
    const shown = (await request('GET', `/v1/reward_fulfillments?code=${expiring.code}`)).json();
    expect(shown.reward_fulfillments[0]).toMatchObject({ usage_status: 'expired', used_at: null });
    const listed = (await request('GET', '/v1/reward_fulfillments?usage_status=expired')).json();
    expect(listed.reward_fulfillments.map((f: RewardFulfillment) => f.id)).toEqual([expiring.id]);

    const before = await state();
    expectError(await use(cancelled.id), 'reward_cancelled');
    expectError(await use(expiring.id), 'reward_expired');
    expectError(await cancel(expiring.id), 'reward_already_used');
    expectError(await use(987_654), 'not_found');
    expect(await state()).toEqual(before);
  });

  it("is 404 for another account's fulfillment, and needs reward_fulfillment:write", async () => {
    const issued = await buy();
    const b = await createTenant(t.services, 'Other shop');
    const other = await t.app.inject({
      method: 'POST',
      url: `/v1/reward_fulfillments/${issued.id}/use`,
      headers: bearer(b.apiKey),
    });
    expectError(other, 'not_found');
    const readOnly = await t.services.auth.createApiKey(a.accountId, ['reward_fulfillment:read']);
    const refused = await t.app.inject({
      method: 'POST',
      url: `/v1/reward_fulfillments/${issued.id}/cancel`,
      headers: bearer(readOnly.key),
    });
    expectError(refused, 'insufficient_scope');
    expect((await customer()).points_balance).toBe(400);
  });

  it('replays an answer for its Idempotency-Key, and refuses the key with another body', async () => {
    const issued = await buy();
    const key = { 'idempotency-key': 'use-1' };
    const first = await use(issued.id, {}, key);
    const again = await use(issued.id, {}, key);
    expect(again.statusCode).toBe(200);
    expect(again.body).toBe(first.body);
    expectError(
      await use(issued.id, { used_at: new Date(t.clock.now()).toISOString() }, key),
      'idempotency_key_reused',
    );
    expect(await updatedEvents()).toHaveLength(1);
  });
});

describe('POST /v1/reward_fulfillments/{id}/cancel', () => {
  it('cancels an unused code once and gives its points back, not counted as earned', async () => {
    const issued = await buy();
    const earned = (
      await t.db.kysely.selectFrom('customers').select('points_earned').where('id', '=', jane).executeTakeFirstOrThrow()
    ).points_earned;
    expect((await customer()).points_balance).toBe(400);
    const answer = await cancel(issued.id);
    expect(answer.statusCode).toBe(200);
    expect(answer.json().reward_fulfillment).toMatchObject({ fulfillment_status: 'cancelled', usage_status: 'unused' });
    expect((await customer()).points_balance).toBe(500);
    const refund = await t.db.kysely
      .selectFrom('points_transactions')
      .selectAll()
      .where('customer_id', '=', jane)
      .orderBy('id', 'desc')
      .executeTakeFirstOrThrow();
    expect(refund).toMatchObject({ points_change: 100, description: 'Refund: $5 off', counts_as_earned: 0 });
    // The refund names the purchase it gives back, as the debit that paid for it does (issue 49).
    const debit = await t.db.kysely
      .selectFrom('points_transactions')
      .select('points_purchase_id')
      .where('customer_id', '=', jane)
      .where('points_change', '<', 0)
      .executeTakeFirstOrThrow();
    expect(debit.points_purchase_id).not.toBeNull();
    const shown = (await request('GET', `/v1/points_transactions/${refund.id}`)).json().points_transaction;
    expect(shown.points_purchase_id).toBe(Number(debit.points_purchase_id));
    const after = await t.db.kysely
      .selectFrom('customers')
      .select('points_earned')
      .where('id', '=', jane)
      .executeTakeFirstOrThrow();
    expect(Number(after.points_earned)).toBe(Number(earned));
    expect(await unbalancedCustomers(t.db.kysely)).toEqual([]);
    const types = await t.db.kysely.selectFrom('events').select('type').orderBy('id', 'desc').limit(2).execute();
    expect(types.map((e) => e.type).sort()).toEqual(['points_transaction.created', 'reward_fulfillment.updated']);

    const before = await state();
    expectError(await cancel(issued.id), 'reward_already_used');
    expect(await state()).toEqual(before);
  });

  it('refuses a used code with 409 reward_already_used, writing nothing', async () => {
    const issued = await buy();
    await use(issued.id);
    const before = await state();
    const refused = expectError(await cancel(issued.id), 'reward_already_used');
    expect(refused.message).toContain('was used');
    expect(await state()).toEqual(before);
    expect((await customer()).points_balance).toBe(400);
  });
});

describe('a body where the operation takes none, and an empty one', () => {
  it('refuses a body sent to cancel with 400 naming its fields, even under the first cancel’s Idempotency-Key', async () => {
    const issued = await buy();
    const key = { 'idempotency-key': 'cancel-once' };
    expect((await cancel(issued.id, key)).statusCode).toBe(200);
    const before = await state();
    const again = await request(
      'POST',
      `/v1/reward_fulfillments/${issued.id}/cancel`,
      { reason: 'changed my mind' },
      key,
    );
    const error = expectError(again, 'invalid_parameter');
    expect(error.details).toEqual([{ field: 'reason', message: 'is not a field of this operation' }]);
    expect(await state()).toEqual(before);
    // Without a key too, and on a code that could still be cancelled: nothing is written.
    const other = await buy();
    const refused = await request('POST', `/v1/reward_fulfillments/${other.id}/cancel`, { reason: 'x', note: 'y' });
    expect(expectError(refused, 'invalid_parameter').details.map((d: { field: string }) => d.field)).toEqual([
      'reason',
      'note',
    ]);
    // 500, less two codes of 100, plus the first one's points given back.
    expect((await customer()).points_balance).toBe(400);
  });

  it('reads an empty JSON body as no body: use and cancel answer as without one', async () => {
    const json = { 'content-type': 'application/json' };
    const [first, second] = [await buy(), await buy()];
    for (const payload of ['', '  ', '{}']) {
      const fresh = await buy();
      const used = await t.app.inject({
        method: 'POST',
        url: `/v1/reward_fulfillments/${fresh.id}/use`,
        headers: { ...bearer(a.apiKey), ...json },
        payload,
      });
      expect(used.statusCode, `${JSON.stringify(payload)}: ${used.body}`).toBe(200);
      expect(used.json().reward_fulfillment.usage_status).toBe('used');
    }
    for (const [id, payload] of [
      [first.id, ''],
      [second.id, '{}'],
    ] as const) {
      const cancelled = await t.app.inject({
        method: 'POST',
        url: `/v1/reward_fulfillments/${id}/cancel`,
        headers: { ...bearer(a.apiKey), ...json },
        payload,
      });
      expect(cancelled.statusCode, cancelled.body).toBe(200);
    }
  });
});

describe('an order activity’s properties.discount_codes', () => {
  it("uses the customer's own issued codes in the activity's transaction, and nothing else", async () => {
    const type = await t.services.activityTypes.create(a.accountId, { name: 'Order' });
    const mine = await buy();
    const spare = await buy();
    const bob = (await t.services.customers.create(a.accountId, { email: 'bob@example.com' })).id;
    await give(100, bob);
    const bobs = await buy(bob);
    const typed = mine.code
      .toLowerCase()
      .replace(/(.{4})/g, '$1-')
      .replace(/-$/, '');
    const answer = await t.app.inject({
      method: 'POST',
      url: '/v1/activities',
      headers: bearer(a.apiKey),
      payload: {
        activity: {
          token: type.token,
          customer_id: jane,
          distinct_id: 'order-1',
          properties: { discount_codes: [typed, bobs.code, 'SUMMER10', 42] },
        },
      },
    });
    expect(answer.statusCode).toBe(201);
    const rows = await t.db.kysely
      .selectFrom('reward_fulfillments')
      .select(['id', 'usage_status', sql<number>`used_at`.as('used_at')])
      .orderBy('id')
      .execute();
    expect(rows.map((r) => [r.id, r.usage_status])).toEqual([
      [mine.id, 'used'],
      [spare.id, 'unused'],
      [bobs.id, 'unused'],
    ]);
    expect((await updatedEvents()).map((f) => f.id)).toEqual([mine.id]);
  });
});
