import http from 'node:http';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../../src/storage/db.js';
import { createTestDatabaseUrl, type Tenant, type TestDatabaseUrl, testEngine } from '../helpers/app.js';
import { fixedRule, unbalancedCustomers } from '../helpers/engine.js';
import { referralSettingsFixture } from '../helpers/fixtures.js';
import { seedTenant, withServices } from '../helpers/seed.js';
import type { ServerProcess } from '../helpers/server-process.js';
import { balanceOf, burst, checkContractError, openStore, type Reply, Servers, sendJson, tally } from './support.js';

// The referral program under real concurrency (referrals-contract.md, "Under any concurrency"):
// 30 requests at once against real server processes over real sockets, on this pass's engine,
// through one process and split across two sharing the database. Two shops: one whose rewards are
// codes (reward fulfillments), one whose rewards are points (the ledger). Each race is then
// checked in the database: rows counted, rewards matched to their referral, balances to ledgers.
// Every request is answered 201 or the contract's 422: the one 503 the code path has
// (CustomerNotVisible) cannot happen under READ COMMITTED or SQLite's write lock, so a 503 here is
// the server failing under concurrency (a pool run dry, a lock wait), as a 500 is.

const PARALLEL = 30;
/** The shops' sender_limit_per_30_days. */
const SENDER_LIMIT = 12;
/** Referrals the sender of the limit race has already started: 3 short of the limit. */
const STARTED = SENDER_LIMIT - 3;
/** The order rule's points, and the rewards' points in the points shop. */
const ORDER_POINTS = 10;
const RECEIVER_POINTS = 15;
const SENDER_POINTS = 40;

type Kind = 'code' | 'points';

interface Shop {
  kind: Kind;
  tenant: Tenant;
  /** The qualifying activity type's token (an order, crediting ORDER_POINTS). */
  order: string;
}

const servers = new Servers();
let database: TestDatabaseUrl;
const shops = {} as Record<Kind, Shop>;
let first: ServerProcess;
let second: ServerProcess;
let store: Db;
const agent = new http.Agent({ keepAlive: true, maxSockets: PARALLEL * 2 });
/** Each race, its setup and its checks: generous, for a loaded machine (a race itself takes about a second). */
const RACE = { timeout: 60_000 };

/** A reward of `kind`: the fixture's code reward, or the same with points. */
function reward(base: (typeof referralSettingsFixture)['sender_reward'], kind: Kind, points: number) {
  return kind === 'code' ? base : { ...base, fulfillment: 'points', points };
}

function seedShop(kind: Kind): Promise<Shop> {
  let order = '';
  return seedTenant(database.url, `Referral race shop (${kind})`, async (services, t) => {
    const type = await services.activityTypes.create(t.accountId, { name: 'Order' });
    await services.earningRules.create(t.accountId, [fixedRule('Order', ORDER_POINTS, type.token)]);
    order = type.token;
    await services.referralSettings.set(t.accountId, {
      ...referralSettingsFixture,
      sender_reward: reward(referralSettingsFixture.sender_reward, kind, SENDER_POINTS),
      receiver_reward: reward(referralSettingsFixture.receiver_reward, kind, RECEIVER_POINTS),
      qualifying_activity_token: order,
      minimum_amount: '20',
      landing_url: 'https://shop.example/welcome',
      sender_limit_per_30_days: SENDER_LIMIT,
    });
  }).then((tenant) => ({ kind, tenant, order }));
}

beforeAll(async () => {
  database = await createTestDatabaseUrl();
  shops.code = await seedShop('code');
  shops.points = await seedShop('points');
  const env = { DATABASE_URL: database.url, RATE_LIMIT_PER_SECOND: '0' };
  [first, second] = await Promise.all([servers.start(env), servers.start(env)]);
  store = openStore(database.url);
});

afterAll(async () => {
  agent.destroy();
  await store?.close();
  await servers.killAll();
  await database?.drop();
});

interface Member {
  id: number;
  code: string;
}

/** `count` new member customers of the shop (each with a referral code), made as the CLI would. */
async function members(shop: Shop, prefix: string, count: number): Promise<Member[]> {
  const ids = await withServices(database.url, async (services) => {
    const made: number[] = [];
    for (let i = 0; i < count; i++) {
      made.push((await services.customers.create(shop.tenant.accountId, { email: `${prefix}-${i}@example.com` })).id);
    }
    return made;
  });
  const rows = await store.kysely
    .selectFrom('customers')
    .select(['id', 'referral_code'])
    .where('id', 'in', ids)
    .orderBy('id')
    .execute();
  return rows.map((row) => ({ id: row.id, code: row.referral_code! }));
}

