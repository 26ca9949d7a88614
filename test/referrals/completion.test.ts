import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Referral } from '../../src/referrals/schemas.js';
import { createTenant, createTestApp, type Tenant, type TestApp } from '../helpers/app.js';
import { fixedRule, rowCount, unbalancedCustomers } from '../helpers/engine.js';
import {
  DAY_MS,
  type Member,
  member,
  order,
  pointsReward,
  read,
  referred,
  runningProgram,
  writtenState,
} from './program.js';

// Completion (../shared/referrals-contract.md): in the transaction of every activity, the
// receiver's pending referral completes when the activity's token qualifies, its
// properties.amount is at least minimum_amount (exactly, as decimals; missing is 0) and it comes
// before expires_at; the sender is rewarded once, if still a member. The activity earns its
// points as any does.

const FRIEND = 'friend@example.com';

let t: TestApp;
let a: Tenant;
let token: string;
let jane: Member;

beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => t.close());
beforeEach(async () => {
  a = await createTenant(t.services);
  token = await runningProgram(t, a.accountId, { minimum_amount: '20' });
  // Every order earns 10 points, referral or not.
  await t.services.earningRules.create(a.accountId, fixedRule('Order points', 10, token));
  jane = await member(t, a.accountId, 'jane@example.com');
});

const iso = (ms = t.clock.now()) => new Date(ms).toISOString();
const show = async (id: number): Promise<Referral> => (await read(t, a, `/v1/referrals/${id}`)).referral;
const balance = async (id: number) => (await t.services.customers.get(a.accountId, id)).points_balance;
const fulfillmentsOf = async (customerId: number) =>
  (await read(t, a, `/v1/reward_fulfillments?customer_id=${customerId}`)).reward_fulfillments;
const refer = () => referred(t, a, { referral_code: jane.code, receiver_customer_email: FRIEND });

