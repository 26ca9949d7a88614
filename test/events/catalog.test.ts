import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Activity } from '../../src/activities/schemas.js';
import type { Customer } from '../../src/customers/schemas.js';
import type { PointsProduct, PointsPurchase } from '../../src/points-products/schemas.js';
import type { PointsTransaction } from '../../src/points-transactions/schemas.js';
import type { Referral } from '../../src/referrals/schemas.js';
import type { VipTier } from '../../src/vip-tiers/schemas.js';
import { bearer, createTenant, createTestApp, type Tenant, type TestApp } from '../helpers/app.js';
import { fixedRule, program } from '../helpers/engine.js';
import { referralSettingsFixture } from '../helpers/fixtures.js';

// Every change of the event catalog, through each front door that makes it (the API's routes,
// the services the CLI and the console call): the events table gains exactly the change's events,
// in the order the changes happened, each with the resource as the API shows it at that moment
// (compared with the route's answer, or a GET right after). The order within a transaction: an
// event is recorded when its resource is complete, so `customer.created` (the customer placed),
// its placement's `customer.vip_tier_changed`, then per ledger entry `points_transaction.created`
// and the `customer.vip_tier_changed` it caused, the fulfillment, and last the activity or the
// purchase that holds them. A referral's reward comes before `referral.created`; an activity that
// completes a referral is followed by the sender's reward and `referral.completed`.

let t: TestApp;
let a: Tenant;

beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => t.close());
// A new account per test: its events are the test's alone.
beforeEach(async () => {
  a = await createTenant(t.services);
});

const EVENT_ID = /^evt_[0-9A-Za-z]{20,}$/;

interface Written {
  type: string;
  data: Record<string, unknown>;
}

/** The highest event id so far (0 when none). */
async function mark(): Promise<number> {
  const row = await t.db.kysely
    .selectFrom('events')
    .select((eb) => eb.fn.max('id').as('max'))
    .executeTakeFirst();
  return Number(row?.max ?? 0);
}

/** The events written since `from` (at `at` or later), in the order they were written, checked for id, account and time. */
async function since(from: number, at: number): Promise<Written[]> {
  const rows = await t.db.kysely.selectFrom('events').selectAll().where('id', '>', from).orderBy('id').execute();
  for (const row of rows) {
    expect(row.public_id).toMatch(EVENT_ID);
    expect(Number(row.account_id)).toBe(a.accountId);
    expect(Number(row.created_at)).toBeGreaterThanOrEqual(at);
    expect(Number(row.created_at)).toBeLessThanOrEqual(t.clock.now());
  }
  return rows.map((row) => ({ type: row.type, data: JSON.parse(row.data) as Record<string, unknown> }));
}

const api = async (method: 'GET' | 'POST', url: string, payload?: object, token = a.apiKey) => {
  const response = await t.app.inject({ method, url, headers: bearer(token), ...(payload ? { payload } : {}) });
  expect(response.statusCode, response.body).toBeLessThan(300);
  return response.json();
};
/** create_or_update, which takes an app's token only. */
const identify = (identity: Record<string, unknown>) =>
  api('POST', '/v1/customer_identities/create_or_update', { customer_identity: identity }, a.accessToken);
const customer = async (id: number): Promise<Customer> => (await api('GET', `/v1/customers/${id}`)).customer;
const tiers = (): Promise<VipTier[]> => t.services.vipTiers.list(a.accountId);

/** The customer as it was before later changes of the same transaction: `now` with the fields that differed. */
const before = (now: Customer, balance: number, earned: number, status: Partial<Customer['vip_status']> = {}) => ({
  ...now,
  points_balance: balance,
  vip_status: { ...now.vip_status, progress_value: earned, ...status },
});