/** The body of the first reply whose status is not one of `expected`: what a failed tally shows. */
const firstOther = (replies: Reply[], ...expected: number[]) => replies.find((r) => !expected.includes(r.status))?.body;

/** The refusals of a burst all say `referral_not_allowed` with `reason`, in the contract's shape. */
function expectRefusedFor(replies: Reply[], reason: string): void {
  for (const reply of replies.filter((r) => r.status !== 201)) {
    expect(checkContractError(reply, 'POST /v1/referrals')).toBe('referral_not_allowed');
    expect(JSON.parse(reply.body).error.details[0].reason, reply.body).toBe(reason);
  }
}

/** Events of `type` the shop has recorded so far. */
async function eventCount(shop: Shop, type: string): Promise<number> {
  const row = await store.kysely
    .selectFrom('events')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('account_id', '=', shop.tenant.accountId)
    .where('type', '=', type)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** The rewards a customer holds: reward fulfillments and points transactions, by id. */
async function rewardsOf(customerId: number): Promise<{ fulfillments: number[]; transactions: number[] }> {
  const fulfillments = await store.kysely
    .selectFrom('reward_fulfillments')
    .select('id')
    .where('customer_id', '=', customerId)
    .execute();
  const transactions = await store.kysely
    .selectFrom('points_transactions')
    .select(['id', 'points_change', 'activity_id'])
    .where('customer_id', '=', customerId)
    .execute();
  return {
    fulfillments: fulfillments.map((f) => f.id),
    // A referral's reward credits no activity: the order rule's credits are left out.
    transactions: transactions.filter((t) => t.activity_id === null).map((t) => t.id),
  };
}

/** Checks that the customer holds exactly one reward of the shop's kind: the one the referral names. */
async function expectOneReward(shop: Shop, customerId: number, fulfillmentId: unknown, transactionId: unknown) {
  const held = await rewardsOf(customerId);
  if (shop.kind === 'code') {
    expect(held).toEqual({ fulfillments: [fulfillmentId], transactions: [] });
    expect(transactionId).toBeNull();
  } else {
    expect(held).toEqual({ fulfillments: [], transactions: [transactionId] });
    expect(fulfillmentId).toBeNull();
  }
}

/**
 * The friends of the races on one receiver: each spells its mailbox (of local part `name`) for
 * request `i`; request 0 spells it as its key (src/referrals/email.ts).
 */
const friends = [
  {
    what: 'one email, in two cases',
    local: 'friend',
    spelled: (name: string, i: number) => (i % 3 === 1 ? `${name}@example.com`.toUpperCase() : `${name}@example.com`),
  },
  {
    // Dots, a +tag, both Google domains and case: every request but the first names another customer.
    what: 'one mailbox spelled 30 ways (issue 49)',
    local: 'mailbox',
    spelled: (name: string, i: number) => {
      if (i === 0) return `${name}@gmail.com`;
      const at = 1 + (i % (name.length - 1));
      const local = `${i % 2 === 0 ? `${name.slice(0, at)}.${name.slice(at)}` : name}+${i}`;
      const spelled = `${local}@${i % 4 < 2 ? 'gmail.com' : 'googlemail.com'}`;
      return i % 5 === 1 ? spelled.toUpperCase() : spelled;
    },
  },
];

const referralsOf = (shop: Shop) =>
  store.kysely.selectFrom('referrals').selectAll().where('account_id', '=', shop.tenant.accountId);

describe.each([
  { name: 'one server process', targets: () => [first], tag: 'one' },
  { name: 'two server processes sharing the database', targets: () => [first, second], tag: 'two' },
])(`referrals under ${PARALLEL} parallel requests (${testEngine}): $name`, ({ targets, tag }) => {
  describe.each(['code', 'points'] as const)('rewards given as %s', (kind) => {
    it.each(friends)(
      '30 referrals of $what from 30 senders: one referral, one receiver customer, one receiver reward',
      RACE,
      async ({ local, spelled }) => {
        const shop = shops[kind];
        const senders = await members(shop, `sender-${local}-${tag}-${kind}`, PARALLEL);
        const name = `${local}${tag}${kind}`;
        const emails = Array.from({ length: PARALLEL }, (_, i) => spelled(name, i));
        const createdBefore = await eventCount(shop, 'referral.created');
        const replies = await burst(
          targets(),
          PARALLEL,
          shop.tenant.apiKey,
          (i) => ({
            path: '/v1/referrals',
            body: {
              referral: {
                // Half by code, half by id.
                ...(i % 2 === 0 ? { referral_code: senders[i]!.code } : { sender_customer_id: senders[i]!.id }),
                receiver_customer_email: emails[i],
                receiver_first_name: `Friend ${i}`,
              },
            },
          }),
          { agent },
        );
        expect(
          tally(replies, (r) => r.status),
          firstOther(replies, 201, 422),
        ).toEqual({ 201: 1, 422: PARALLEL - 1 });
        expectRefusedFor(replies, 'already_referred');
        const made = replies.find((r) => r.status === 201)!.json.referral;

        const stored = await referralsOf(shop).where('receiver_mailbox', '=', spelled(name, 0)).execute();
        expect(stored.map((r) => r.id)).toEqual([made.id]);
        const referral = stored[0]!;
        expect(senders.map((s) => s.id)).toContain(referral.sender_customer_id);
        // The refused requests rolled back the customers they made for their spellings.
        const receivers = await store.kysely
          .selectFrom('customers')
          .select('id')
          .where('account_id', '=', shop.tenant.accountId)
          .where(
            'email_normalized',
            'in',
            emails.map((email) => email.toLowerCase()),
          )
          .execute();
        expect(receivers.map((c) => c.id)).toEqual([referral.receiver_customer_id]);
        await expectOneReward(
          shop,
          referral.receiver_customer_id,
          referral.receiver_reward_fulfillment_id,
          referral.receiver_points_transaction_id,
        );
        // No sender was rewarded, and the refused requests wrote nothing for their senders.
        for (const sender of senders)
          expect(await rewardsOf(sender.id)).toEqual({ fulfillments: [], transactions: [] });
        expect((await eventCount(shop, 'referral.created')) - createdBefore).toBe(1);
        if (kind === 'points') expect(await balanceOf(store, referral.receiver_customer_id)).toBe(RECEIVER_POINTS);
        expect(await unbalancedCustomers(store.kysely)).toEqual([]);
      },
    );

    it(
      '30 qualifying orders of one referred friend: one completion, one sender reward, every order recorded',
      RACE,
      async () => {
        const shop = shops[kind];
        const [sender] = await members(shop, `referrer-${tag}-${kind}`, 1);
        const made = await sendJson(first.url, 'POST', '/v1/referrals', shop.tenant.apiKey, {
          referral: { referral_code: sender!.code, receiver_customer_email: `buyer-${tag}-${kind}@example.com` },
        });
        expect(made.status, made.body).toBe(201);
        const { id, receiver_customer: receiver } = made.json.referral as {
          id: number;
          receiver_customer: { id: number };
        };
        const completedBefore = await eventCount(shop, 'referral.completed');

        const replies = await burst(
          targets(),
          PARALLEL,
          shop.tenant.apiKey,
          (i) => ({
            path: '/v1/activities',
            body: {
              activity: {
                token: shop.order,
                // By id and by email: both paths lock the friend before completing.
                ...(i % 2 === 0
                  ? { customer_id: receiver.id }
                  : { customer_email: `buyer-${tag}-${kind}@example.com` }),
                distinct_id: `order-${tag}-${kind}-${i}`,
                properties: { amount: 20 + i },
              },
            },
          }),
          { agent },
        );
        expect(
          tally(replies, (r) => r.status),
          firstOther(replies, 201),
        ).toEqual({ 201: PARALLEL });

        const referral = await referralsOf(shop).where('id', '=', id).executeTakeFirstOrThrow();
        expect(referral).toMatchObject({ status: 'completed', sender_reward_skipped: null });
        expect(referral.completed_at).not.toBeNull();
        await expectOneReward(
          shop,
          sender!.id,
          referral.sender_reward_fulfillment_id,
          referral.sender_points_transaction_id,
        );
        if (kind === 'points') expect(await balanceOf(store, sender!.id)).toBe(SENDER_POINTS);
        const { rows } = await sql<{ n: number | string }>`
        select count(*) as n from activities where customer_id = ${receiver.id}`.execute(store.kysely);
        expect(Number(rows[0]!.n)).toBe(PARALLEL);
        expect((await eventCount(shop, 'referral.completed')) - completedBefore).toBe(1);
        // The friend earned every order's points, and their own reward once.
        const friendPoints = PARALLEL * ORDER_POINTS + (kind === 'points' ? RECEIVER_POINTS : 0);
        expect(await balanceOf(store, receiver.id)).toBe(friendPoints);
        // The API shows it completed too, from either process.
        const shown = await sendJson(targets().at(-1)!.url, 'GET', `/v1/referrals/${id}`, shop.tenant.apiKey);
        expect(shown.json.referral.status).toBe('completed');
        expect(await unbalancedCustomers(store.kysely)).toEqual([]);
      },
    );

    it(
      '15 pairs of friends who referred each other, both ordering at once: each referral completes once',
      RACE,
      async () => {
        // A referred B, then B referred A (A had no activity and no points, so the contract allows it):
        // each order locks its customer, then completes their referral and locks its sender, the other.
        const shop = shops[kind];
        const firsts = await members(shop, `pair-${tag}-${kind}`, PARALLEL / 2);
        const pairs: { a: number; b: number; ab: number; ba: number }[] = [];
        for (const [i, a] of firsts.entries()) {
          const ab = await sendJson(first.url, 'POST', '/v1/referrals', shop.tenant.apiKey, {
            referral: { sender_customer_id: a.id, receiver_customer_email: `pair-${tag}-${kind}-b${i}@example.com` },
          });
          expect(ab.status, ab.body).toBe(201);
          const b = ab.json.referral.receiver_customer.id as number;
          const ba = await sendJson(first.url, 'POST', '/v1/referrals', shop.tenant.apiKey, {
            referral: { sender_customer_id: b, receiver_customer_email: `pair-${tag}-${kind}-${i}@example.com` },
          });
          expect(ba.status, ba.body).toBe(201);
          pairs.push({ a: a.id, b, ab: ab.json.referral.id, ba: ba.json.referral.id });
        }
        const replies = await burst(
          targets(),
          PARALLEL,
          shop.tenant.apiKey,
          (i) => {
            const pair = pairs[i >> 1]!;
            const customer = i % 2 === 0 ? pair.a : pair.b;
            return {
              path: '/v1/activities',
              body: { activity: { token: shop.order, customer_id: customer, properties: { amount: 30 } } },
            };
          },
          { agent },
        );
        expect(
          tally(replies, (r) => r.status),
          firstOther(replies, 201),
        ).toEqual({ 201: PARALLEL });
        for (const pair of pairs) {
          for (const [id, sender] of [
            [pair.ab, pair.a],
            [pair.ba, pair.b],
          ] as const) {
            const referral = await referralsOf(shop).where('id', '=', id).executeTakeFirstOrThrow();
            expect(referral).toMatchObject({
              status: 'completed',
              sender_customer_id: sender,
              sender_reward_skipped: null,
            });
          }
          // Each holds two rewards: the one for joining, the one for the friend's order.
          for (const customer of [pair.a, pair.b]) {
            const held = await rewardsOf(customer);
            expect(kind === 'code' ? held.fulfillments : held.transactions).toHaveLength(2);
          }
        }
        expect(await unbalancedCustomers(store.kysely)).toEqual([]);
      },
    );

    it(
      `30 referrals of new emails by a sender ${SENDER_LIMIT - STARTED} short of the limit: never above it`,
      RACE,
      async () => {
        const shop = shops[kind];
        const [sender] = await members(shop, `busy-${tag}-${kind}`, 1);
        for (let i = 0; i < STARTED; i++) {
          const made = await sendJson(first.url, 'POST', '/v1/referrals', shop.tenant.apiKey, {
            referral: {
              sender_customer_id: sender!.id,
              receiver_customer_email: `earlier-${tag}-${kind}-${i}@example.com`,
            },
          });
          expect(made.status, made.body).toBe(201);
        }
        const emails = Array.from({ length: PARALLEL }, (_, i) => `late-${tag}-${kind}-${i}@example.com`);
        const replies = await burst(
          targets(),
          PARALLEL,
          shop.tenant.apiKey,
          (i) => ({
            path: '/v1/referrals',
            body: {
              referral: {
                ...(i % 2 === 0 ? { referral_code: sender!.code } : { sender_customer_id: sender!.id }),
                receiver_customer_email: emails[i],
              },
            },
          }),
          { agent },
        );
        expect(
          tally(replies, (r) => r.status),
          firstOther(replies, 201, 422),
        ).toEqual({
          201: SENDER_LIMIT - STARTED,
          422: PARALLEL - (SENDER_LIMIT - STARTED),
        });
        expectRefusedFor(replies, 'sender_limit');

        const started = await referralsOf(shop).where('sender_customer_id', '=', sender!.id).execute();
        expect(started).toHaveLength(SENDER_LIMIT);
        // Only the accepted emails have a customer and a reward: a refusal writes nothing.
        const accepted = replies.filter((r) => r.status === 201).map((r) => r.json.referral.receiver_customer_email);
        const friends = await store.kysely
          .selectFrom('customers')
          .select(['id', 'email'])
          .where('account_id', '=', shop.tenant.accountId)
          .where('email_normalized', 'in', emails)
          .execute();
        expect(friends.map((c) => c.email).sort()).toEqual([...accepted].sort());
        for (const referral of started) {
          await expectOneReward(
            shop,
            referral.receiver_customer_id,
            referral.receiver_reward_fulfillment_id,
            referral.receiver_points_transaction_id,
          );
        }
        expect(await unbalancedCustomers(store.kysely)).toEqual([]);
      },
    );
  });
});