describe('completion by a qualifying activity', () => {
  it('completes at an amount of at least the minimum, rewards the sender with a code once, and nothing more after', async () => {
    const made = await refer();
    const friendId = made.receiver_customer!.id;
    t.clock.advance(60_000);
    const other = (await t.services.activityTypes.create(a.accountId, { name: 'Review' })).token;
    // Below the minimum, another token, no amount (0): still pending. Each order earns its points.
    for (const [activityToken, properties] of [
      [token, { amount: '19.99' }],
      [token, { amount: 19.9999 }],
      [token, undefined],
      [token, { amount: 'twenty' }],
      [other, { amount: 100 }],
    ] as const) {
      const activity = await order(t, a, activityToken, FRIEND, properties);
      expect(activity.points_transactions.map((p: { points_change: number }) => p.points_change)).toEqual(
        activityToken === token ? [10] : [],
      );
      expect(await show(made.id), JSON.stringify(properties)).toMatchObject({
        status: 'pending',
        completed_at: null,
        updated_at: made.updated_at,
        sender_reward_fulfillment: null,
      });
    }
    expect(await fulfillmentsOf(jane.id)).toEqual([]);

    t.clock.advance(60_000);
    const qualifying = await order(t, a, token, FRIEND, { amount: '20.00' });
    expect(qualifying.points_transactions).toHaveLength(1);
    const completed = await show(made.id);
    const [reward] = await fulfillmentsOf(jane.id);
    expect(completed).toEqual({
      ...made,
      status: 'completed',
      completed_at: iso(),
      updated_at: iso(),
      // The nested customers as they are now.
      receiver_customer: expect.objectContaining({ id: friendId, points_balance: 50 }),
      sender_customer: expect.objectContaining({ id: jane.id, points_balance: 0 }),
      sender_reward_fulfillment: reward,
    });
    expect(reward).toMatchObject({
      name: '$5 off coupon',
      customer_id: jane.id,
      fulfillment_status: 'issued',
      image_url: 'https://cdn.example/sender.png',
      created_at: iso(),
    });
    expect(await balance(friendId)).toBe(50);

    // A second qualifying order, later: nothing more for the sender; the order earns its points.
    t.clock.advance(60_000);
    const before = await writtenState(t);
    const again = await order(t, a, token, FRIEND, { amount: 500 });
    expect(again.points_transactions).toHaveLength(1);
    expect(await show(made.id)).toEqual({
      ...completed,
      receiver_customer: expect.objectContaining({ points_balance: 60 }),
    });
    expect(await fulfillmentsOf(jane.id)).toEqual([reward]);
    expect(await writtenState(t)).toMatchObject({
      reward_fulfillments: before.reward_fulfillments,
      referrals: before.referrals,
      activities: (before.activities as number) + 1,
    });
    expect(await unbalancedCustomers(t.db.kysely)).toEqual([]);
  });

  it('rewards the sender with points when the reward is points: a ledger entry named after the reward', async () => {
    await runningProgram(t, a.accountId, {
      minimum_amount: '20',
      sender_reward: pointsReward('sender_reward', 500),
    });
    const made = await refer();
    const before = await rowCount(t.db.kysely, 'reward_fulfillments');
    await order(t, a, token, FRIEND, { amount: 20 });
    const completed = await show(made.id);
    expect(completed).toMatchObject({
      status: 'completed',
      sender_reward_fulfillment: null,
      sender_points_transaction_id: expect.any(Number),
      sender_customer: { id: jane.id, points_balance: 500 },
    });
    const { points_transaction } = await read(
      t,
      a,
      `/v1/points_transactions/${completed.sender_points_transaction_id}`,
    );
    expect(points_transaction).toMatchObject({
      customer_id: jane.id,
      points_change: 500,
      description: '$5 off coupon',
      activity_id: null,
      points_purchase_id: null,
    });
    await order(t, a, token, FRIEND, { amount: 20 });
    expect(await balance(jane.id)).toBe(500);
    expect(await rowCount(t.db.kysely, 'reward_fulfillments')).toBe(before);
    expect(await unbalancedCustomers(t.db.kysely)).toEqual([]);
  });

  it('compares amounts exactly as decimals, and counts a missing amount as 0', async () => {
    const cases: Array<[string, Record<string, unknown> | undefined, boolean]> = [
      ['0', undefined, true],
      ['0', { amount: 0 }, true],
      ['0.01', undefined, false],
      ['0.01', { amount: '0.01' }, true],
      ['19.99', { amount: 19.99 }, true],
      ['19.99', { amount: '19.989' }, false],
      ['0.3', { amount: 0.3 }, true],
      ['0.3', { amount: '0.2999' }, false],
      ['20', { amount: '19.99' }, false],
      ['20', { amount: 20 }, true],
      ['20', { amount: '20.0000' }, true],
      ['20', { note: 'no amount' }, false],
    ];
    for (const [index, [minimum, properties, completes]] of cases.entries()) {
      await runningProgram(t, a.accountId, { minimum_amount: minimum });
      const email = `friend-${index}@example.com`;
      const made = await referred(t, a, { sender_customer_id: jane.id, receiver_customer_email: email });
      await order(t, a, token, email, properties);
      expect((await show(made.id)).status, `${JSON.stringify(properties)} against ${minimum}`).toBe(
        completes ? 'completed' : 'pending',
      );
    }
  });

  it('completes only the referral of the activity’s customer, found by email or by id', async () => {
    const made = await refer();
    const other = await referred(t, a, { referral_code: jane.code, receiver_customer_email: 'other@example.com' });
    await order(t, a, token, 'stranger@example.com', { amount: 50 });
    expect((await show(made.id)).status).toBe('pending');
    const byId = await t.app.inject({
      method: 'POST',
      url: '/v1/activities',
      headers: { authorization: `Bearer ${a.apiKey}` },
      payload: { activity: { token, customer_id: made.receiver_customer!.id, properties: { amount: 50 } } },
    });
    expect(byId.statusCode, byId.body).toBe(201);
    expect((await show(made.id)).status).toBe('completed');
    expect((await show(other.id)).status).toBe('pending');
    expect(await fulfillmentsOf(jane.id)).toHaveLength(1);
  });

  it('completes without a sender reward when the sender is no longer a member', async () => {
    for (const [state, email] of [
      ['disabled', 'friend-1@example.com'],
      ['candidate', 'friend-2@example.com'],
    ] as const) {
      await t.services.customers.setState(jane.id, 'member');
      await runningProgram(t, a.accountId, {
        minimum_amount: '20',
        ...(state === 'candidate' ? { sender_reward: pointsReward('sender_reward', 100) } : {}),
      });
      const made = await referred(t, a, { referral_code: jane.code, receiver_customer_email: email });
      await t.services.customers.setState(jane.id, state);
      const before = await writtenState(t);
      const activity = await order(t, a, token, email, { amount: 25 });
      expect(activity.points_transactions).toHaveLength(1);
      const completed = await show(made.id);
      expect(completed).toMatchObject({
        status: 'completed',
        completed_at: iso(),
        sender_reward_fulfillment: null,
        sender_points_transaction_id: null,
        sender_customer: { id: jane.id, state, points_balance: 0 },
      });
      expect(await t.services.referrals.skippedReason(a.accountId, made.id)).toBe('sender_not_member');
      expect(await writtenState(t)).toMatchObject({
        reward_fulfillments: before.reward_fulfillments,
        points_transactions: (before.points_transactions as number) + 1,
      });
    }
    expect(await fulfillmentsOf(jane.id)).toEqual([]);
  });
});