/** The `vip_tier_change` the change rows hold for the customer's latest move, with its tiers as they are now. */
async function lastMove(customerId: number, previous: VipTier | null, current: VipTier | null, description: string) {
  const row = await t.db.kysely
    .selectFrom('vip_tier_changes')
    .selectAll()
    .where('customer_id', '=', customerId)
    .orderBy('id', 'desc')
    .executeTakeFirstOrThrow();
  expect(Number(row.account_id)).toBe(a.accountId);
  expect(row.previous_vip_tier_id === null ? null : Number(row.previous_vip_tier_id)).toBe(previous?.id ?? null);
  expect(row.current_vip_tier_id === null ? null : Number(row.current_vip_tier_id)).toBe(current?.id ?? null);
  const at = new Date(t.clock.now()).toISOString();
  const named = (tier: VipTier | null) => tier && { id: tier.id, name: tier.name, image_url: tier.image_url };
  return {
    vip_tier_change: {
      id: Number(row.id),
      customer_id: customerId,
      previous_vip_tier: named(previous),
      current_vip_tier: named(current),
      description,
      created_at: at,
      updated_at: at,
    },
  };
}

const tier = (name: string, milestone: number) => ({
  name,
  milestone,
  image_url: `https://cdn.example.com/${name}.svg`,
});
const newCustomer = async (email = 'jane@example.com') =>
  (await t.services.customers.create(a.accountId, { email })).id;
const give = (customerId: number, points: number) =>
  t.services.pointsTransactions.adjust(a.accountId, { customer_id: customerId, points_change: points });
const fixedProduct = async (price: number) =>
  (
    (await t.services.pointsProducts.create(a.accountId, {
      exchange_type: 'fixed',
      points_price: price,
      reward: { name: '$5 off', image_url: 'https://cdn.example.com/r.png' },
    })) as PointsProduct
  ).id;

/** A customer with 500 points who bought one code: their id and the fulfillment's. */
const boughtCode = async () => {
  const jane = await newCustomer();
  await give(jane, 500);
  const bought = await t.services.pointsProducts.purchase(a.accountId, await fixedProduct(100), { customer_id: jane });
  return { jane, fulfillment: bought.reward_fulfillment.id };
};

/** A running referral program (the Order activity type qualifies, earning `orderPoints`); its sender Jane. */
async function referralProgram(extra: Record<string, unknown> = {}, orderPoints = 0) {
  const { token } = await program(t.services, a.accountId, (tk) =>
    orderPoints ? [fixedRule('Order', orderPoints, tk)] : [],
  );
  await t.services.referralSettings.set(a.accountId, {
    ...referralSettingsFixture,
    qualifying_activity_token: token,
    landing_url: 'https://shop.example/',
    ...extra,
  });
  return { jane: await newCustomer() };
}
const pointsReward = (side: 'sender_reward' | 'receiver_reward', points: number) => ({
  ...referralSettingsFixture[side],
  fulfillment: 'points',
  points,
});
const refer = async (referral: Record<string, unknown>): Promise<Referral> =>
  (await api('POST', '/v1/referrals', { referral })).referral;
const referral = async (id: number): Promise<Referral> => (await api('GET', `/v1/referrals/${id}`)).referral;

/**
 * One change: `setup` prepares it (its events are not counted), `change` makes it and answers
 * the events it must have written, computed from the API's answers after it.
 */
interface Case {
  door: 'API' | 'CLI' | 'console';
  name: string;
  setup?: () => Promise<Record<string, number>>;
  change: (ctx: Record<string, number>) => Promise<[string, unknown][]>;
}

