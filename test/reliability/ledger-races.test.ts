import http from 'node:http';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../../src/storage/db.js';
import type { Tenant } from '../helpers/app.js';
import { createTestDatabaseUrl, type TestDatabaseUrl, testEngine } from '../helpers/app.js';
import { fixedRule, unbalancedCustomers } from '../helpers/engine.js';
import { seedTenant } from '../helpers/seed.js';
import type { ServerProcess } from '../helpers/server-process.js';
import { balanceOf, burst, openStore, Servers, sendJson, tally } from './support.js';

// The ledger's guarantees under real concurrency: 100 requests at once against real server
// processes over real sockets, on this pass's engine: through one process, split across two
// processes sharing the database (two nodes), and through one server of WORKERS=2.

const PARALLEL = 100;

interface Seeded {
  tenant: Tenant;
  /** A fixed 10-point rule, no limit. */
  onceToken: string;
  /** A fixed 5-point rule with a lifetime limit of 3. */
  limitedToken: string;
}

const servers = new Servers();
let database: TestDatabaseUrl;
let seeded: Seeded;
let first: ServerProcess;
let second: ServerProcess;
let workers: ServerProcess;
let store: Db;
// Every request on a connection of its own, all opened at once.
const agent = new http.Agent({ keepAlive: true, maxSockets: PARALLEL * 2 });

beforeAll(async () => {
  database = await createTestDatabaseUrl();
  let onceToken = '';
  let limitedToken = '';
  const tenant = await seedTenant(database.url, 'Race shop', async (services, t) => {
    const once = await services.activityTypes.create(t.accountId, { name: 'Order' });
    const limited = await services.activityTypes.create(t.accountId, { name: 'Review' });
    await services.earningRules.create(t.accountId, [
      fixedRule('Order', 10, once.token),
      fixedRule('Review', 5, limited.token, { earning_limit: { max: 3, type: 'lifetime' } }),
    ]);
    onceToken = once.token;
    limitedToken = limited.token;
  });
  seeded = { tenant, onceToken, limitedToken };
  const env = { DATABASE_URL: database.url, RATE_LIMIT_PER_SECOND: '0' };
  [first, second, workers] = await Promise.all([
    servers.start(env),
    servers.start(env),
    servers.start({ ...env, WORKERS: '2' }),
  ]);
  store = openStore(database.url);
});

afterAll(async () => {
  agent.destroy();
  await store?.close();
  await servers.killAll();
  await database?.drop();
});

/** Sends `count` requests at once, alternating between `targets`. */
const burstOf = (targets: ServerProcess[], count: number, request: (i: number) => { path: string; body: unknown }) =>
  burst(targets, count, seeded.tenant.apiKey, request, { agent });

async function newCustomer(email: string, points = 0): Promise<number> {
  const reply = await sendJson(first.url, 'POST', '/v1/activities', seeded.tenant.apiKey, {
    activity: { token: seeded.onceToken, customer_email: email, distinct_id: `seed-${email}` },
  });
  expect(reply.status, reply.body).toBe(201);
  const id = reply.json.activity.customer_id as number;
  if (points > 10) {
    const topUp = await sendJson(first.url, 'POST', '/v1/points_transactions', seeded.tenant.apiKey, {
      points_transaction: { customer_id: id, points_change: points - 10 },
    });
    expect(topUp.status, topUp.body).toBe(201);
  }
  return id;
}

async function creditsOf(id: number): Promise<number[]> {
  const rows = await store.kysely
    .selectFrom('points_transactions')
    .select('points_change')
    .where('customer_id', '=', id)
    .orderBy('id')
    .execute();
  return rows.map((r) => Number(r.points_change));
}

describe.each([
  { name: 'one server process', targets: () => [first], tag: 'one' },
  { name: 'two server processes sharing the database', targets: () => [first, second], tag: 'two' },
  { name: 'one server with WORKERS=2', targets: () => [workers], tag: 'workers' },
])(`the ledger under ${PARALLEL} parallel requests (${testEngine}): $name`, ({ targets, tag }) => {
  it('100 activities with one distinct_id: one activity, credited once, 99 answers of it', async () => {
    const customer = await newCustomer(`same-${tag}@example.com`);
    const replies = await burstOf(targets(), PARALLEL, () => ({
      path: '/v1/activities',
      body: { activity: { token: seeded.onceToken, customer_id: customer, distinct_id: `order-${tag}` } },
    }));
    expect(tally(replies, (r) => r.status)).toEqual({ 200: PARALLEL - 1, 201: 1 });
    expect(new Set(replies.map((r) => r.json.activity.id)).size).toBe(1);
    // Every answer shows the one credit.
    expect(new Set(replies.map((r) => JSON.stringify(r.json.activity.points_transactions))).size).toBe(1);
    const { rows } = await sql<{ n: number }>`
      select count(*) as n from activities where account_id = ${seeded.tenant.accountId} and distinct_id = ${`order-${tag}`}`.execute(
      store.kysely,
    );
    expect(Number(rows[0]!.n)).toBe(1);
    expect(await creditsOf(customer)).toEqual([10, 10]); // the seeding activity's, and this one's
    expect(await balanceOf(store, customer)).toBe(20);
  });

  it('100 activities of one customer on a rule with max 3: exactly 3 credits', async () => {
    const customer = await newCustomer(`limited-${tag}@example.com`);
    const replies = await burstOf(targets(), PARALLEL, () => ({
      path: '/v1/activities',
      body: { activity: { token: seeded.limitedToken, customer_id: customer } },
    }));
    expect(tally(replies, (r) => r.status)).toEqual({ 201: PARALLEL });
    const credited = replies.filter((r) => r.json.activity.points_transactions.length > 0);
    expect(credited).toHaveLength(3);
    expect(await creditsOf(customer)).toEqual([10, 5, 5, 5]);
    expect(await balanceOf(store, customer)).toBe(25);
  });

  it('100 deductions that together exceed the balance: never below 0, equal to the ledger', async () => {
    const customer = await newCustomer(`spender-${tag}@example.com`, 1000);
    const replies = await burstOf(targets(), PARALLEL, () => ({
      path: '/v1/points_transactions',
      body: { points_transaction: { customer_id: customer, points_change: -15 } },
    }));
    // 1000 points pay for 66 deductions of 15 (990); the other 34 find too little.
    expect(tally(replies, (r) => r.status)).toEqual({ 201: 66, 422: 34 });
    for (const reply of replies.filter((r) => r.status === 422))
      expect(reply.json.error.code).toBe('insufficient_points');
    expect(await balanceOf(store, customer)).toBe(10);
    expect(await unbalancedCustomers(store.kysely)).toEqual([]);
  });
});

it('the database itself refuses a balance below 0 and a changed transaction', async () => {
  const customer = await newCustomer('direct@example.com');
  const now = Date.now();
  const row = {
    account_id: seeded.tenant.accountId,
    customer_id: customer,
    points_change: -11,
    description: 'bypassing the service',
    occurred_at: now,
    created_at: now,
    updated_at: now,
  };
  await expect(store.kysely.insertInto('points_transactions').values(row).execute()).rejects.toThrow(
    /check|constraint/i,
  );
  await store.kysely
    .insertInto('points_transactions')
    .values({ ...row, points_change: -4 })
    .execute();
  expect(await balanceOf(store, customer)).toBe(6);
  await expect(
    store.kysely
      .updateTable('points_transactions')
      .set({ points_change: 100 })
      .where('customer_id', '=', customer)
      .execute(),
  ).rejects.toThrow(/immutable/);
  expect(await unbalancedCustomers(store.kysely)).toEqual([]);
});
