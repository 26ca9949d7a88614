import http from 'node:http';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../../src/storage/db.js';
import { createTestDatabaseUrl, type Tenant, type TestDatabaseUrl, testEngine } from '../helpers/app.js';
import { fixedRule, unbalancedCustomers } from '../helpers/engine.js';
import { referralSettingsFixture } from '../helpers/fixtures.js';
import { seedTenant } from '../helpers/seed.js';
import type { ServerProcess } from '../helpers/server-process.js';
import { exitWithin, NoResponse, openStore, Servers, sendJson } from './support.js';

// SIGKILL a real server process while referrals complete (referrals-contract.md, "Completion":
// "a crash leaves a completion with its reward or neither"). Two shops on one database, one whose
// rewards are codes, one whose rewards are points; many referrals pending; clients send the
// friends' orders concurrently (each friend's first order completes their referral and rewards the
// sender in the order's transaction); the server is killed mid-burst, twice, and restarted on the
// same database. Then, at the crash state: a referral is completed exactly when its friend has an
// order stored, every completed referral has exactly one sender reward (existing, the sender's,
// named by the referral, announced by one `referral.completed` event), no sender holds a reward no
// referral names. Then the orders left (and those whose answer the kill took, sent again with
// their distinct_id) complete every referral still pending, and the same holds.

const ROUNDS = 2;
/**
 * Below the server's PostgreSQL pool (10): at or above it, the pool itself runs dry (the
 * referral room reads through the pool inside a transaction), which referral-races.test.ts
 * catches; this file is about what a crash leaves.
 */
const CLIENTS = 8;
/** Acknowledged orders per round before the kill: well inside the first orders, which complete referrals. */
const ACKS_BEFORE_KILL = 30;
const SENDERS = 8;
const FRIENDS_PER_SENDER = 6;
const ORDERS_PER_FRIEND = 2;
const ORDER_POINTS = 10;
const RECEIVER_POINTS = 15;
const SENDER_POINTS = 40;

type Kind = 'code' | 'points';

interface Shop {
  kind: Kind;
  tenant: Tenant;
  order: string;
  senders: number[];
}

interface Order {
  kind: Kind;
  customerId: number;
  distinctId: string;
}

function reward(base: (typeof referralSettingsFixture)['sender_reward'], kind: Kind, points: number) {
  return kind === 'code' ? base : { ...base, fulfillment: 'points', points };
}

