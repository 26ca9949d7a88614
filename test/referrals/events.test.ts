import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Event } from '../../src/events/schemas.js';
import type { Referral } from '../../src/referrals/schemas.js';
import { bearer, createTenant, createTestApp, type Tenant, type TestApp } from '../helpers/app.js';
import { type Member, member, order, pointsReward, read, referred, runningProgram } from './program.js';

// The referral's events in the feed (../shared/referrals-contract.md, "Events"): referral.created
// and referral.completed with the referral as data, beside the reward_fulfillment.created or
// points_transaction.created of the rewards they issue. (The exact sequence of every change's
// events is test/events/catalog.test.ts's.)

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
  token = await runningProgram(t, a.accountId);
  jane = await member(t, a.accountId, 'jane@example.com');
  t.clock.advance(60_000);
});

/** The account's events of these types, oldest first. */
const feed = async (types: string, tenant = a): Promise<Event[]> =>
  (await read(t, tenant, `/v1/events?type=${types}`)).events.reverse();
const show = async (id: number): Promise<Referral> => (await read(t, a, `/v1/referrals/${id}`)).referral;

describe('referral events', () => {
  it('with reward codes: referral.created and referral.completed, each beside its reward_fulfillment.created', async () => {
    const made = await referred(t, a, { referral_code: jane.code, receiver_customer_email: 'friend@example.com' });
    const createdAt = new Date(t.clock.now()).toISOString();
    expect(await feed('referral.created,referral.completed')).toEqual([
      {
        id: expect.any(String),
        type: 'referral.created',
        account_id: a.accountId,
        created_at: createdAt,
        data: { referral: made },
      },
    ]);
    t.clock.advance(60_000);
    await order(t, a, token, 'friend@example.com', { amount: 1 });
    const completed = await show(made.id);
    expect(completed.status).toBe('completed');
    const events = await feed('referral.created,referral.completed,reward_fulfillment.created');
    expect(events.map((e) => [e.type, e.data])).toEqual([
      ['reward_fulfillment.created', { reward_fulfillment: made.receiver_reward_fulfillment }],
      ['referral.created', { referral: made }],
      ['reward_fulfillment.created', { reward_fulfillment: completed.sender_reward_fulfillment }],
      ['referral.completed', { referral: completed }],
    ]);
    expect(events[3]!.created_at).toBe(completed.completed_at);
    // Once: a second qualifying order writes no referral event.
    await order(t, a, token, 'friend@example.com', { amount: 1 });
    expect(await feed('referral.created,referral.completed,reward_fulfillment.created')).toHaveLength(4);
  });

  it('with points: referral.created and referral.completed, each beside its points_transaction.created', async () => {
    await runningProgram(t, a.accountId, {
      sender_reward: pointsReward('sender_reward', 300),
      receiver_reward: pointsReward('receiver_reward', 100),
    });
    const made = await referred(t, a, { sender_customer_id: jane.id, receiver_customer_email: 'friend@example.com' });
    await order(t, a, token, 'friend@example.com');
    const completed = await show(made.id);
    const transaction = async (id: number | null) =>
      (await read(t, a, `/v1/points_transactions/${id}`)).points_transaction;
    const events = await feed(
      'referral.created,referral.completed,points_transaction.created,reward_fulfillment.created',
    );
    expect(events.map((e) => e.type)).toEqual([
      'points_transaction.created',
      'referral.created',
      'points_transaction.created',
      'referral.completed',
    ]);
    expect(events[0]!.data).toMatchObject({
      points_transaction: await transaction(made.receiver_points_transaction_id),
      customer: { id: made.receiver_customer!.id, points_balance: 100 },
    });
    expect(events[1]!.data).toEqual({ referral: made });
    expect(events[2]!.data).toMatchObject({
      points_transaction: await transaction(completed.sender_points_transaction_id),
      customer: { id: jane.id, points_balance: 300 },
    });
    expect(events[3]!.data).toEqual({ referral: completed });
  });

  it('shows them only to a credential that can read referrals, and to their own account', async () => {
    await referred(t, a, { referral_code: jane.code, receiver_customer_email: 'friend@example.com' });
    const eventsOnly = (await t.services.auth.createApiKey(a.accountId, ['event:read'])).key;
    const withReferrals = (await t.services.auth.createApiKey(a.accountId, ['event:read', 'referral:read'])).key;
    const types = async (key: string) =>
      (await t.app.inject({ method: 'GET', url: '/v1/events?type=referral.created', headers: bearer(key) }))
        .json()
        .events.map((e: Event) => e.type);
    expect(await types(eventsOnly)).toEqual([]);
    expect(await types(withReferrals)).toEqual(['referral.created']);
    const b = await createTenant(t.services, 'Shop B');
    expect(await feed('referral.created,referral.completed', b)).toEqual([]);
  });
});