const cases: Case[] = [
  {
    door: 'API',
    name: 'create_or_update of a new email: customer.created',
    change: async () => {
      const { customer_identity } = await identify({
        distinct_id: 'crm-1',
        email: 'jane@example.com',
        first_name: 'Jane',
      });
      return [['customer.created', { customer: await customer(customer_identity.customer_id) }]];
    },
  },
  {
    door: 'API',
    name: 'create_or_update of a new email, with a tier at 0: customer.created (placed), customer.vip_tier_changed',
    setup: async () => ({ bronze: (await t.services.vipTiers.create(a.accountId, tier('Bronze', 0))).id }),
    change: async () => {
      const { customer_identity } = await identify({ distinct_id: 'crm-1', email: 'jane@example.com' });
      const id = customer_identity.customer_id;
      const jane = await customer(id);
      expect(jane.vip_tier_id).not.toBeNull();
      const [bronze] = await tiers();
      return [
        ['customer.created', { customer: jane }],
        ['customer.vip_tier_changed', await lastMove(id, null, bronze!, 'Achieved Bronze')],
      ];
    },
  },
  {
    door: 'API',
    name: 'create_or_update of a known distinct_id, or of a new one for a known email: nothing',
    setup: async () => {
      await t.services.customerIdentities.createOrUpdate(a.accountId, {
        distinct_id: 'crm-1',
        email: 'jane@example.com',
      });
      return {};
    },
    change: async () => {
      await identify({ distinct_id: 'crm-1', email: 'jane@example.com', first_name: 'Janet' });
      await identify({ distinct_id: 'shop-1', email: 'JANE@example.com' });
      return [];
    },
  },
  {
    door: 'API',
    name: 'an activity with a new email: customer.created, points_transaction.created per credit, activity.created',
    setup: async () => {
      await program(t.services, a.accountId, (token) => [fixedRule('First', 10, token), fixedRule('Second', 5, token)]);
      return {};
    },
    change: async () => {
      const { token } = (await t.services.activityTypes.list(a.accountId))[0]!;
      const { activity } = (await api('POST', '/v1/activities', {
        activity: { token, customer_email: 'new@example.com', distinct_id: 'o-1' },
      })) as { activity: Activity };
      const now = await customer(activity.customer_id);
      const [first, second] = activity.points_transactions;
      return [
        ['customer.created', { customer: before(now, 0, 0) }],
        ['points_transaction.created', { points_transaction: first, customer: before(now, 10, 10) }],
        ['points_transaction.created', { points_transaction: second, customer: now }],
        ['activity.created', { activity }],
      ];
    },
  },
  {
    door: 'API',
    name: 'an activity that takes a customer into a tier: points_transaction.created, customer.vip_tier_changed, activity.created',
    setup: async () => {
      const jane = await newCustomer();
      await t.services.vipTiers.create(a.accountId, tier('Silver', 10));
      const gold = (await t.services.vipTiers.create(a.accountId, tier('Gold', 100))).id;
      await program(t.services, a.accountId, (token) => [fixedRule('Order', 20, token)]);
      return { jane, gold };
    },
    change: async ({ jane }) => {
      const { token } = (await t.services.activityTypes.list(a.accountId))[0]!;
      const { activity } = (await api('POST', '/v1/activities', { activity: { token, customer_id: jane } })) as {
        activity: Activity;
      };
      const now = await customer(jane!);
      const [silver] = await tiers();
      return [
        ['points_transaction.created', { points_transaction: activity.points_transactions[0], customer: now }],
        ['customer.vip_tier_changed', await lastMove(jane!, null, silver!, 'Achieved Silver')],
        ['activity.created', { activity }],
      ];
    },
  },
  {
    door: 'API',
    name: 'an activity of a customer who is not a member: activity.created alone, with no credit',
    setup: async () => {
      const jane = await newCustomer();
      await t.services.customers.setState(jane, 'disabled');
      await program(t.services, a.accountId, (token) => [fixedRule('Order', 20, token)]);
      return { jane };
    },
    change: async ({ jane }) => {
      const { token } = (await t.services.activityTypes.list(a.accountId))[0]!;
      const { activity } = await api('POST', '/v1/activities', { activity: { token, customer_id: jane } });
      expect(activity.points_transactions).toEqual([]);
      return [['activity.created', { activity }]];
    },
  },
  {
    door: 'API',
    name: 'a manual credit and a deduction: points_transaction.created each, with the customer after it',
    setup: async () => ({ jane: await newCustomer() }),
    change: async ({ jane }) => {
      const credit = (await api('POST', '/v1/points_transactions', {
        points_transaction: { customer_id: jane, points_change: 50, description: 'Welcome' },
      })) as { points_transaction: PointsTransaction };
      const afterCredit = await customer(jane!);
      t.clock.advance(1000);
      const debit = (await api('POST', '/v1/points_transactions', {
        points_transaction: { customer_id: jane, points_change: -20, internal_note: 'Order #1' },
      })) as { points_transaction: PointsTransaction };
      const afterDebit = await customer(jane!);
      expect(afterDebit.points_balance).toBe(30);
      return [
        ['points_transaction.created', { points_transaction: credit.points_transaction, customer: afterCredit }],
        ['points_transaction.created', { points_transaction: debit.points_transaction, customer: afterDebit }],
      ];
    },
  },
  {
    door: 'API',
    name: 'a purchase: points_transaction.created, reward_fulfillment.created, points_purchase.created',
    setup: async () => {
      const jane = await newCustomer();
      await give(jane, 500);
      return { jane, product: await fixedProduct(100) };
    },
    change: async ({ jane, product }) => {
      const { points_purchase } = (await api('POST', `/v1/points_products/${product}/purchase`, {
        customer_id: jane,
      })) as { points_purchase: PointsPurchase };
      const { points_transactions } = await api('GET', `/v1/points_transactions?customer_id=${jane}&limit=1`);
      expect(points_transactions[0].points_purchase_id).toBe(points_purchase.id);
      return [
        ['points_transaction.created', { points_transaction: points_transactions[0], customer: await customer(jane!) }],
        ['reward_fulfillment.created', { reward_fulfillment: points_purchase.reward_fulfillment }],
        ['points_purchase.created', { points_purchase }],
      ];
    },
  },
  {
    door: 'API',
    name: 'a code used: reward_fulfillment.updated',
    setup: () => boughtCode(),
    change: async ({ fulfillment }) => {
      const { reward_fulfillment } = await api('POST', `/v1/reward_fulfillments/${fulfillment}/use`);
      expect(reward_fulfillment.usage_status).toBe('used');
      return [['reward_fulfillment.updated', { reward_fulfillment }]];
    },
  },
  {
    door: 'API',
    name: 'a code cancelled: reward_fulfillment.updated, then the refund’s points_transaction.created',
    setup: () => boughtCode(),
    change: async ({ jane, fulfillment }) => {
      const { reward_fulfillment } = await api('POST', `/v1/reward_fulfillments/${fulfillment}/cancel`);
      const { points_transactions } = await api('GET', `/v1/points_transactions?customer_id=${jane}&limit=1`);
      expect(points_transactions[0]).toMatchObject({ points_change: 100, description: 'Refund: $5 off' });
      return [
        ['reward_fulfillment.updated', { reward_fulfillment }],
        ['points_transaction.created', { points_transaction: points_transactions[0], customer: await customer(jane!) }],
      ];
    },
  },
  {
    door: 'API',
    name: "an order that applied the customer's code: reward_fulfillment.updated, activity.created",
    setup: async () => {
      await program(t.services, a.accountId, () => []);
      return boughtCode();
    },
    change: async ({ jane, fulfillment }) => {
      const { token } = (await t.services.activityTypes.list(a.accountId))[0]!;
      const { code } = await t.db.kysely
        .selectFrom('reward_fulfillments')
        .select('code')
        .where('id', '=', fulfillment!)
        .executeTakeFirstOrThrow();
      const { activity } = await api('POST', '/v1/activities', {
        activity: { token, customer_id: jane, properties: { discount_codes: [code] } },
      });
      const { reward_fulfillments } = await api('GET', `/v1/reward_fulfillments?code=${code}`);
      expect(reward_fulfillments[0].usage_status).toBe('used');
      return [
        ['reward_fulfillment.updated', { reward_fulfillment: reward_fulfillments[0] }],
        ['activity.created', { activity }],
      ];
    },
  },
  {
    door: 'API',
    name: 'a referral of a new email, rewarded with a code: customer.created, reward_fulfillment.created, referral.created',
    setup: () => referralProgram(),
    change: async ({ jane }) => {
      const made = await refer({ sender_customer_id: jane, receiver_customer_email: 'friend@example.com' });
      return [
        ['customer.created', { customer: await customer(made.receiver_customer!.id) }],
        ['reward_fulfillment.created', { reward_fulfillment: made.receiver_reward_fulfillment }],
        ['referral.created', { referral: made }],
      ];
    },
  },
  {
    door: 'API',
    name: 'a referral of a known email, rewarded with points: points_transaction.created, referral.created',
    setup: async () => {
      const ctx = await referralProgram({ receiver_reward: pointsReward('receiver_reward', 25) });
      return { ...ctx, bob: await newCustomer('bob@example.com') };
    },
    change: async ({ jane }) => {
      const made = await refer({ sender_customer_id: jane, receiver_customer_email: 'BOB@example.com' });
      const { points_transaction } = await api('GET', `/v1/points_transactions/${made.receiver_points_transaction_id}`);
      return [
        ['points_transaction.created', { points_transaction, customer: await customer(made.receiver_customer!.id) }],
        ['referral.created', { referral: made }],
      ];
    },
  },
  {
    door: 'API',
    name: 'a refused referral: nothing',
    setup: () => referralProgram(),
    change: async ({ jane }) => {
      // Jane refers herself.
      const response = await t.app.inject({
        method: 'POST',
        url: '/v1/referrals',
        headers: bearer(a.apiKey),
        payload: { referral: { sender_customer_id: jane, receiver_customer_email: 'JANE+1@example.com' } },
      });
      expect(response.statusCode).toBe(422);
      return [];
    },
  },
  {
    door: 'API',
    name: 'an activity completing a referral: points_transaction.created, activity.created, reward_fulfillment.created, referral.completed',
    setup: async () => {
      const { jane } = await referralProgram({}, 10);
      const made = await refer({ sender_customer_id: jane, receiver_customer_email: 'friend@example.com' });
      return { jane, referral: made.id };
    },
    change: async ({ referral: id }) => {
      const { token } = (await t.services.activityTypes.list(a.accountId))[0]!;
      const { activity } = (await api('POST', '/v1/activities', {
        activity: { token, customer_email: 'friend@example.com', properties: { amount: 30 } },
      })) as { activity: Activity };
      const completed = await referral(id!);
      expect(completed.status).toBe('completed');
      return [
        [
          'points_transaction.created',
          { points_transaction: activity.points_transactions[0], customer: await customer(activity.customer_id) },
        ],
        ['activity.created', { activity }],
        ['reward_fulfillment.created', { reward_fulfillment: completed.sender_reward_fulfillment }],
        ['referral.completed', { referral: completed }],
      ];
    },
  },
  {
    door: 'API',
    name: 'an activity completing a referral, the sender rewarded with points: activity.created, points_transaction.created, referral.completed',
    setup: async () => {
      const { jane } = await referralProgram({ sender_reward: pointsReward('sender_reward', 40) });
      const made = await refer({ sender_customer_id: jane, receiver_customer_email: 'friend@example.com' });
      return { jane, referral: made.id };
    },
    change: async ({ jane, referral: id }) => {
      const { token } = (await t.services.activityTypes.list(a.accountId))[0]!;
      const { activity } = await api('POST', '/v1/activities', {
        activity: { token, customer_email: 'friend@example.com' },
      });
      const completed = await referral(id!);
      const { points_transaction } = await api(
        'GET',
        `/v1/points_transactions/${completed.sender_points_transaction_id}`,
      );
      return [
        ['activity.created', { activity }],
        ['points_transaction.created', { points_transaction, customer: await customer(jane!) }],
        ['referral.completed', { referral: completed }],
      ];
    },
  },
  {
    door: 'API',
    name: 'an activity completing a referral whose sender is no longer a member: activity.created, referral.completed',
    setup: async () => {
      const { jane } = await referralProgram();
      const made = await refer({ sender_customer_id: jane, receiver_customer_email: 'friend@example.com' });
      await t.services.customers.setState(jane, 'disabled');
      return { jane, referral: made.id };
    },
    change: async ({ referral: id }) => {
      const { token } = (await t.services.activityTypes.list(a.accountId))[0]!;
      const { activity } = await api('POST', '/v1/activities', {
        activity: { token, customer_email: 'friend@example.com' },
      });
      const completed = await referral(id!);
      expect(completed.sender_reward_fulfillment).toBeNull();
      return [
        ['activity.created', { activity }],
        ['referral.completed', { referral: completed }],
      ];
    },
  },
  {
    door: 'API',
    name: 'an activity of an expired referral’s receiver: activity.created alone',
    setup: async () => {
      const { jane } = await referralProgram({ window_days: 1 });
      await refer({ sender_customer_id: jane, receiver_customer_email: 'friend@example.com' });
      return { jane };
    },
    change: async () => {
      const { token } = (await t.services.activityTypes.list(a.accountId))[0]!;
      // The case's clock moved a minute after setup; a day more ends the window.
      t.clock.advance(86_400_000);
      const { activity } = await api('POST', '/v1/activities', {
        activity: { token, customer_email: 'friend@example.com' },
      });
      return [['activity.created', { activity }]];
    },
  },
  {
    door: 'API',
    name: 'reads: nothing',
    setup: async () => ({ jane: await newCustomer() }),
    change: async ({ jane }) => {
      await api('GET', `/v1/customers/${jane}`);
      await api('GET', '/v1/customers');
      await api('GET', '/v1/points_transactions');
      await api('GET', '/v1/vip_tiers');
      return [];
    },
  },
  ...(['CLI', 'console'] as const).flatMap((door): Case[] => [
    {
      door,
      name: 'a customer created: customer.created',
      change: async () => {
        const id = await newCustomer('cli@example.com');
        return [['customer.created', { customer: await customer(id) }]];
      },
    },
    {
      door,
      name: "a customer's state changed: customer.updated; the same state again: nothing",
      setup: async () => ({ jane: await newCustomer() }),
      change: async ({ jane }) => {
        t.clock.advance(1000);
        const shown = await t.services.customers.setState(jane!, 'disabled');
        const now = await customer(jane!);
        expect(shown).toEqual(now);
        expect(now.state).toBe('disabled');
        await t.services.customers.setState(jane!, 'disabled');
        expect(await customer(jane!)).toEqual(now);
        return [['customer.updated', { customer: now }]];
      },
    },
    {
      door,
      name: 'a manual adjustment: points_transaction.created',
      setup: async () => ({ jane: await newCustomer() }),
      change: async ({ jane }) => {
        await t.services.pointsTransactions.adjust(
          a.accountId,
          { customer_id: jane!, points_change: 7, description: 'Goodwill' },
          door === 'console' ? { key: 'form-1' } : {},
        );
        const { points_transactions } = await api('GET', `/v1/points_transactions?customer_id=${jane}`);
        return [
          [
            'points_transaction.created',
            { points_transaction: points_transactions[0], customer: await customer(jane!) },
          ],
        ];
      },
    },
    {
      door,
      name: 'a tier created: customer.vip_tier_changed for each customer it moves, ascending, none for the others',
      setup: async () => {
        const [low, high, none] = [
          await newCustomer('low@example.com'),
          await newCustomer('high@example.com'),
          await newCustomer('none@example.com'),
        ];
        await give(low!, 150);
        await give(high!, 600);
        return { low: low!, high: high!, none: none! };
      },
      change: async ({ low, high }) => {
        const silver = await t.services.vipTiers.create(a.accountId, tier('Silver', 100));
        expect((await customer(low!)).vip_tier_id).toBe(silver.id);
        expect((await customer(high!)).vip_tier_id).toBe(silver.id);
        return [
          ['customer.vip_tier_changed', await lastMove(low!, null, silver, 'Achieved Silver')],
          ['customer.vip_tier_changed', await lastMove(high!, null, silver, 'Achieved Silver')],
        ];
      },
    },
    {
      door,
      name: 'a tier updated: its moves, up and down',
      setup: async () => {
        const [low, high] = [await newCustomer('low@example.com'), await newCustomer('high@example.com')];
        await give(low!, 150);
        await give(high!, 600);
        const silver = (await t.services.vipTiers.create(a.accountId, tier('Silver', 100))).id;
        const gold = (await t.services.vipTiers.create(a.accountId, tier('Gold', 1000))).id;
        return { low: low!, high: high!, silver, gold };
      },
      change: async ({ low, high, gold }) => {
        // Gold down to 500: high moves up from Silver; low stays.
        await t.services.vipTiers.update(gold!, { milestone: 500, name: 'Gold+' });
        const [silver, goldNow] = await tiers();
        expect((await customer(high!)).vip_tier_id).toBe(gold);
        expect((await customer(low!)).vip_tier_id).toBe(silver!.id);
        return [['customer.vip_tier_changed', await lastMove(high!, silver!, goldNow!, 'Achieved Gold+')]];
      },
    },
    {
      door,
      name: 'a tier deleted: its customers moved down (previous tier named as it was), or out of every tier',
      setup: async () => {
        const [low, high] = [await newCustomer('low@example.com'), await newCustomer('high@example.com')];
        await give(low!, 150);
        await give(high!, 600);
        await t.services.vipTiers.create(a.accountId, tier('Silver', 100));
        await t.services.vipTiers.create(a.accountId, tier('Gold', 500));
        return { low: low!, high: high! };
      },
      change: async ({ low, high }) => {
        const [silver, gold] = await tiers();
        await t.services.vipTiers.delete(silver!.id);
        await t.services.vipTiers.delete(gold!.id);
        expect((await customer(low!)).vip_tier_id).toBeNull();
        expect((await customer(high!)).vip_tier_id).toBeNull();
        // Deleting Silver: low leaves it for no tier (high is in Gold). Deleting Gold: high leaves it.
        const lowMove = await lastMove(low!, silver!, null, 'Left Silver');
        const highMove = await lastMove(high!, gold!, null, 'Left Gold');
        return [
          ['customer.vip_tier_changed', lowMove],
          ['customer.vip_tier_changed', highMove],
        ];
      },
    },
    {
      door,
      name: 'a tier deleted under another: its customers move to the lower tier',
      setup: async () => {
        const high = await newCustomer('high@example.com');
        await give(high, 600);
        await t.services.vipTiers.create(a.accountId, tier('Silver', 100));
        await t.services.vipTiers.create(a.accountId, tier('Gold', 500));
        return { high };
      },
      change: async ({ high }) => {
        const [silver, gold] = await tiers();
        await t.services.vipTiers.delete(gold!.id);
        expect((await customer(high!)).vip_tier_id).toBe(silver!.id);
        return [['customer.vip_tier_changed', await lastMove(high!, gold!, silver!, 'Moved to Silver')]];
      },
    },
    {
      door,
      name: 'a tier changed that moves no one: nothing',
      setup: async () => {
        const jane = await newCustomer();
        await give(jane, 50);
        return { silver: (await t.services.vipTiers.create(a.accountId, tier('Silver', 100))).id };
      },
      change: async ({ silver }) => {
        await t.services.vipTiers.update(silver!, { name: 'Argent', milestone: 60 });
        await t.services.vipTiers.create(a.accountId, tier('Gold', 1000));
        await t.services.vipTiers.delete(silver!);
        return [];
      },
    },
  ]),
];

describe('every change of the catalog writes exactly its events', () => {
  it.each(cases.map((c) => [`${c.door}: ${c.name}`, c] as const))('%s', async (_name, c) => {
    const ctx = (await c.setup?.()) ?? {};
    t.clock.advance(60_000);
    const from = await mark();
    const at = t.clock.now();
    const expected = await c.change(ctx);
    const written = await since(from, at);
    expect(written.map((event) => event.type)).toEqual(expected.map(([type]) => type));
    expect(written.map((event) => [event.type, event.data])).toEqual(expected);
  });
});