describe(`crash safety of referral completion: SIGKILL while friends' orders complete referrals (${testEngine})`, () => {
  const servers = new Servers();
  let database: TestDatabaseUrl;
  const shops = {} as Record<Kind, Shop>;
  let store: Db;

  const seedShop = async (kind: Kind): Promise<Shop> => {
    let order = '';
    const senders: number[] = [];
    const tenant = await seedTenant(database.url, `Referral crash shop (${kind})`, async (services, t) => {
      const type = await services.activityTypes.create(t.accountId, { name: 'Order' });
      await services.earningRules.create(t.accountId, [fixedRule('Order', ORDER_POINTS, type.token)]);
      order = type.token;
      await services.referralSettings.set(t.accountId, {
        ...referralSettingsFixture,
        sender_reward: reward(referralSettingsFixture.sender_reward, kind, SENDER_POINTS),
        receiver_reward: reward(referralSettingsFixture.receiver_reward, kind, RECEIVER_POINTS),
        qualifying_activity_token: order,
        landing_url: 'https://shop.example/welcome',
      });
      for (let i = 0; i < SENDERS; i++) {
        senders.push((await services.customers.create(t.accountId, { email: `sender-${i}@example.com` })).id);
      }
    });
    return { kind, tenant, order, senders };
  };

  beforeAll(async () => {
    database = await createTestDatabaseUrl();
    shops.code = await seedShop('code');
    shops.points = await seedShop('points');
  });
  afterAll(async () => {
    await store?.close();
    await servers.killAll();
    await database?.drop();
  });

  const referralsOf = (shop: Shop) =>
    store.kysely.selectFrom('referrals').selectAll().where('account_id', '=', shop.tenant.accountId).execute();

  /**
   * What must hold of every referral whatever the moment of the crash; returns how many are
   * completed and pending. Every finding is collected, so one failure shows them all.
   */
  async function check(shop: Shop): Promise<{ completed: number; pending: number; wrong: string[] }> {
    const wrong: string[] = [];
    const referrals = await referralsOf(shop);
    expect(referrals).toHaveLength(SENDERS * FRIENDS_PER_SENDER);
    const { rows: orders } = await sql<{ customer_id: number; n: number | string }>`
      select customer_id, count(*) as n from activities where account_id = ${shop.tenant.accountId}
      group by customer_id`.execute(store.kysely);
    const ordersOf = new Map(orders.map((row) => [Number(row.customer_id), Number(row.n)]));
    const fulfillments = await store.kysely
      .selectFrom('reward_fulfillments')
      .select(['id', 'customer_id'])
      .where('account_id', '=', shop.tenant.accountId)
      .execute();
    // The referral rewards in the ledger: the order rule's credits name their activity.
    const transactions = await store.kysely
      .selectFrom('points_transactions')
      .select(['id', 'customer_id', 'points_change'])
      .where('account_id', '=', shop.tenant.accountId)
      .where('activity_id', 'is', null)
      .execute();
    const fulfillmentOwner = new Map(fulfillments.map((f) => [f.id, f.customer_id]));
    const transactionOwner = new Map(
      transactions.map((t) => [t.id, [t.customer_id, Number(t.points_change)] as const]),
    );
    const events = await store.kysely
      .selectFrom('events')
      .select('data')
      .where('account_id', '=', shop.tenant.accountId)
      .where('type', '=', 'referral.completed')
      .execute();
    const announced = new Map<number, number>();
    for (const event of events) {
      const id = JSON.parse(event.data).referral.id as number;
      announced.set(id, (announced.get(id) ?? 0) + 1);
    }

    const named = new Set<string>();
    let completed = 0;
    for (const r of referrals) {
      const at = `${shop.kind} referral ${r.id}`;
      const friendOrders = ordersOf.get(r.receiver_customer_id) ?? 0;
      // The friend's reward, issued with the referral: exactly one, theirs.
      const receiverReward = shop.kind === 'code' ? r.receiver_reward_fulfillment_id : r.receiver_points_transaction_id;
      const receiverOwner =
        shop.kind === 'code' ? fulfillmentOwner.get(receiverReward!) : transactionOwner.get(receiverReward!)?.[0];
      if (receiverReward === null || receiverOwner !== r.receiver_customer_id)
        wrong.push(`${at}: friend's reward ${receiverReward}`);
      named.add(`${shop.kind === 'code' ? 'f' : 't'}${receiverReward}`);

      if (r.status === 'pending') {
        // An order committed without its completion would have lost the sender's reward for good.
        if (friendOrders > 0) wrong.push(`${at}: pending, but the friend has ${friendOrders} orders`);
        if (
          r.sender_reward_fulfillment_id !== null ||
          r.sender_points_transaction_id !== null ||
          r.completed_at !== null
        )
          wrong.push(`${at}: pending with a completion's fields ${JSON.stringify(r)}`);
        if (announced.has(r.id)) wrong.push(`${at}: pending, but announced completed`);
        continue;
      }
      completed++;
      if (friendOrders === 0) wrong.push(`${at}: completed without an order of the friend`);
      if (r.completed_at === null || r.sender_reward_skipped !== null) wrong.push(`${at}: ${JSON.stringify(r)}`);
      if (announced.get(r.id) !== 1) wrong.push(`${at}: ${announced.get(r.id) ?? 0} referral.completed events`);
      if (shop.kind === 'code') {
        const id = r.sender_reward_fulfillment_id;
        if (id === null || r.sender_points_transaction_id !== null || fulfillmentOwner.get(id) !== r.sender_customer_id)
          wrong.push(`${at}: sender's reward fulfillment ${id} (${id === null ? '-' : fulfillmentOwner.get(id)})`);
        named.add(`f${id}`);
      } else {
        const id = r.sender_points_transaction_id;
        const owner = id === null ? undefined : transactionOwner.get(id);
        if (
          id === null ||
          r.sender_reward_fulfillment_id !== null ||
          owner?.[0] !== r.sender_customer_id ||
          owner[1] !== SENDER_POINTS
        )
          wrong.push(`${at}: sender's points transaction ${id} (${JSON.stringify(owner)})`);
        named.add(`t${id}`);
      }
    }
    // No reward is held that no referral names: a sender rewarded twice would hold a spare.
    const held = [...fulfillments.map((f) => `f${f.id}`), ...transactions.map((t) => `t${t.id}`)];
    const spare = held.filter((reward) => !named.has(reward));
    if (spare.length > 0) wrong.push(`${shop.kind}: rewards no referral names: ${spare.join(', ')}`);
    if (held.length !== named.size) wrong.push(`${shop.kind}: ${held.length} rewards held, ${named.size} named`);
    return { completed, pending: referrals.length - completed, wrong };
  }

  it(`keeps each completion with its one sender reward across ${ROUNDS} kills`, { timeout: 180_000 }, async () => {
    const env = { DATABASE_URL: database.url, RATE_LIMIT_PER_SECOND: '0' };
    let server: ServerProcess = await servers.start(env);

    // The referrals, all pending: every sender refers FRIENDS_PER_SENDER new emails.
    const friends: Record<Kind, number[]> = { code: [], points: [] };
    for (const shop of Object.values(shops)) {
      await Promise.all(
        shop.senders.map(async (sender, s) => {
          for (let f = 0; f < FRIENDS_PER_SENDER; f++) {
            const made = await sendJson(server.url, 'POST', '/v1/referrals', shop.tenant.apiKey, {
              referral: { sender_customer_id: sender, receiver_customer_email: `friend-${s}-${f}@example.com` },
            });
            expect(made.status, made.body).toBe(201);
            friends[shop.kind].push(made.json.referral.receiver_customer.id);
          }
        }),
      );
    }

    // Every friend's first order, both shops mixed, then every friend's second order.
    const queue: Order[] = [];
    for (let n = 0; n < ORDERS_PER_FRIEND; n++) {
      const round = (['code', 'points'] as const).flatMap((kind) =>
        friends[kind].map((customerId) => ({ kind, customerId, distinctId: `order-${customerId}-${n}` })),
      );
      round.sort(() => Math.random() - 0.5);
      queue.push(...round);
    }
    const acked = new Set<string>();
    const unexpected: string[] = [];
    let inFlight: Order[] = [];

    const send = (target: ServerProcess, order: Order, agent: http.Agent | false) => {
      const shop = shops[order.kind];
      return sendJson(
        target.url,
        'POST',
        '/v1/activities',
        shop.tenant.apiKey,
        {
          activity: {
            token: shop.order,
            customer_id: order.customerId,
            distinct_id: order.distinctId,
            properties: { amount: 25 },
          },
        },
        { agent, timeoutMs: 10_000 },
      );
    };

    /** Takes orders off the queue until it is empty or the server is gone; a 503 puts one back. */
    const client = async (target: ServerProcess, agent: http.Agent) => {
      for (;;) {
        const order = queue.shift();
        if (!order) return;
        inFlight.push(order);
        try {
          const reply = await send(target, order, agent);
          inFlight = inFlight.filter((o) => o !== order);
          // 200: sent again after a kill, it had been stored; nothing more is credited.
          if (reply.status === 201 || reply.status === 200) acked.add(order.distinctId);
          else if (reply.status === 503) queue.push(order);
          else unexpected.push(`${order.distinctId}: ${reply.status} ${reply.body}`);
        } catch (error) {
          if (!(error instanceof NoResponse)) throw error;
          return; // the server is gone; this order stays in flight
        }
      }
    };

    for (let round = 0; round < ROUNDS; round++) {
      const agent = new http.Agent({ keepAlive: true, maxSockets: CLIENTS });
      const target = acked.size + ACKS_BEFORE_KILL;
      const clients = Array.from({ length: CLIENTS }, () => client(server, agent));
      while (acked.size < target && queue.length > 0) await new Promise((resolve) => setTimeout(resolve, 2));
      server.child.kill('SIGKILL');
      await Promise.all(clients);
      agent.destroy();
      expect(await exitWithin(server, 10_000)).toBeNull();
      // Orders whose answer the kill took are sent again first, with their distinct_id.
      queue.unshift(...inFlight);
      inFlight = [];
      server = await servers.start(env);
    }
    expect(unexpected).toEqual([]);

    // The crash state: the kills landed among completions.
    store = openStore(database.url);
    const crashed = { code: await check(shops.code), points: await check(shops.points) };
    expect([...crashed.code.wrong, ...crashed.points.wrong]).toEqual([]);
    expect(crashed.code.pending + crashed.points.pending).toBeGreaterThan(0);
    expect(crashed.code.completed + crashed.points.completed).toBeGreaterThan(0);
    expect(await unbalancedCustomers(store.kysely)).toEqual([]);

    // The orders left complete every referral still pending, on the restarted server.
    const agent = new http.Agent({ keepAlive: true, maxSockets: CLIENTS });
    await Promise.all(Array.from({ length: CLIENTS }, () => client(server, agent)));
    agent.destroy();
    expect(unexpected).toEqual([]);
    expect(inFlight).toEqual([]);
    expect(acked.size).toBe(2 * SENDERS * FRIENDS_PER_SENDER * ORDERS_PER_FRIEND);

    const stored = await store.kysely
      .selectFrom('activities')
      .select('distinct_id')
      .where('account_id', 'in', [shops.code.tenant.accountId, shops.points.tenant.accountId])
      .execute();
    expect(stored.map((a) => a.distinct_id).sort()).toEqual([...acked].sort());
    const done = { code: await check(shops.code), points: await check(shops.points) };
    expect([...done.code.wrong, ...done.points.wrong]).toEqual([]);
    expect(done.code.pending + done.points.pending).toBe(0);
    // Every sender of the points shop holds exactly their rewards' points, besides nothing else.
    for (const sender of shops.points.senders) {
      const row = await store.kysely
        .selectFrom('customers')
        .select('points_balance')
        .where('id', '=', sender)
        .executeTakeFirstOrThrow();
      expect(Number(row.points_balance)).toBe(FRIENDS_PER_SENDER * SENDER_POINTS);
    }
    expect(await unbalancedCustomers(store.kysely)).toEqual([]);
    if (testEngine === 'sqlite') {
      const integrity = await sql<{ integrity_check: string }>`pragma integrity_check`.execute(store.kysely);
      expect(integrity.rows).toEqual([{ integrity_check: 'ok' }]);
    }
    console.log(
      `referral crash (${testEngine}): ${ROUNDS} kills; at the crash state ` +
        `${crashed.code.completed + crashed.points.completed} completed, ` +
        `${crashed.code.pending + crashed.points.pending} pending; ${acked.size} orders acknowledged in all`,
    );
  });
});