describe('the window’s start: the referral’s creation', () => {
  it('never completes with an order dated before the referral was made; the order still earns (issue 49)', async () => {
    const made = await refer();
    t.clock.advance(60_000);
    const before = await writtenState(t);
    const backdated = await order(
      t,
      a,
      token,
      FRIEND,
      { amount: 100 },
      { created_on_origin_at: '2020-01-01T00:00:00Z' },
    );
    expect(backdated.points_transactions.map((p: { points_change: number }) => p.points_change)).toEqual([10]);
    expect(await show(made.id)).toEqual({
      ...made,
      receiver_customer: expect.objectContaining({ points_balance: 10 }),
    });
    expect(await fulfillmentsOf(jane.id)).toEqual([]);
    expect(await writtenState(t)).toMatchObject({
      reward_fulfillments: before.reward_fulfillments,
      referrals: before.referrals,
      activities: (before.activities as number) + 1,
    });

    // 1 ms before the referral was made: still pending; at its creation: the window is open.
    const createdAt = Date.parse(made.created_at);
    await order(t, a, token, FRIEND, { amount: 100 }, { created_on_origin_at: iso(createdAt - 1) });
    expect((await show(made.id)).status).toBe('pending');
    await order(t, a, token, FRIEND, { amount: 100 }, { created_on_origin_at: iso(createdAt) });
    expect(await show(made.id)).toMatchObject({ status: 'completed', completed_at: iso() });
    expect(await fulfillmentsOf(jane.id)).toHaveLength(1);
  });
});

describe('expiry', () => {
  it('shows a pending referral expired at expires_at; a qualifying activity then completes nothing', async () => {
    await runningProgram(t, a.accountId, { minimum_amount: '20', window_days: 10 });
    const made = await refer();
    const early = await referred(t, a, { referral_code: jane.code, receiver_customer_email: 'early@example.com' });
    // 1 ms before the end of the window: still pending, and an order completes it.
    t.clock.advance(10 * DAY_MS - 1);
    expect((await show(made.id)).status).toBe('pending');
    await order(t, a, token, 'early@example.com', { amount: 20 });
    expect((await show(early.id)).status).toBe('completed');

    t.clock.advance(1);
    const expired = await show(made.id);
    expect(expired).toEqual({ ...made, status: 'expired' });
    expect((await read(t, a, '/v1/referrals?status=expired')).referrals.map((r: Referral) => r.id)).toEqual([made.id]);
    expect((await read(t, a, '/v1/referrals?status=pending')).referrals).toEqual([]);

    const before = await writtenState(t);
    const activity = await order(t, a, token, FRIEND, { amount: 100 });
    // The order earns its points; the referral stays expired and the sender gets nothing.
    expect(activity.points_transactions).toHaveLength(1);
    expect(await show(made.id)).toEqual({
      ...expired,
      receiver_customer: expect.objectContaining({ points_balance: 10 }),
    });
    expect(await fulfillmentsOf(jane.id)).toHaveLength(1);
    expect(await writtenState(t)).toMatchObject({ reward_fulfillments: before.reward_fulfillments });
  });

  it('never completes an expired referral, even with an order dated inside its window', async () => {
    await runningProgram(t, a.accountId, { minimum_amount: '20', window_days: 10 });
    const made = await refer();
    t.clock.advance(11 * DAY_MS);
    await order(t, a, token, FRIEND, { amount: 100 }, { created_on_origin_at: iso(t.clock.now() - 5 * DAY_MS) });
    expect((await show(made.id)).status).toBe('expired');
    expect(await fulfillmentsOf(jane.id)).toEqual([]);
  });

  it('does not complete with an order dated after expires_at, reported before it', async () => {
    await runningProgram(t, a.accountId, { minimum_amount: '20', window_days: 1 });
    const made = await refer();
    t.clock.advance(DAY_MS - 60_000);
    // Dated 2 minutes ahead (within the 5 minutes allowed): after the window's end.
    await order(t, a, token, FRIEND, { amount: 100 }, { created_on_origin_at: iso(t.clock.now() + 120_000) });
    expect((await show(made.id)).status).toBe('pending');
  });
});
