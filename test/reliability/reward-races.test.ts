import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../../src/storage/db.js';
import { createTestDatabaseUrl, type Tenant, type TestDatabaseUrl, testEngine } from '../helpers/app.js';
import { unbalancedCustomers } from '../helpers/engine.js';
import { seedTenant, withServices } from '../helpers/seed.js';
import type { ServerProcess } from '../helpers/server-process.js';
import { balanceOf, burst, checkContractError, openStore, type Reply, Servers, tally } from './support.js';

// Rewards after they are issued, under real concurrency (engine-contract.md: "Exactly once under
// concurrency"): 30 requests at once over real sockets, through one server process and split
// across two sharing the database, on this pass's engine. Uses against each other, cancels against
// each other, and uses against cancels of the same code: one wins, the others are refused with the
// contract's error, and the balance, the ledger and the events agree with the winner.

const PARALLEL = 30;
const PRICE = 100;
const START = 1000;

const servers = new Servers();
let database: TestDatabaseUrl;
let tenant: Tenant;
let product = 0;
let first: ServerProcess;
let second: ServerProcess;
let store: Db;
const agent = new http.Agent({ keepAlive: true, maxSockets: PARALLEL * 2 });
const RACE = { timeout: 60_000 };

beforeAll(async () => {
  database = await createTestDatabaseUrl();
  tenant = await seedTenant(database.url, 'Reward race shop', async (services, t) => {
    const made = await services.pointsProducts.create(t.accountId, {
      exchange_type: 'fixed',
      points_price: PRICE,
      reward: { name: '$5 off' },
    });
    product = (made as { id: number }).id;
  });
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

/** A new member holding START points who bought one code: the customer and the fulfillment. */
async function codeHolder(email: string): Promise<{ customer: number; fulfillment: number }> {
  return withServices(database.url, async (services) => {
    const customer = (await services.customers.create(tenant.accountId, { email })).id;
    await services.pointsTransactions.adjust(tenant.accountId, { customer_id: customer, points_change: START });
    const bought = await services.pointsProducts.purchase(tenant.accountId, product, { customer_id: customer });
    return { customer, fulfillment: bought.reward_fulfillment.id };
  });
}

/** What the database holds for the fulfillment and its customer after a race. */
async function outcome(customer: number, fulfillment: number) {
  const row = await store.kysely
    .selectFrom('reward_fulfillments')
    .select(['fulfillment_status', 'usage_status'])
    .where('id', '=', fulfillment)
    .executeTakeFirstOrThrow();
  const refunds = await store.kysely
    .selectFrom('points_transactions')
    .select('id')
    .where('customer_id', '=', customer)
    .where('description', '=', 'Refund: $5 off')
    .execute();
  const events = await store.kysely
    .selectFrom('events')
    .select('data')
    .where('account_id', '=', tenant.accountId)
    .where('type', '=', 'reward_fulfillment.updated')
    .execute();
  return {
    status: `${row.fulfillment_status}/${row.usage_status}`,
    refunds: refunds.length,
    balance: await balanceOf(store, customer),
    updated: events.filter((e) => JSON.parse(e.data).reward_fulfillment.id === fulfillment).length,
  };
}

/** Every refusal is the contract's error body with one of `codes`. */
function expectRefusals(replies: Reply[], codes: string[]): void {
  for (const reply of replies.filter((r) => r.status !== 200)) {
    expect(codes, reply.body).toContain(checkContractError(reply, 'reward fulfillment race'));
  }
}

describe.each([
  { name: 'one server process', targets: () => [first], tag: 'one' },
  { name: 'two server processes sharing the database', targets: () => [first, second], tag: 'two' },
])(`reward codes under ${PARALLEL} parallel requests (${testEngine}): $name`, ({ targets, tag }) => {
  it('30 uses of one code: one 200, the rest 409 reward_already_used, one event', RACE, async () => {
    const { customer, fulfillment } = await codeHolder(`use-${tag}@example.com`);
    const replies = await burst(
      targets(),
      PARALLEL,
      tenant.apiKey,
      () => ({ path: `/v1/reward_fulfillments/${fulfillment}/use`, body: {} }),
      { agent },
    );
    expect(tally(replies, (r) => r.status)).toEqual({ 200: 1, 409: PARALLEL - 1 });
    expectRefusals(replies, ['reward_already_used']);
    expect(await outcome(customer, fulfillment)).toEqual({
      status: 'issued/used',
      refunds: 0,
      balance: START - PRICE,
      updated: 1,
    });
  });

  it('30 cancels of one code: one refund, the rest 409 reward_already_used', RACE, async () => {
    const { customer, fulfillment } = await codeHolder(`cancel-${tag}@example.com`);
    const replies = await burst(
      targets(),
      PARALLEL,
      tenant.apiKey,
      () => ({ path: `/v1/reward_fulfillments/${fulfillment}/cancel`, body: {} }),
      { agent },
    );
    expect(tally(replies, (r) => r.status)).toEqual({ 200: 1, 409: PARALLEL - 1 });
    expectRefusals(replies, ['reward_already_used']);
    expect(await outcome(customer, fulfillment)).toEqual({
      status: 'cancelled/unused',
      refunds: 1,
      balance: START,
      updated: 1,
    });
    expect(await unbalancedCustomers(store.kysely)).toEqual([]);
  });

  it('15 uses and 15 cancels of one code: one of them wins, and the books follow the winner', RACE, async () => {
    const { customer, fulfillment } = await codeHolder(`both-${tag}@example.com`);
    const replies = await burst(
      targets(),
      PARALLEL,
      tenant.apiKey,
      (i) => ({ path: `/v1/reward_fulfillments/${fulfillment}/${i % 2 === 0 ? 'use' : 'cancel'}`, body: {} }),
      { agent },
    );
    const won = replies.filter((r) => r.status === 200);
    expect(won, JSON.stringify(tally(replies, (r) => r.status))).toHaveLength(1);
    expectRefusals(replies, ['reward_already_used', 'reward_cancelled']);
    const cancelled = JSON.parse(won[0]!.body).reward_fulfillment.fulfillment_status === 'cancelled';
    expect(await outcome(customer, fulfillment)).toEqual(
      cancelled
        ? { status: 'cancelled/unused', refunds: 1, balance: START, updated: 1 }
        : { status: 'issued/used', refunds: 0, balance: START - PRICE, updated: 1 },
    );
    expect(await unbalancedCustomers(store.kysely)).toEqual([]);
  });
});
