import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../../src/storage/db.js';
import { createTestDatabaseUrl, type Tenant, type TestDatabaseUrl, testEngine } from '../helpers/app.js';
import { rowCount, unbalancedCustomers } from '../helpers/engine.js';
import { seedTenant, withServices } from '../helpers/seed.js';
import type { ServerProcess } from '../helpers/server-process.js';
import { balanceOf, burst, openStore, Servers, tally } from './support.js';

// Purchases under real concurrency: 50 at once against real server processes over real sockets,
// on this pass's engine, through one process and split across two sharing the database.

const PARALLEL = 50;

const servers = new Servers();
let database: TestDatabaseUrl;
let tenant: Tenant;
let productId = 0;
let first: ServerProcess;
let second: ServerProcess;
let store: Db;
const agent = new http.Agent({ keepAlive: true, maxSockets: PARALLEL * 2 });

beforeAll(async () => {
  database = await createTestDatabaseUrl();
  tenant = await seedTenant(database.url, 'Race shop', async (services, t) => {
    const [product] = (await services.pointsProducts.create(t.accountId, [
      { exchange_type: 'fixed', points_price: 100, reward: { name: '$5 off' } },
    ])) as { id: number }[];
    productId = product!.id;
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

/** A new customer holding `points`, made through the services as the CLI would. */
function customerWith(email: string, points: number): Promise<number> {
  return withServices(database.url, async (services) => {
    const { id } = await services.customers.create(tenant.accountId, { email });
    await services.pointsTransactions.adjust(tenant.accountId, { customer_id: id, points_change: points });
    return id;
  });
}

function purchases(targets: ServerProcess[], customerId: number, headers: Record<string, string> = {}) {
  return burst(
    targets,
    PARALLEL,
    tenant.apiKey,
    () => ({ path: `/v1/points_products/${productId}/purchase`, body: { customer_id: customerId } }),
    { agent, headers },
  );
}

describe.each([
  { name: 'one server process', targets: () => [first], tag: 'one' },
  { name: 'two server processes sharing the database', targets: () => [first, second], tag: 'two' },
])(`${PARALLEL} parallel purchases (${testEngine}): $name`, ({ targets, tag }) => {
  it('of a 100-point product by a customer holding 1,000: exactly 10 succeed, 40 are insufficient_points', async () => {
    const customer = await customerWith(`buyer-${tag}@example.com`, 1000);
    const replies = await purchases(targets(), customer);
    expect(tally(replies, (r) => r.status)).toEqual({ 201: 10, 422: 40 });
    for (const reply of replies.filter((r) => r.status === 422))
      expect(reply.json.error.code).toBe('insufficient_points');
    const codes = replies.filter((r) => r.status === 201).map((r) => r.json.points_purchase.reward_fulfillment.code);
    expect(new Set(codes).size).toBe(10);
    expect(await balanceOf(store, customer)).toBe(0);
    const fulfillments = await store.kysely
      .selectFrom('reward_fulfillments')
      .select('code')
      .where('customer_id', '=', customer)
      .execute();
    expect(fulfillments.map((f) => f.code).sort()).toEqual([...codes].sort());
    expect(await unbalancedCustomers(store.kysely)).toEqual([]);
  });

  it('with one Idempotency-Key: one purchase, 50 identical answers', async () => {
    const customer = await customerWith(`once-${tag}@example.com`, 1000);
    const before = await rowCount(store.kysely, 'points_purchases');
    const replies = await purchases(targets(), customer, { 'idempotency-key': `reward-${tag}` });
    expect(tally(replies, (r) => r.status)).toEqual({ 201: PARALLEL });
    expect(new Set(replies.map((r) => r.body)).size).toBe(1);
    expect((await rowCount(store.kysely, 'points_purchases')) - before).toBe(1);
    expect(await balanceOf(store, customer)).toBe(900);
  });
});
